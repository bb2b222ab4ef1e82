#include "base/process_list.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string_view>
#include <tuple>
#include <utility>

#include "base/scalars.h"
#include "base/text.h"

namespace kdist {
namespace {

// Host names longer than this, or with other characters than these, are
// quoted and cut (they came off the wire and may be anything).
constexpr size_t kMaxRawHostBytes = 64;
constexpr size_t kQuotedHostBytes = 32;

// The budget arithmetic. A list always shows its first item, so a group needs
// room for the longest first item of each list and its " and N more":
//   a quoted host: Quote of 32 bytes, each at most 4 ("\xNN"), 2 quotes, "..."
//   a numbered host: prefix and suffix (under 64 bytes) "[" lo "-" hi "]"
//   an id run: two 19-digit ids and "-"
constexpr size_t kMaxCountDigits = 20;                             // a size_t
constexpr size_t kMaxListTail = 5 + kMaxCountDigits + 5;           // " and N more"
constexpr size_t kMaxQuotedHost = 4 * kQuotedHostBytes + 2 + 3;    // 133
constexpr size_t kMaxNumberedHost = kMaxRawHostBytes + 2 + 2 * kMaxDigits + 1;
constexpr size_t kMaxIdRun = 19 + 1 + 19;
constexpr size_t kMaxFirstItem = std::max({kMaxQuotedHost, kMaxNumberedHost, kMaxIdRun});
// "processes " ... " on hosts " ..., each list given at least half the rest.
constexpr size_t kMinGroupChars = 10 + 10 + 2 * (kMaxFirstItem + kMaxListTail);
constexpr size_t kMaxGroupsTail = 10 + kMaxCountDigits + 15;     // "; ... and N more processes"
static_assert(kMinGroupChars + kMaxGroupsTail <= kMinProcessListChars,
              "the smallest cap must hold one group and the closing count");

bool IsRawHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '.' ||
         c == '_' || c == '-';
}

bool IsRawHost(std::string_view host) {
  return !host.empty() && host.size() <= kMaxRawHostBytes &&
         std::all_of(host.begin(), host.end(), IsRawHostChar);
}

std::string ListTail(size_t more) { return " and " + std::to_string(more) + " more"; }

std::string GroupsTail(size_t more) {
  return "; ... and " + std::to_string(more) + " more processes";
}

std::string Padded(uint64_t value, size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

// One item of a list: an id run ("0-3") or a host entry's range ("064-127"),
// with the number of ids or hosts it stands for.
struct Item {
  std::string text;
  size_t count = 0;
};

// The longest rendering render(k), k in [1, n], that fits in `budget` (the
// whole list when it fits); render(1) when nothing fits, so a list always
// shows its first item. render(k) grows with k below n (each item adds more
// than the shrinking " and N more" saves), so a binary search finds it.
template <typename Render>
std::string Fit(size_t n, size_t budget, const Render& render) {
  if (n == 0) return "";
  std::string whole = render(n);
  if (whole.size() <= budget || n == 1) return whole;
  std::string best = render(1);
  if (best.size() > budget) return best;
  size_t lo = 1, hi = n - 1;  // render(lo) fits
  while (lo < hi) {
    const size_t mid = lo + (hi - lo + 1) / 2;
    std::string text = render(mid);
    if (text.size() <= budget) {
      lo = mid;
      best = std::move(text);
    } else {
      hi = mid - 1;
    }
  }
  return best;
}

// --- ids ---

class IdList {
 public:
  // `ids` distinct and ascending.
  explicit IdList(const std::vector<int64_t>& ids) : total_(ids.size()) {
    size_t i = 0;
    while (i < ids.size()) {
      size_t j = i;
      if (ids[i] >= 0) {
        while (j + 1 < ids.size() && ids[j] != std::numeric_limits<int64_t>::max() &&
               ids[j + 1] == ids[j] + 1) {
          ++j;
        }
      }
      std::string text = std::to_string(ids[i]);
      if (j > i) text += "-" + std::to_string(ids[j]);
      runs_.push_back({std::move(text), j - i + 1});
      i = j + 1;
    }
  }

  std::string Render(size_t k) const {
    std::string out;
    size_t shown = 0;
    for (size_t i = 0; i < k; ++i) {
      if (i > 0) out += ", ";
      out += runs_[i].text;
      shown += runs_[i].count;
    }
    if (k < runs_.size()) out += ListTail(total_ - shown);
    return out;
  }

  std::string Format(size_t budget) const {
    return Fit(runs_.size(), budget, [this](size_t k) { return Render(k); });
  }

 private:
  size_t total_;
  std::vector<Item> runs_;
};

// --- hosts ---

class HostList {
 public:
  // `hosts` distinct.
  explicit HostList(const std::vector<std::string>& hosts) : total_(hosts.size()) {
    // Names that differ only in their last run of digits (at most kMaxDigits
    // of them, so that Slurm's parser reads it) share a family.
    std::map<std::pair<std::string, std::string>, std::vector<std::string>> families;
    for (const std::string& host : hosts) {
      if (!IsRawHost(host)) {
        entries_.push_back(Literal(Quote(host, kQuotedHostBytes), /*quoted=*/true, host));
        continue;
      }
      size_t end = host.size();
      while (end > 0 && !IsDigit(host[end - 1])) --end;
      size_t start = end;
      while (start > 0 && IsDigit(host[start - 1])) --start;
      if (end == 0 || end - start > kMaxDigits) {
        entries_.push_back(Literal(host, /*quoted=*/false, host));
        continue;
      }
      families[{host.substr(0, start), host.substr(end)}].push_back(
          host.substr(start, end - start));
    }
    for (auto& [key, numbers] : families) {
      const auto& [prefix, suffix] = key;
      if (numbers.size() == 1) {
        const std::string name = prefix + numbers[0] + suffix;
        entries_.push_back(Literal(name, /*quoted=*/false, name));
      } else {
        Entry family;
        family.family = true;
        family.key = family.prefix = prefix;
        family.key2 = family.suffix = suffix;
        family.items = Ranges(std::move(numbers));
        entries_.push_back(std::move(family));
      }
    }
    std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
      return std::tie(a.quoted, a.key, a.key2) < std::tie(b.quoted, b.key, b.key2);
    });
    for (const Entry& entry : entries_) units_ += entry.items.size();
  }

  // The first `k` items of the entries in order, then how many hosts are left.
  std::string Render(size_t k) const {
    std::string out;
    size_t shown = 0;
    size_t used = 0;
    for (const Entry& entry : entries_) {
      if (used == k) break;
      if (!out.empty()) out += ",";
      if (!entry.family) {
        out += entry.items[0].text;
        shown += 1;
        ++used;
        continue;
      }
      out += entry.prefix + "[";
      for (size_t i = 0; i < entry.items.size() && used < k; ++i, ++used) {
        if (i > 0) out += ",";
        out += entry.items[i].text;
        shown += entry.items[i].count;
      }
      out += "]" + entry.suffix;
    }
    if (k < units_) out += ListTail(total_ - shown);
    return out;
  }

  std::string Format(size_t budget) const {
    return Fit(units_, budget, [this](size_t k) { return Render(k); });
  }

 private:
  // A name alone, or a family of two or more: prefix "[" ranges "]" suffix.
  struct Entry {
    bool family = false;
    bool quoted = false;     // sorts quoted names last
    std::string key, key2;   // sort keys: the name, or a family's prefix and suffix
    std::string prefix, suffix;
    std::vector<Item> items;  // a family's ranges, or the name alone
  };

  static Entry Literal(std::string text, bool quoted, const std::string& name) {
    Entry entry;
    entry.quoted = quoted;
    entry.key = name;
    entry.items.push_back({std::move(text), 1});
    return entry;
  }

  // A family's numbers (distinct digit strings) as ranges in Slurm's sense:
  // "lo-hi" stands for lo..hi each padded to lo's width, so a range grows only
  // by the next number written at that width ("09" continues with "10",
  // "9" with "10", "099" with "100", but "9" never with "010").
  static std::vector<Item> Ranges(std::vector<std::string> numbers) {
    struct Number {
      uint64_t value;
      std::string text;
    };
    std::vector<Number> sorted;
    for (std::string& text : numbers) {
      const Result<uint64_t> value = ParseDigits(text);
      sorted.push_back({value.ok() ? *value : 0, std::move(text)});
    }
    std::sort(sorted.begin(), sorted.end(), [](const Number& a, const Number& b) {
      return a.value != b.value ? a.value < b.value : a.text.size() < b.text.size();
    });
    struct Range {
      uint64_t lo, hi;
      size_t width;
      size_t count;
    };
    std::vector<Range> ranges;
    std::map<std::string, size_t> continues;  // the text that extends a range -> that range
    constexpr uint64_t kLargest = 999'999'999'999'999'999;  // kMaxDigits nines
    for (const Number& number : sorted) {
      size_t r;
      const auto it = continues.find(number.text);
      if (it != continues.end()) {
        r = it->second;
        continues.erase(it);
        ranges[r].hi = number.value;
        ++ranges[r].count;
      } else {
        r = ranges.size();
        ranges.push_back({number.value, number.value, number.text.size(), 1});
      }
      if (number.value < kLargest) {
        continues[Padded(number.value + 1, ranges[r].width)] = r;
      }
    }
    std::vector<Item> items;
    for (const Range& range : ranges) {
      std::string text = Padded(range.lo, range.width);
      if (range.hi != range.lo) text += "-" + Padded(range.hi, range.width);
      items.push_back({std::move(text), range.count});
    }
    return items;
  }

  size_t total_;
  size_t units_ = 0;
  std::vector<Entry> entries_;
};

// --- groups ---

struct Group {
  std::vector<int64_t> ids;        // distinct, ascending
  std::vector<std::string> hosts;  // distinct, sorted; none: host unknown
  size_t processes = 0;            // (id, host) pairs
};

// One run of consecutive non-negative ids on one host: may continue a chain.
bool IsChainable(const Group& group) {
  return group.hosts.size() == 1 && group.ids.front() >= 0 &&
         static_cast<uint64_t>(group.ids.back() - group.ids.front()) + 1 == group.ids.size();
}

std::vector<int64_t> SortedUnique(std::vector<int64_t> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::vector<Group> MakeGroups(std::vector<ProcessHost> processes) {
  std::sort(processes.begin(), processes.end(), [](const ProcessHost& a, const ProcessHost& b) {
    return std::tie(a.id, a.host) < std::tie(b.id, b.host);
  });
  processes.erase(std::unique(processes.begin(), processes.end(),
                              [](const ProcessHost& a, const ProcessHost& b) {
                                return a.id == b.id && a.host == b.host;
                              }),
                  processes.end());

  Group unknown;
  std::map<std::string, std::vector<int64_t>> by_host;  // ids ascending
  for (const ProcessHost& process : processes) {
    if (process.host.empty()) {
      unknown.ids.push_back(process.id);
      ++unknown.processes;
    } else {
      by_host[process.host].push_back(process.id);
    }
  }

  // Hosts holding the same ids share a group.
  std::map<std::vector<int64_t>, std::vector<std::string>> by_ids;
  for (auto& [host, ids] : by_host) by_ids[ids].push_back(host);
  std::vector<Group> units;
  for (auto& [ids, hosts] : by_ids) units.push_back({ids, hosts, ids.size() * hosts.size()});
  std::sort(units.begin(), units.end(), [](const Group& a, const Group& b) {
    return std::tie(a.ids.front(), a.hosts.front()) < std::tie(b.ids.front(), b.hosts.front());
  });

  // Hosts whose runs of ids continue one another share a group: a chain is
  // one run of ids, each host holding one piece of it.
  std::vector<Group> known;
  bool last_is_chain = false;
  for (Group& unit : units) {
    const bool chainable = IsChainable(unit);
    if (last_is_chain && chainable &&
        known.back().ids.back() != std::numeric_limits<int64_t>::max() &&
        unit.ids.front() == known.back().ids.back() + 1) {
      Group& chain = known.back();
      chain.ids.insert(chain.ids.end(), unit.ids.begin(), unit.ids.end());
      chain.hosts.push_back(std::move(unit.hosts.front()));
      chain.processes += unit.processes;
      continue;
    }
    known.push_back(std::move(unit));
    last_is_chain = chainable;
  }

  if (known.size() > kMaxProcessListHostGroups) {
    Group all;
    for (Group& group : known) {
      all.ids.insert(all.ids.end(), group.ids.begin(), group.ids.end());
      all.hosts.insert(all.hosts.end(), group.hosts.begin(), group.hosts.end());
      all.processes += group.processes;
    }
    all.ids = SortedUnique(std::move(all.ids));
    known.clear();
    known.push_back(std::move(all));
  }
  for (Group& group : known) std::sort(group.hosts.begin(), group.hosts.end());

  std::vector<Group> groups = std::move(known);
  if (!unknown.ids.empty()) {
    unknown.ids = SortedUnique(std::move(unknown.ids));
    groups.push_back(std::move(unknown));
  }
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
    return a.ids.front() < b.ids.front();  // known before unknown on a tie (stable)
  });
  return groups;
}

// One group in at most `budget` bytes when budget >= kMinGroupChars.
std::string RenderGroup(const Group& group, size_t budget) {
  const std::string head = group.ids.size() == 1 ? "process " : "processes ";
  const bool unknown = group.hosts.empty();
  const std::string where = unknown                  ? " (host unknown)"
                            : group.hosts.size() == 1 ? " on host "
                                                      : " on hosts ";
  const IdList ids(group.ids);
  const HostList hosts(group.hosts);
  const std::string all_ids = ids.Format(std::numeric_limits<size_t>::max());
  const std::string all_hosts = unknown ? "" : hosts.Format(std::numeric_limits<size_t>::max());
  const size_t fixed = head.size() + where.size();
  if (fixed + all_ids.size() + all_hosts.size() <= budget) {
    return head + all_ids + where + all_hosts;
  }
  // Each list gets at least half of what is left; one that needs less leaves
  // the rest to the other.
  const size_t room = budget > fixed ? budget - fixed : 0;
  const size_t id_budget = all_hosts.size() <= room / 2 ? room - all_hosts.size() : room / 2;
  const std::string id_text = ids.Format(id_budget);
  if (unknown) return head + id_text + where;
  const size_t host_budget = room > id_text.size() ? room - id_text.size() : 0;
  return head + id_text + where + hosts.Format(host_budget);
}

}  // namespace

std::string FormatIdList(const std::vector<int64_t>& ids, size_t max_chars) {
  return IdList(SortedUnique(ids)).Format(std::max(max_chars, kMinProcessListChars));
}

std::string FormatHostList(const std::vector<std::string>& hosts, size_t max_chars) {
  std::vector<std::string> unique = hosts;
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  return HostList(unique).Format(std::max(max_chars, kMinProcessListChars));
}

std::string FormatProcessList(const std::vector<ProcessHost>& processes, size_t max_chars) {
  max_chars = std::max(max_chars, kMinProcessListChars);
  const std::vector<Group> groups = MakeGroups(processes);
  if (groups.empty()) return "no processes";
  // after[i]: the processes in groups i and later.
  std::vector<size_t> after(groups.size() + 1, 0);
  for (size_t i = groups.size(); i-- > 0;) after[i] = after[i + 1] + groups[i].processes;

  std::string out;
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::string separator = out.empty() ? "" : "; ";
    const size_t reserve = after[i + 1] > 0 ? GroupsTail(after[i + 1]).size() : 0;
    const size_t used = out.size() + separator.size() + reserve;
    const size_t budget = max_chars > used ? max_chars - used : 0;
    const std::string whole = RenderGroup(groups[i], std::numeric_limits<size_t>::max());
    if (whole.size() <= budget) {
      out += separator + whole;
      continue;
    }
    if (budget >= kMinGroupChars) {
      out += separator + RenderGroup(groups[i], budget);
      if (after[i + 1] > 0) out += GroupsTail(after[i + 1]);
      return out;
    }
    // No room for this group: count it and the rest. The previous group
    // reserved room for exactly this.
    return out + GroupsTail(after[i]);
  }
  return out;
}

}  // namespace kdist
