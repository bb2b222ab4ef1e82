// Process 0's side of the roll call: listen on the coordinator port, collect
// a hello from every other process, decide (roll_call/roll_call.h), tell every process
// the verdict, wait (bounded) for the others to close their connections
// first, and give the port back before JAX binds it.
//
// One thread, one poll loop; every wait is bounded by the deadline, the
// per-connection hello deadline or the close grace, and the interrupt hook
// is asked at least every check_interval.
#ifndef KDIST_ROLL_CALL_COORDINATOR_H_
#define KDIST_ROLL_CALL_COORDINATOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "net/socket.h"
#include "roll_call/coordinator_port.h"  // BindCoordinatorPort
#include "roll_call/roll_call_options.h"
#include "roll_call/roll_call_wire.h"

namespace kdist {

struct RollCallSummary {
  std::vector<Hello> members;  // every process but 0, by id
  int64_t dropped = 0;         // connections that did not speak the protocol
  Nanos elapsed{0};
  std::string listened_on;     // "[::]:5000"
  std::string consistency_notes;  // the environment differences let pass (also sent in "go")
};

// Runs the roll call on a bound listener, which is closed before the
// verdict is sent. `own` is process 0's hello; `shared` is what "go" carries.
//   ok: every process is present and was told "go".
//   kFailedPrecondition: the processes disagree (told to every connected one).
//   kDeadlineExceeded: the deadline passed; names who joined and who is missing.
//   kInternal: out of file descriptors or another system failure.
//   the interrupt hook's status, when it stopped the roll call.
Result<RollCallSummary> RunCoordinatorOn(Listener listener, const Hello& own,
                                         const JobShared& shared,
                                         const RollCallOptions& options, Clock& clock);

// BindCoordinatorPort, then RunCoordinatorOn.
Result<RollCallSummary> RunCoordinator(const Hello& own, const JobShared& shared, uint16_t port,
                                       const RollCallOptions& options, Clock& clock);

}  // namespace kdist

#endif  // KDIST_ROLL_CALL_COORDINATOR_H_
