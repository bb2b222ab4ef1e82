// Helpers shared by the coordinator and worker tests: hellos, fast options,
// and a raw loopback client for speaking (or not speaking) the protocol.
#ifndef KDIST_TESTING_ROLL_CALL_HELPERS_H_
#define KDIST_TESTING_ROLL_CALL_HELPERS_H_

#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "net/address.h"
#include "net/socket.h"
#include "roll_call/roll_call_options.h"
#include "roll_call/roll_call_wire.h"

namespace kdist::testing {

inline Hello TestHello(int64_t id, int64_t n, uint16_t port) {
  Hello h;
  h.process_id = id;
  h.num_processes = n;
  h.coordinator = "127.0.0.1:" + std::to_string(port);
  h.fingerprint = "fp-" + h.coordinator + "-" + std::to_string(n);
  h.num_processes_source = "argument";
  h.coordinator_source = "argument";
  h.jax_version = "0.0.test";
  h.host = "host-" + std::to_string(id);
  h.pid = 50000 + id;
  return h;
}

inline Address Loopback(uint16_t port) {
  Address a;
  a.host = "127.0.0.1";
  a.port = port;
  a.kind = HostKind::kIPv4;
  return a;
}

// Short deadlines so failures show in milliseconds. The deadline starts now,
// on the real clock's time base (every RealClock shares it).
inline RollCallOptions FastOptions(std::chrono::milliseconds timeout) {
  RollCallOptions o;
  RealClock clock;
  o.deadline = Deadline::StartingNow(clock, timeout);
  o.hello_timeout = std::chrono::milliseconds(2000);
  o.close_grace = std::chrono::milliseconds(1000);
  o.backoff.initial = std::chrono::milliseconds(5);
  o.backoff.cap = std::chrono::milliseconds(50);
  o.probe_interval = std::chrono::milliseconds(5);
  return o;
}

// A blocking-with-timeouts loopback client.
class RawClient {
 public:
  explicit RawClient(uint16_t port) {
    Result<Endpoint> endpoint = EndpointFromLiteral("127.0.0.1", port);
    if (!endpoint.ok()) return;
    Connecting c = StartConnect(*endpoint);
    if (c.io.state == IoState::kWouldBlock) {
      std::vector<pollfd> fds{{c.fd.get(), POLLOUT, 0}};
      if (Poll(fds, std::chrono::seconds(2)) <= 0 || ConnectResult(c.fd.get()) != 0) return;
    } else if (c.io.state != IoState::kDone) {
      return;
    }
    fd_ = std::move(c.fd);
  }
  bool connected() const { return fd_.valid(); }
  bool Send(std::string_view bytes) {
    size_t sent = 0;
    for (int i = 0; i < 1000 && sent < bytes.size(); ++i) {
      const Io io = WriteSome(fd_.get(), bytes.substr(sent));
      if (io.state == IoState::kError) return false;
      if (io.state == IoState::kDone) sent += io.bytes;
      else usleep(1000);
    }
    return sent == bytes.size();
  }
  // Reads until EOF, an error, `want` bytes or the timeout. Returns what was
  // read; `state` says how it ended.
  std::string Read(size_t want, std::chrono::milliseconds timeout, IoState* state = nullptr) {
    std::string out;
    IoState last = IoState::kWouldBlock;
    RealClock clock;
    const Nanos until = clock.Now() + timeout;
    while (out.size() < want && clock.Now() < until) {
      std::vector<pollfd> fds{{fd_.get(), POLLIN, 0}};
      if (Poll(fds, until - clock.Now()) <= 0) continue;
      char buffer[4096];
      const Io io = ReadSome(fd_.get(), buffer, sizeof buffer);
      last = io.state;
      if (io.state == IoState::kDone) out.append(buffer, io.bytes);
      if (io.state == IoState::kEof || io.state == IoState::kError) break;
    }
    if (state) *state = last;
    return out;
  }
  // Reads one whole frame (or "" on EOF, garbage or timeout); frames that
  // arrive together are kept for the next call.
  std::string ReadFrame(std::chrono::milliseconds timeout) {
    RealClock clock;
    const Nanos until = clock.Now() + timeout;
    while (true) {
      std::string frame = in_.TakeFrame();
      if (!frame.empty()) return frame;
      if (clock.Now() >= until) return "";
      std::vector<pollfd> fds{{fd_.get(), POLLIN, 0}};
      if (Poll(fds, until - clock.Now()) <= 0) continue;
      char buffer[4096];
      const Io io = ReadSome(fd_.get(), buffer, sizeof buffer);
      if (io.state == IoState::kEof || io.state == IoState::kError) return "";
      if (io.state == IoState::kDone && !in_.Append(std::string_view(buffer, io.bytes)).ok()) {
        return "";
      }
    }
  }
  // Process 0's first frame on a connection.
  Result<Challenge> ReadChallenge(std::chrono::milliseconds timeout) {
    const std::string frame = ReadFrame(timeout);
    if (frame.empty()) return Unavailable("no challenge");
    return DecodeChallenge(frame, "roll call");
  }
  // The next reply that is not a progress line (nor the challenge, for a
  // client that sent its hello without reading it).
  Result<Reply> ReadVerdict(std::chrono::milliseconds timeout) {
    while (true) {
      const std::string frame = ReadFrame(timeout);
      if (frame.empty()) return Unavailable("no verdict");
      if (DecodeChallenge(frame, "roll call").ok()) continue;
      Result<Reply> reply = DecodeReply(frame);
      if (!reply.ok() || reply->type != FrameType::kStatus) return reply;
    }
  }
  void Close() { fd_.Close(); }
  int fd() const { return fd_.get(); }

 private:
  Fd fd_;
  FrameAssembler in_;
};

}  // namespace kdist::testing

#endif  // KDIST_TESTING_ROLL_CALL_HELPERS_H_
