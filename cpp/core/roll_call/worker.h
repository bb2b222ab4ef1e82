// The side of the roll call every process but 0 runs: resolve the
// coordinator, connect with capped, jittered backoff until the deadline, send
// the hello, wait for process 0's verdict; after "go", wait until process 0's
// JAX coordination service accepts TCP connections, so JAX's own client
// connects at its first try instead of sleeping in its one-second retry.
#ifndef KDIST_ROLL_CALL_WORKER_H_
#define KDIST_ROLL_CALL_WORKER_H_

#include <cstdint>
#include <string>

#include "base/clock.h"
#include "base/status.h"
#include "net/address.h"
#include "net/socket.h"
#include "roll_call/roll_call_options.h"
#include "roll_call/roll_call_wire.h"

namespace kdist {

struct WorkerResult {
  Reply go;                 // process 0's host, pid and JAX version
  int64_t attempts = 0;     // connection attempts, the successful one included
  Nanos elapsed{0};
  Endpoint connected_to;    // the address that answered
};

// ok: process 0 said "go".
// kUnavailable: the coordinator could not be reached before the deadline
//   (names host:port, attempts, the last error and the time spent).
// kDeadlineExceeded: connected, but no verdict before the deadline.
// process 0's code (kFailedPrecondition, kDeadlineExceeded, ...) when it
//   refused this process or ended the roll call, with its message.
// kFailedPrecondition: something that does not speak the roll call answers
//   on the coordinator port (e.g. process 0 runs without the roll call).
// the interrupt hook's status, when it stopped the wait.
Result<WorkerResult> RunWorker(const Hello& own, const Address& coordinator,
                               const RollCallOptions& options, Clock& clock);

// Connects to `endpoint` every probe_interval until it accepts (then closes
// at once) or the deadline passes (kDeadlineExceeded, with the last error).
// kInternal when poll fails; the interrupt hook's status when it stops the wait.
Status WaitForCoordinatorService(const Endpoint& endpoint, const RollCallOptions& options,
                                 Clock& clock);

// Where process 0's liveness hub listens, as "go" told this process: the address that
// answered the roll call, on the port "go" announced (the wire refuses one out of range).
// kFailedPrecondition when "go" announced none (process 0 could not listen): this process
// then runs on JAX's heartbeat alone.
Result<Endpoint> LivenessHubEndpoint(const WorkerResult& result);

}  // namespace kdist

#endif  // KDIST_ROLL_CALL_WORKER_H_
