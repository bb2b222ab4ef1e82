// Lists of processes and their hosts, short enough to read in a failure
// message at 16,384 processes.
//
// Every roll-call message that names processes (missing, duplicate,
// mismatched) names their hosts too:
//
//   FormatProcessList({{3, "node-1"}})
//     process 3 on host node-1
//   FormatProcessList(16,384 processes, ids 8h..8h+7 on node-0000 .. node-2047)
//     processes 0-16383 on hosts node-[0000-2047]
//   FormatProcessList({0-1023 on node-000 .. node-127, 1024-2047 with no host})
//     processes 0-1023 on hosts node-[000-127]; processes 1024-2047 (host unknown)
//   FormatProcessList({{5, "node-1"}, {5, "node-2"}, {9, "gpu7"}})
//     process 5 on hosts node-[1-2]; process 9 on host gpu7
//
// The grammar (ASCII only; N is a decimal count):
//
//   text      := "no processes"
//              | group *( "; " group ) [ "; ... and " N " more processes" ]
//   group     := ( "process " id | "processes " ids ) " " where
//   where     := "on host " host | "on hosts " hosts | "(host unknown)"
//   ids       := run *( ", " run ) [ " and " N " more" ]
//   run       := id | id "-" id            (a range, both ends included)
//   id        := ["-"] digits              (a negative id never starts a range)
//   hosts     := entry *( "," entry ) [ " and " N " more" ]
//   entry     := name | prefix "[" item *( "," item ) "]" suffix | quoted
//   item      := digits | digits "-" digits
//
// Ids run in ascending order, ranges of two or more consecutive ids shortened
// ("0-3, 8, 10-11"), with a plain hyphen as in Slurm's brackets; a negative id
// (which only a malformed hello can carry) is always written alone ("-1, 0-3").
//
// Host lists are Slurm's host-list syntax, which ExpandHostList
// (slurm_hostlist.h) reads back to the same set of names: names that differ
// only in their last run of digits share one entry, and a range keeps the
// zero padding of its lower end as Slurm does ("node-[064-127]"; "node-9" and
// "node-10" give "node-[9-10]", "node-09" and "node-10" give "node-[09-10]").
// Names made only of letters, digits, '.', '_' and '-' and at most 64 bytes
// long are printed as they are; any other name (it came off the wire) is
// printed with Quote, cut to 32 bytes, and stands alone: `"bad host"`. Entries
// are sorted by name, quoted ones last.
//
// Groups. Processes without a host (host "") form one group, "(host
// unknown)". Processes with a host are grouped host by host, then
//   - hosts holding exactly the same ids share a group ("process 5 on hosts
//     node-[1-2]": two processes claimed id 5), and
//   - hosts that each hold one run of ids, each run continuing the last,
//     share a group (8 processes per host, in order: one group);
// and when that leaves more than kMaxProcessListHostGroups groups, all
// processes with a host form one group instead. Groups are ordered by their
// lowest id. Identical (id, host) pairs count once.
//
// Bounded: the text is at most `max_chars` bytes whatever the input (a cap
// below kMinProcessListChars is raised to it). What does not fit is counted,
// never dropped silently: a list that is cut ends in " and N more" (N ids or
// N hosts), and groups that do not fit end the text with "; ... and N more
// processes" (N (id, host) pairs).
#ifndef KDIST_BASE_PROCESS_LIST_H_
#define KDIST_BASE_PROCESS_LIST_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kdist {

// One process as a roll-call message names it.
struct ProcessHost {
  int64_t id = 0;
  std::string host;  // "" when unknown (e.g. a process that never arrived)
};

// The smallest cap the formatters accept (a smaller one is raised to it): room
// for one group with the first id and the first host of each list.
inline constexpr size_t kMinProcessListChars = 400;
inline constexpr size_t kDefaultProcessListChars = 600;
// The most groups of processes with a host before they merge into one.
inline constexpr size_t kMaxProcessListHostGroups = 8;

// The processes as text, in the grammar above.
std::string FormatProcessList(const std::vector<ProcessHost>& processes,
                              size_t max_chars = kDefaultProcessListChars);

// The `ids` part alone: distinct ids, ascending, runs shortened: {11, 0, 1, 2,
// 3, 8, 10, 3} gives "0-3, 8, 10-11"; "" for none.
std::string FormatIdList(const std::vector<int64_t>& ids,
                         size_t max_chars = kDefaultProcessListChars);

// The `hosts` part alone: distinct names in Slurm's host-list syntax:
// {"node-2", "node-0", "node-3", "login"} gives "login,node-[0,2-3]"; "" for
// none. An empty name is not a host: it is printed quoted ("").
std::string FormatHostList(const std::vector<std::string>& hosts,
                           size_t max_chars = kDefaultProcessListChars);

}  // namespace kdist

#endif  // KDIST_BASE_PROCESS_LIST_H_
