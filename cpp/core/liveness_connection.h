// One liveness connection, as both of its ends handle it (process 0's hub,
// liveness_hub.h, and another process's spoke, liveness_spoke.h): how long
// each step may wait and how the connection is kept alive (LivenessOptions),
// TCP keepalive on the socket, a send bounded in time, reading the frames that
// have arrived, and the handler that gets the notices.
//
// A host that vanishes is caught by TCP keepalive (and TCP_USER_TIMEOUT for a
// notice it never acknowledges); a process that dies closes its socket.
#ifndef KDIST_LIVENESS_CONNECTION_H_
#define KDIST_LIVENESS_CONNECTION_H_

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "clock.h"
#include "liveness_wire.h"
#include "status.h"
#include "wire.h"

namespace kdist {

struct LivenessOptions {
  // How long process 0 waits for a connection's join, a joining process for
  // the connection and its admission, and a send for room in the socket.
  Nanos join_timeout = std::chrono::seconds(5);
  Nanos send_timeout = std::chrono::seconds(2);
  // TCP keepalive (and TCP_USER_TIMEOUT) on every connection: a host that
  // vanishes is noticed after about idle + interval * count.
  Nanos keepalive_idle = std::chrono::seconds(10);
  Nanos keepalive_interval = std::chrono::seconds(5);
  int keepalive_count = 3;
};

// What an end does with a notice, called on its channel's thread. A spoke's
// gets every notice from process 0 (and a synthesized kDied for process 0 when
// its connection closes before kAllDone); the hub's gets each notice its
// thread sends the other processes (what process 0's own ReportFailure and
// Finish send is not handed back).
using NoticeHandler = std::function<void(const LiveNotice&)>;

// Keepalive settings that notice a vanished host within about
// `heartbeat_timeout` (JAX's own bound for the same thing), at least 1 s each.
LivenessOptions LivenessOptionsFor(Nanos heartbeat_timeout);

// Keepalive and TCP_USER_TIMEOUT on a connected socket (best effort), and
// TCP_NODELAY: a notice leaves at once.
void SetKeepalive(int fd, const LivenessOptions& options);

// Writes all of `bytes` to the non-blocking socket `fd`, waiting for room at
// most `bound` in all. kUnavailable when the send fails, kDeadlineExceeded
// when the peer reads nothing within the bound, kInternal when poll fails.
Status SendAll(int fd, std::string_view bytes, Nanos bound, Clock& clock);

// Reads what has arrived on the non-blocking socket `fd` (a bounded number of
// reads) into `in`, and hands each whole frame to `on_frame`, which returns
// whether to go on. false: EOF, a read error, bytes that are not kdist's, or
// `on_frame` said stop.
bool ReadFrames(int fd, FrameAssembler& in,
                const std::function<bool(const std::string&)>& on_frame);

}  // namespace kdist

#endif  // KDIST_LIVENESS_CONNECTION_H_
