// What the two sides of the roll call share: the options and hooks
// the caller passes in, the hello built from a resolved ClusterSpec, and the
// Waiter that turns one Deadline (deadline.h) into bounded waits with progress
// lines and interrupt checks.
//
// Process 0 runs RunCoordinator (coordinator.h); every other process runs
// RunWorker and then WaitForCoordinatorService (worker.h).
#ifndef KDIST_ROLL_CALL_OPTIONS_H_
#define KDIST_ROLL_CALL_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backoff.h"
#include "clock.h"
#include "cluster_spec.h"
#include "consistency.h"
#include "deadline.h"
#include "roll_call_wire.h"
#include "status.h"

namespace kdist {

// Who this process is, as the caller knows it (Python reads these).
struct Identity {
  std::string jax_version;
  std::string host;
  int64_t pid = 0;
};

struct RollCallOptions {
  // The deadline of the whole start, made when initialize() began, on the
  // time base of the Clock the call is given. Messages and progress lines
  // count from its start ("12 s of 300 s"). A default Deadline has no budget:
  // set one.
  Deadline deadline;
  // A progress line every `progress_interval` while waiting, on whole
  // intervals counted from the start of initialize(). The Waiter reads this
  // and check_interval as at least kMinWaiterInterval.
  Nanos progress_interval = std::chrono::seconds(5);
  std::function<void(const std::string&)> progress;  // may be empty
  // Asked at least every `check_interval` while waiting; a non-ok Status
  // stops the roll call at once (sockets closed) and is returned as is. The
  // Python binding uses it for Ctrl-C.
  Nanos check_interval = std::chrono::milliseconds(100);
  std::function<Status()> interrupted;  // may be empty

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

  // This process's environment fingerprint (consistency.h): every process
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

// Process 0's listen backlog for a job of `num_processes`: room for every other
// process to be waiting at once (the kernel caps it at net.core.somaxconn).
int ListenBacklog(int64_t num_processes);

// The shortest progress and check interval a Waiter uses: a smaller (or zero,
// or negative) setting would turn waits into busy loops.
inline constexpr Nanos kMinWaiterInterval = std::chrono::milliseconds(1);

// The options' deadline, cut into bounded waits. Not thread-safe; one per call.
class Waiter {
 public:
  Waiter(Clock& clock, const RollCallOptions& options);

  Clock& clock() { return clock_; }
  const Deadline& deadline() const { return options_.deadline; }
  Nanos Elapsed() const { return options_.deadline.Elapsed(clock_); }
  Nanos Remaining() const { return options_.deadline.Remaining(clock_); }  // 0 once passed
  bool Expired() const { return options_.deadline.Expired(clock_); }
  // "12 s of 300 s".
  std::string Progress() const { return options_.deadline.Progress(clock_); }

  // How long the next blocking call may wait: `want`, shortened to the
  // deadline, to the next interrupt check and to the next progress line.
  Nanos Slice(Nanos want) const;

  // Between waits: asks the interrupt hook (at most every check_interval)
  // and, when due, calls progress with line(). Returns the hook's status.
  Status Check(const std::function<std::string()>& line);

  // Sleeps `duration`, cut at the deadline, in slices with Check() between.
  Status Sleep(Nanos duration, const std::function<std::string()>& line);

 private:
  Nanos ProgressInterval() const;
  Nanos CheckInterval() const;
  // The first progress time on the cadence strictly after `now`.
  Nanos NextProgressAfter(Nanos now) const;

  Clock& clock_;
  const RollCallOptions& options_;
  Nanos next_progress_;
  Nanos next_check_;
};

// Whether `a` equals `b`, in time that depends only on their lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace kdist

#endif  // KDIST_ROLL_CALL_OPTIONS_H_
