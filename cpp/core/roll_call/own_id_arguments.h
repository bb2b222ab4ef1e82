// Whether two processes' command-line arguments differ only by each process's own
// id: `--worker_id=3`, `--rank 3`, `--shard=0003`, `log.3.txt` in process 3 and the
// same with 0 in process 0 are how a job's processes are meant to differ, not a sign
// of another program (JAX's own multi-process test harness starts worker i with
// `--multiprocess_test_worker_id=i`).
//
// The rule. Each process describes its arguments (argv[1:], joined with NUL) by
// their shape and their numbers (kdist/_start/environment_fingerprint.py writes
// this value; the two must agree):
//
//   "sha256:<shape> <code> <code> ..."
//
// where <shape> is the first 16 hex digits of SHA-256 of the arguments with every
// run of decimal digits replaced by "#", and there is one <code> per digit run, in
// order: "=<width>" when the run's number is the process's own id (leading zeros
// allowed: "0003" in process 3 is "=4"), else the first 8 hex digits of SHA-256 of
// the run's text. Two processes' arguments differ only by their own ids when the
// shapes are equal, the runs are as many, and each pair of runs is either the same
// text, or each process's own id. A value without codes ("sha256:<digest>", the
// arguments' own digest: more than 24 digit runs, or none) is compared exactly.
//
// The process's own id in a flag's value, a separate argument, or inside a file
// name is silent; another script, another flag, another value (`--lr=0.1` against
// `--lr=0.2`), or the same number everywhere but one process's own id is a
// difference. A run that happens to be each process's own id while meaning
// something else (process 0 with `--depth=0`, process 1 with `--depth=1`) is taken
// for the id: the rule cannot tell them apart, and says so in docs/configuration.md.
#ifndef KDIST_ROLL_CALL_OWN_ID_ARGUMENTS_H_
#define KDIST_ROLL_CALL_OWN_ID_ARGUMENTS_H_

#include <cstdint>
#include <string_view>

namespace kdist {

// The fingerprint entry the rule applies to.
inline constexpr std::string_view kArgumentsEntry = "arguments";

// Whether `a` (process `a_id`'s arguments value) and `b` (process `b_id`'s) differ
// only where each holds its own process id. False when either value is not of the
// form above (compared exactly by the caller) or they differ anywhere else.
bool DifferOnlyByOwnIds(std::string_view a, int64_t a_id, std::string_view b, int64_t b_id);

}  // namespace kdist

#endif  // KDIST_ROLL_CALL_OWN_ID_ARGUMENTS_H_
