// Process 0's coordinator port, apart from the roll call held on it: bound as JAX will
// bind it (BindCoordinatorPort), and given back cleanly once the roll call said "go"
// (CloseInBackground: the workers close first, so no TIME_WAIT stays on the port); the
// connections' own small rules (a peer gone, running out of file descriptors).
#ifndef KDIST_ROLL_CALL_COORDINATOR_PORT_H_
#define KDIST_ROLL_CALL_COORDINATOR_PORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/clock.h"
#include "base/status.h"
#include "net/event_poller.h"
#include "net/socket.h"
#include "roll_call/roll_call_options.h"

namespace kdist {

// Binds the coordinator port as JAX will (listener on every interface,
// SO_REUSEADDR, never SO_REUSEPORT), or only `bind_at` when set (JAX's
// coordinator_bind_address; its port is then the one bound). A taken port
// is kAlreadyExists naming the port and, where /proc allows, the pid and
// command holding it.
Result<Listener> BindCoordinatorPort(uint16_t port, const RollCallOptions& options,
                                     Clock& clock,
                                     const std::optional<Endpoint>& bind_at = std::nullopt);

// A connection that got its verdict: the rest of its frame to write, then its
// close, which the worker does first (so that no TIME_WAIT stays on process
// 0's side of the coordinator port).
struct Closing {
  Fd fd;
  std::string out;
  size_t sent = 0;
};

// After "go", on a thread of its own: finishes writing every verdict and waits
// (at most `grace`) for the workers to close, then resets the rest. Process 0
// goes on to start JAX's service meanwhile: its bind does not conflict with
// these connections, and a member that was slow to read "go" no longer delays
// every other process's start. Owns everything it touches; nothing calls back
// into the caller (no progress, no interrupt hook), not even its clock: the
// thread outlives the roll call, so it reads a RealClock of its own.
void CloseInBackground(EventPoller poller, std::unordered_map<uint64_t, Closing> open,
                       Nanos grace);

// Whether the peer of a connection has gone (EOF or reset), without
// consuming anything it sent.
bool PeerGone(int fd);

// Why a connection's bytes are not the roll call's (`why`, the frame reader's words), and
// what the sender likely is: a gRPC client (HTTP/2's preface) is a process that starts JAX
// without the roll call.
std::string WhyNotKdist(std::string_view why, std::string_view received);

// The failure when process 0 ran out of file descriptors with this many connections open:
// the limit, and how to raise it.
std::string NoFilesMessage(size_t open_connections);

}  // namespace kdist

#endif  // KDIST_ROLL_CALL_COORDINATOR_PORT_H_
