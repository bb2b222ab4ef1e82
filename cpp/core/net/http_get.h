// One HTTP/1.0 GET to a server on the local network (the GCE metadata
// server), within a deadline and a size cap: resolve, connect, send, read to
// the server's close. No keep-alive, no redirects, no TLS, no chunked bodies.
#ifndef KDIST_NET_HTTP_GET_H_
#define KDIST_NET_HTTP_GET_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/waiter.h"
#include "net/address.h"

namespace kdist {

struct HttpReply {
  int status = 0;    // 200, 404, ...
  std::string body;  // the bytes after the headers
};

// The most bytes of a reply (headers included) HttpGet reads.
inline constexpr size_t kMaxHttpReplyBytes = 1 << 20;

// GET `path` ("/computeMetadata/v1/...") from `server` with `headers`, the
// whole within `waiter`'s deadline. kUnavailable when the server cannot be
// reached (refused, unresolved, reset) or its reply is not HTTP or exceeds
// `max_bytes`; kDeadlineExceeded when it does not finish in time. Every
// message names the server and path.
Result<HttpReply> HttpGet(const Address& server, std::string_view path,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          Waiter& waiter, size_t max_bytes = kMaxHttpReplyBytes);

// A whole reply as read from the socket: the status line's code and the body
// (Content-Length, when given, must match what arrived). kUnavailable when
// it is not an HTTP reply.
Result<HttpReply> ParseHttpReply(std::string_view bytes);

}  // namespace kdist

#endif  // KDIST_NET_HTTP_GET_H_
