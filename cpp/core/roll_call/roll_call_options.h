// What the two sides of the roll call share: the options and hooks the
// caller passes in (over the Waiter's, base/waiter.h) and the hello built from a
// resolved ClusterSpec.
//
// Process 0 runs RunCoordinator (roll_call/coordinator.h); every other process runs
// RunWorker and then WaitForCoordinatorService (roll_call/worker.h).
#ifndef KDIST_ROLL_CALL_ROLL_CALL_OPTIONS_H_
#define KDIST_ROLL_CALL_ROLL_CALL_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/deadline.h"
#include "base/status.h"
#include "base/waiter.h"
#include "config/cluster_spec.h"
#include "net/socket.h"
#include "roll_call/consistency.h"
#include "roll_call/roll_call_wire.h"

namespace kdist {

// Who this process is, as the caller knows it (Python reads these).
struct Identity {
  std::string jax_version;
  std::string host;
  int64_t pid = 0;
};

// The start's wait (WaitOptions: its deadline, progress lines and interrupt
// hook), and what each side of the roll call needs beyond it.
struct RollCallOptions : WaitOptions {
  // Process 0: the per-connection read deadline for a hello, the bound on
  // connections accepted but not yet identified, how long process 0 waits for
  // the others to close their connections first after its verdict.
  Nanos hello_timeout = std::chrono::seconds(5);
  size_t max_pending = 256;
  Nanos close_grace = std::chrono::seconds(2);
  int listen_backlog = 4096;  // the bindings size it to the job (ListenBacklog)

  // Other processes: the retry schedule (short steps, so a process that
  // starts before process 0 notices it soon after; WorkerBackoff() sizes it
  // to the job), its seed, the bound on one connect attempt, and the interval
  // of the probes that wait for JAX's service.
  BackoffPolicy backoff{std::chrono::milliseconds(10), std::chrono::milliseconds(250), 2.0, 0.5};
  uint64_t seed = 0;
  Nanos connect_timeout = std::chrono::seconds(3);
  Nanos probe_interval = std::chrono::milliseconds(10);

  // This process's environment fingerprint (roll_call/consistency.h): every process
  // sends it in its hello; process 0 compares the others' with it under
  // `consistency` (the resolved ClusterSpec::consistency).
  Fingerprint environment;
  ConsistencyPolicy consistency = ConsistencyPolicy::kOff;
  // Process 0: the host of each process id, when the job's addresses name every
  // process, for messages about processes that never arrived.
  std::vector<std::string> process_hosts;
};

// The hello this process sends (or, for process 0, compares against).
Hello MakeHello(const ClusterSpec& spec, const Identity& identity);

// The bound on the whole job's refused connection attempts at process 0's host
// while process 0 is not listening yet, whatever the job's size.
inline constexpr double kMaxRefusedConnectsPerSecond = 20000;

// The retry schedule of a worker in a job of `num_processes`: steps from 1 ms
// up to a cap of 0.25 ms per process, at least 2 ms and at most 1 s. A worker
// that started before process 0 notices it within the cap (2 ms for up to 8
// processes: every millisecond between process 0's arrival and the others'
// next try is time lost after the last arrival). Jitter takes up to half off
// each delay, so at the cap the job makes at most 8,000 attempts a second
// (0.25 ms per process, halved); in jobs of more than 10 processes every
// delay is stretched to at least num_processes / kMaxRefusedConnectsPerSecond
// (halved: 0.82 s at 16,384), so the job's refused attempts stay under that
// rate from the first retry on.
BackoffPolicy WorkerBackoff(int64_t num_processes);

// How often a process probes for process 0's JAX service after "go": every
// 0.25 ms (the service comes up a few milliseconds after "go", and every
// probe interval is time lost after the last arrival), stretched in jobs of
// more than 5 processes so the job's refused probes stay under
// kMaxRefusedConnectsPerSecond.
inline constexpr Nanos kMinServiceProbeInterval = std::chrono::microseconds(250);
Nanos ServiceProbeInterval(int64_t num_processes);


}  // namespace kdist

#endif  // KDIST_ROLL_CALL_ROLL_CALL_OPTIONS_H_
