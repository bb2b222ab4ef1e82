#include "rendezvous/rendezvous_agent.h"

#include <poll.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "base/hmac_sha256.h"
#include "base/text.h"
#include "net/keepalive.h"
#include "base/challenge.h"

namespace kdist {
namespace {

std::string Seconds(Nanos value) {
  return std::to_string(std::max<int64_t>(
             0, std::chrono::duration_cast<std::chrono::seconds>(value).count())) +
         " s";
}

// One connect attempt, bounded by `timeout`: the connected socket, or the errno.
Result<Fd> ConnectOnce(const Endpoint& endpoint, Nanos timeout) {
  Connecting c = StartConnect(endpoint);
  if (c.io.state == IoState::kDone) return std::move(c.fd);
  if (c.io.state == IoState::kError) return Unavailable(ErrorText(c.io.error));
  std::vector<pollfd> fds = {{c.fd.get(), POLLOUT, 0}};
  const int ready = Poll(fds, timeout);
  if (ready <= 0) return Unavailable("the connection was not answered in time");
  if (const int error = ConnectResult(c.fd.get())) return Unavailable(ErrorText(error));
  return std::move(c.fd);
}

}  // namespace

RendezvousAgent::RendezvousAgent(RendezvousAgentOptions options, Clock& clock, Log log)
    : options_(std::move(options)), clock_(clock), log_(std::move(log)) {}

Status RendezvousAgent::Join(NodeHello hello) {
  KDIST_ASSIGN_OR_RETURN(const NodeReply reply, Ask(std::move(hello)));
  if (reply.kind != NodeReplyKind::kAdmitted) {
    return FailedPrecondition("the nodes' rendezvous at " + options_.where +
                              " did not admit this agent: " + reply.message);
  }
  return Status::Ok();
}

Result<NodeReply> RendezvousAgent::Ask(NodeHello hello) {
  const Nanos start = clock_.Now();
  const Nanos until = start + options_.join_timeout;
  Nanos retry = options_.first_retry;
  Nanos next_line = start + options_.progress_every;
  std::string last_error;
  while (true) {
    const Nanos now = clock_.Now();
    if (now >= until) {
      return DeadlineExceeded("the nodes' rendezvous at " + options_.where +
                              " did not answer within " + Seconds(options_.join_timeout) +
                              " (--join-timeout); last: " + last_error +
                              "; start the agent on the rendezvous's machine, or `kdist "
                              "rendezvous serve`, and check that this machine reaches it");
    }
    Result<Fd> fd = ConnectOnce(options_.rendezvous, std::min<Nanos>(until - now, std::chrono::seconds(5)));
    if (fd.ok()) {
      fd_ = std::move(*fd);
      break;
    }
    last_error = fd.status().message();
    if (clock_.Now() >= next_line) {
      log_("waiting for the nodes' rendezvous at " + options_.where + " (" +
           last_error + "); " + Seconds(clock_.Now() - start) + " of " +
           Seconds(options_.join_timeout) + " (--join-timeout)");
      next_line = clock_.Now() + options_.progress_every;
    }
    clock_.Sleep(std::min(retry, until - clock_.Now()));
    retry = std::min(retry * 2, options_.max_retry);
  }
  local_address_ = LocalAddress(fd_.get());
  SetKeepalive(fd_.get(), KeepaliveFor(options_.unreachable_timeout));
  const Nanos left = until - clock_.Now();
  KDIST_RETURN_IF_ERROR(WriteAll(EncodeOpening(), left));
  Result<std::string> frame = ReadFrame(until - clock_.Now());
  if (!frame.ok()) return frame.status();
  KDIST_ASSIGN_OR_RETURN(const Challenge challenge, DecodeChallenge(*frame, "nodes' rendezvous"));
  challenge_ = challenge.nonce;
  KDIST_ASSIGN_OR_RETURN(own_nonce_, FreshNonce());
  hello.sequence = 1;
  hello.nonce = own_nonce_;
  KDIST_RETURN_IF_ERROR(
      WriteAll(EncodeSignedNodeHello(std::move(hello), options_.token, challenge_),
               until - clock_.Now()));
  while (true) {
    Result<std::string> answer = ReadFrame(std::max(until - clock_.Now(), Nanos(0)));
    if (!answer.ok()) return answer.status();
    Result<NodeReply> reply = Verified(*answer);
    if (!reply.ok()) {
      // A refusal is believed unsigned: it only ends this agent, which a rendezvous
      // with another token (whose MACs cannot verify here) must be able to do.
      Result<NodeReply> unsigned_reply = DecodeNodeReply(*answer);
      if (unsigned_reply.ok() && unsigned_reply->kind == NodeReplyKind::kRefused) {
        return Status(unsigned_reply->code, unsigned_reply->message);
      }
      return reply.status();
    }
    if (reply->kind == NodeReplyKind::kAdmitted) {
      log_(reply->message);
      return reply;
    }
    if (reply->kind == NodeReplyKind::kEnd) return reply;  // the answer to a request
    if (reply->kind == NodeReplyKind::kStatus) return reply;  // `kdist status`
    if (reply->kind == NodeReplyKind::kRefused) return Status(reply->code, reply->message);
    // kWaiting before the admission: keep reading.
  }
}

Result<NodeReply> RendezvousAgent::Next(Nanos timeout) {
  Result<std::string> frame = ReadFrame(timeout);
  if (!frame.ok()) return frame.status();
  return Verified(*frame);
}

Result<NodeReply> RendezvousAgent::Verified(const std::string& frame_bytes) {
  const std::string* frame = &frame_bytes;
  Result<NodeReply> reply = DecodeNodeReply(*frame);
  if (!reply.ok()) {
    fd_.Close();
    return Unavailable("lost the nodes' rendezvous at " + options_.where +
                       ": it sent a malformed frame (" + reply.status().message() + ")");
  }
  if (!NodeFrameVerifies(*frame, reply->mac, options_.token, own_nonce_) ||
      reply->sequence <= last_reply_) {
    fd_.Close();
    return Unavailable("lost the nodes' rendezvous at " + options_.where +
                       ": a frame on its connection does not verify as the rendezvous's "
                       "(wrong token, or out of order)");
  }
  last_reply_ = reply->sequence;
  return reply;
}

Status RendezvousAgent::SendReport(NodeReport report) {
  report.sequence = ++sequence_;
  return WriteAll(EncodeSignedNodeReport(std::move(report), options_.token, challenge_),
                  std::chrono::seconds(10));
}

Result<std::string> RendezvousAgent::ReadFrame(Nanos timeout) {
  const Nanos until = clock_.Now() + timeout;
  while (true) {
    std::string frame = in_.TakeFrame();
    if (!frame.empty()) return frame;
    if (!fd_.valid()) return Unavailable("lost the nodes' rendezvous at " + options_.where);
    const Nanos now = clock_.Now();
    if (now >= until) {
      return DeadlineExceeded("no word from the nodes' rendezvous at " + options_.where +
                              " within " + Seconds(timeout));
    }
    std::vector<pollfd> fds = {{fd_.get(), POLLIN, 0}};
    const int ready = Poll(fds, until - now);
    if (ready < 0) return Internal("poll failed: " + ErrorText(-ready));
    if (ready == 0) continue;
    char buffer[4096];
    Io io = ReadSome(fd_.get(), buffer, sizeof buffer);
    if (io.state == IoState::kWouldBlock) continue;
    if (io.state != IoState::kDone) {
      fd_.Close();
      return Unavailable("lost the nodes' rendezvous at " + options_.where + ": " +
                         (io.state == IoState::kEof ? std::string("it closed the connection")
                                                    : ErrorText(io.error)));
    }
    if (Status s = in_.Append(std::string_view(buffer, io.bytes)); !s.ok()) {
      fd_.Close();
      return Unavailable("lost the nodes' rendezvous at " + options_.where + ": " + s.message());
    }
  }
}

Status RendezvousAgent::WriteAll(std::string_view bytes, Nanos timeout) {
  const Nanos until = clock_.Now() + timeout;
  while (!bytes.empty()) {
    if (!fd_.valid()) return Unavailable("lost the nodes' rendezvous at " + options_.where);
    Io io = WriteSome(fd_.get(), bytes);
    if (io.state == IoState::kDone) {
      bytes.remove_prefix(io.bytes);
      continue;
    }
    if (io.state != IoState::kWouldBlock) {
      fd_.Close();
      return Unavailable("lost the nodes' rendezvous at " + options_.where + ": " +
                         ErrorText(io.error));
    }
    const Nanos now = clock_.Now();
    if (now >= until) return DeadlineExceeded("cannot write to the nodes' rendezvous in time");
    std::vector<pollfd> fds = {{fd_.get(), POLLOUT, 0}};
    (void)Poll(fds, until - now);
  }
  return Status::Ok();
}

}  // namespace kdist
