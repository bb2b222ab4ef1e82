// One liveness connection, as both of its ends handle it (process 0's hub,
// liveness/liveness_hub.h, and another process's spoke, liveness/liveness_spoke.h): how long
// each step may wait and how the connection is kept alive (LivenessOptions),
// TCP keepalive on the socket, a send bounded in time, reading the frames that
// have arrived, and the handler that gets the notices.
//
// A host that vanishes (no FIN, no RST: it lost power or its network) is
// caught by TCP keepalive and TCP_USER_TIMEOUT, sized from the unreachable
// timeout: the kernel ends the connection with ETIMEDOUT. A process that dies
// closes its socket (EOF, or a reset). ReadFrames says which it saw; what it
// means is the book's (ClassifyConnectionEnd, liveness/liveness_book.h).
#ifndef KDIST_LIVENESS_LIVENESS_CONNECTION_H_
#define KDIST_LIVENESS_LIVENESS_CONNECTION_H_

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/status.h"
#include "base/wire.h"
#include "liveness/liveness_book.h"
#include "liveness/liveness_wire.h"
#include "net/keepalive.h"

namespace kdist {

struct LivenessOptions {
  // How long process 0 waits for a connection's join, a joining process for
  // the connection and its admission, and a send for room in the socket.
  Nanos join_timeout = std::chrono::seconds(5);
  Nanos send_timeout = std::chrono::seconds(2);
  // How long a peer's host may answer nothing before the connection ends
  // (KDIST_UNREACHABLE_TIMEOUT), and the TCP keepalive sized from it (net/keepalive.h).
  Keepalive keepalive;
};

// What an end does with a notice, called on its channel's thread. A spoke's
// gets every notice from process 0 (and a synthesized kDied or kUnreachable for
// process 0 when its connection ends before kAllDone); the hub's gets each notice its
// thread sends the other processes (what process 0's own ReportFailure and
// Finish send is not handed back).
using NoticeHandler = std::function<void(const LiveNotice&)>;

// The options of a channel whose peers' hosts are lost after `unreachable_timeout`
// of silence: the keepalive sized from it (KeepaliveFor), the other waits as default.
LivenessOptions LivenessOptionsFor(Nanos unreachable_timeout);

// How the connection on `fd` ended (ReadFrames' `error`), now, with the window and when its
// peer was last heard from.
ConnectionEnd EndOf(int fd, int error, const LivenessOptions& options);

// Writes all of `bytes` to the non-blocking socket `fd`, waiting for room at
// most `bound` in all. kUnavailable when the send fails, kDeadlineExceeded
// when the peer reads nothing within the bound, kInternal when poll fails.
Status SendAll(int fd, std::string_view bytes, Nanos bound, Clock& clock);

// Reads what has arrived on the non-blocking socket `fd` (a bounded number of
// reads) into `in`, and hands each whole frame to `on_frame`, which returns
// whether to go on. false: EOF, a read error, bytes that are not kdist's, or
// `on_frame` said stop; `error` (when given) then gets the read's errno
// (ETIMEDOUT when the kernel gave the peer's host up), 0 for the others.
bool ReadFrames(int fd, FrameAssembler& in,
                const std::function<bool(const std::string&)>& on_frame,
                int* error = nullptr);

}  // namespace kdist

#endif  // KDIST_LIVENESS_LIVENESS_CONNECTION_H_
