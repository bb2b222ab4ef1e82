// A load generator for the roll call: thousands of simulated processes in one
// thread, each a real TCP connection to process 0 that sends its hello, reads
// the replies and closes after "go", as kdist's own worker does.
//
// It drives the benchmark of the roll call at 1,024 to 16,384 processes and the
// test suite's 2,048-process correctness test. It must not be the bottleneck:
// one epoll loop, non-blocking connects with a bound on those in flight (so
// the coordinator host's SYN queue never overflows into the kernel's 1 s SYN
// retry), every hello encoded up front, no per-event allocation beyond reads.
//
// Not part of the kdist library: it is linked only into the benchmark
// extension (kdist._core_bench) and the C++ tests.
#ifndef KDIST_LOAD_ROLL_CALL_LOAD_H_
#define KDIST_LOAD_ROLL_CALL_LOAD_H_

#include <cstdint>
#include <string>

#include "base/clock.h"
#include "base/status.h"
#include "net/socket.h"
#include "roll_call/roll_call_wire.h"

namespace kdist {

struct RollCallLoad {
  Endpoint coordinator;  // where process 0 listens
  // Every simulated hello is this one with its own process id, host and pid:
  // processes first_id .. first_id + count - 1, `processes_per_host` per host
  // named "<host_prefix><index>" with the index zero-padded to 4 digits.
  Hello hello;
  int64_t first_id = 1;
  int64_t count = 0;
  int64_t processes_per_host = 8;
  std::string host_prefix = "sim-";
  size_t max_connecting = 256;  // connects and hellos in flight at once
  // A refused connect (process 0 not listening yet) is retried after the delay
  // kdist's worker would wait (WorkerBackoff for the job's size), seeded per
  // process from `seed`.
  uint64_t seed = 1;
  Nanos timeout = std::chrono::seconds(60);
};

struct RollCallLoadReport {
  int64_t went = 0;      // received "go"
  int64_t rejected = 0;  // received a rejection (first one below)
  int64_t failed = 0;    // connection failed or closed without a verdict
  std::string first_rejection;
  std::string first_failure;
  // Connects refused before process 0 listened, all retried, and when the
  // first and the last were refused: their rate is what process 0's host sees
  // from a job whose process 0 starts late.
  int64_t refused_connects = 0;
  Nanos first_refused{0};
  Nanos last_refused{0};
  // From the start of the run: the first connect, the moment every hello was
  // written, and the last verdict read.
  Nanos all_hellos_sent{0};
  Nanos last_verdict{0};
};

// Runs the simulated processes until each has a verdict (or failed) or the
// timeout passes (kDeadlineExceeded, naming how many are still waiting).
Result<RollCallLoadReport> RunRollCallLoad(const RollCallLoad& load, Clock& clock);

}  // namespace kdist

#endif  // KDIST_LOAD_ROLL_CALL_LOAD_H_
