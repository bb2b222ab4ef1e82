#include "net/http_get.h"

#include <poll.h>

#include <cerrno>

#include "base/scalars.h"
#include "base/text.h"
#include "net/dns.h"
#include "net/socket.h"

namespace kdist {
namespace {

// Waits for `events` on `fd` until the waiter's deadline; false when it passed.
bool WaitFor(int fd, short events, Waiter& waiter) {
  while (!waiter.Expired()) {
    std::vector<pollfd> fds{{fd, events, 0}};
    const int ready = Poll(fds, waiter.Slice(waiter.Remaining()));
    if (ready != 0) return true;
  }
  return false;
}

// Connects to one endpoint: the connected socket, or why not.
Result<Fd> Connect(const Endpoint& endpoint, Waiter& waiter, const std::string& where) {
  Connecting c = StartConnect(endpoint);
  if (c.io.state == IoState::kError) {
    return Unavailable(where + ": connecting to " + endpoint.ToString() + " failed: " +
                       ErrorText(c.io.error));
  }
  if (c.io.state == IoState::kWouldBlock) {
    if (!WaitFor(c.fd.get(), POLLOUT, waiter)) {
      c.fd.CloseWithReset();
      return DeadlineExceeded(where + ": no connection to " + endpoint.ToString() + " within " +
                              waiter.Progress());
    }
    const int error = ConnectResult(c.fd.get());
    if (error != 0) {
      return Unavailable(where + ": connecting to " + endpoint.ToString() + " failed: " +
                         ErrorText(error));
    }
  }
  return std::move(c.fd);
}

}  // namespace

Result<HttpReply> ParseHttpReply(std::string_view bytes) {
  const size_t end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos || bytes.substr(0, 5) != "HTTP/") {
    return Unavailable("the reply is not HTTP (" + Quote(bytes.substr(0, 40)) + ")");
  }
  const std::string_view head = bytes.substr(0, end);
  const size_t line_end = head.find("\r\n");
  const std::string_view status_line = head.substr(0, line_end);
  const std::vector<std::string_view> parts = Split(status_line, ' ');
  Result<uint64_t> code = parts.size() >= 2 ? ParseDigits(parts[1]) : ParseDigits("");
  if (!code.ok() || *code < 100 || *code > 999) {
    return Unavailable("the reply's status line is not HTTP's (" + Quote(status_line) + ")");
  }
  HttpReply reply;
  reply.status = static_cast<int>(*code);
  reply.body = std::string(bytes.substr(end + 4));
  if (line_end != std::string_view::npos) {
    for (std::string_view line : Split(head.substr(line_end + 2), '\n')) {
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos || Lower(Trim(line.substr(0, colon))) != "content-length") {
        continue;
      }
      Result<uint64_t> length = ParseDigits(Trim(line.substr(colon + 1)));
      if (!length.ok() || *length != reply.body.size()) {
        return Unavailable("the reply ended after " + std::to_string(reply.body.size()) +
                           " bytes of its body but its header says " + Quote(line));
      }
    }
  }
  return reply;
}

Result<HttpReply> HttpGet(const Address& server, std::string_view path,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          Waiter& waiter, size_t max_bytes) {
  const std::string where = "GET http://" + server.ToString() + std::string(path);
  auto no_line = [] { return std::string(); };
  Result<std::vector<Endpoint>> endpoints = ResolveEndpoints(server, waiter, no_line);
  if (!endpoints.ok()) {
    if (endpoints.status().code() == StatusCode::kDeadlineExceeded) {
      return DeadlineExceeded(where + ": " + server.host + " did not resolve within " +
                              waiter.Progress());
    }
    return Unavailable(where + ": " + endpoints.status().message());
  }
  if (endpoints->empty()) return Unavailable(where + ": " + server.host + " resolved to nothing");
  Result<Fd> fd = Unavailable(where + ": no endpoint");
  for (const Endpoint& endpoint : *endpoints) {
    fd = Connect(endpoint, waiter, where);
    if (fd.ok() || waiter.Expired()) break;
  }
  if (!fd.ok()) return fd.status();

  std::string request = "GET " + std::string(path) + " HTTP/1.0\r\nHost: " + server.ToString() +
                        "\r\nConnection: close\r\n";
  for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
  request += "\r\n";
  std::string_view left = request;
  while (!left.empty()) {
    const Io io = WriteSome(fd->get(), left);
    if (io.state == IoState::kDone) {
      left.remove_prefix(io.bytes);
    } else if (io.state == IoState::kWouldBlock) {
      if (!WaitFor(fd->get(), POLLOUT, waiter)) {
        return DeadlineExceeded(where + ": the request was not sent within " + waiter.Progress());
      }
    } else {
      return Unavailable(where + ": sending the request failed: " + ErrorText(io.error));
    }
  }
  std::string reply;
  char buffer[16384];
  while (true) {
    const Io io = ReadSome(fd->get(), buffer, sizeof buffer);
    if (io.state == IoState::kEof) break;
    if (io.state == IoState::kError) {
      return Unavailable(where + ": reading the reply failed: " + ErrorText(io.error));
    }
    if (io.state == IoState::kWouldBlock) {
      if (!WaitFor(fd->get(), POLLIN, waiter)) {
        fd->CloseWithReset();
        return DeadlineExceeded(where + ": the server " +
                                (reply.empty() ? std::string("sent no reply")
                                               : "sent " + std::to_string(reply.size()) +
                                                     " bytes but did not finish its reply") +
                                " within " + waiter.Progress());
      }
      continue;
    }
    reply.append(buffer, io.bytes);
    if (reply.size() > max_bytes) {
      fd->CloseWithReset();
      return Unavailable(where + ": the reply exceeds " + std::to_string(max_bytes) + " bytes");
    }
  }
  Result<HttpReply> parsed = ParseHttpReply(reply);
  if (!parsed.ok()) return Unavailable(where + ": " + parsed.status().message());
  return parsed;
}

}  // namespace kdist
