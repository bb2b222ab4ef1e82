// An agent's side of the nodes' rendezvous: connect (retried, bounded, with a
// line every few seconds saying what it waits for), prove the token, be
// admitted, then read the rendezvous's replies and send this machine's reports.
//
// Every reply must be signed over this agent's nonce (when the job has a token)
// and numbered after the last one, else the connection counts as lost: a frame
// that does not come from the rendezvous never steers this machine.
#ifndef KDIST_RENDEZVOUS_RENDEZVOUS_AGENT_H_
#define KDIST_RENDEZVOUS_RENDEZVOUS_AGENT_H_

#include <cstdint>
#include <functional>
#include <string>

#include "base/clock.h"
#include "base/status.h"
#include "base/wire.h"
#include "net/keepalive.h"
#include "net/socket.h"
#include "rendezvous/rendezvous_wire.h"

namespace kdist {

struct RendezvousAgentOptions {
  Endpoint rendezvous;                            // an IP and port (resolved by the caller)
  std::string where;                              // the rendezvous as the user wrote it
  std::string token;
  Nanos join_timeout = std::chrono::seconds(300);  // bounds the connect retries
  Nanos progress_every = std::chrono::seconds(5);
  Nanos first_retry = std::chrono::milliseconds(50);
  Nanos max_retry = std::chrono::seconds(1);
  // A rendezvous host that vanishes (no FIN, no RST) is lost after this long without
  // an answer: TCP keepalive sized as the liveness channel's (LivenessOptionsFor).
  Nanos unreachable_timeout = kDefaultUnreachableTimeout;
};

class RendezvousAgent {
 public:
  using Log = std::function<void(const std::string&)>;

  RendezvousAgent(RendezvousAgentOptions options, Clock& clock, Log log);

  // Connects (retrying until join_timeout: kDeadlineExceeded naming what it
  // waited for), sends the hello signed over the challenge and waits for the
  // answer: OK when admitted; kFailedPrecondition / kAlreadyExists /
  // kInvalidArgument with the rendezvous's refusal otherwise (a refusal is
  // believed unsigned: it only ends this agent).
  Status Join(NodeHello hello);
  // The same conversation for a hello that asks without joining (`kdist stop`): the
  // rendezvous's answer (kEnd, its message), or the refusal as a status.
  Result<NodeReply> Ask(NodeHello hello);
  // The next reply (kWaiting, kRoster or kEnd), waiting at most `timeout`:
  // kDeadlineExceeded when none came, kUnavailable when the rendezvous is lost
  // (closed, reset, or a frame that does not verify).
  Result<NodeReply> Next(Nanos timeout);
  // Sends how the attempt ended here (signed, numbered).
  Status SendReport(NodeReport report);
  // The address of this side of the connection (the source the rendezvous saw).
  std::string local_address() const { return local_address_; }
  void Close() { fd_.Close(); }

 private:
  Result<std::string> ReadFrame(Nanos timeout);
  // A reply decoded, signed over this agent's nonce and numbered after the last;
  // kUnavailable (and the connection closed) otherwise.
  Result<NodeReply> Verified(const std::string& frame);
  Status WriteAll(std::string_view bytes, Nanos timeout);

  RendezvousAgentOptions options_;
  Clock& clock_;
  Log log_;
  Fd fd_;
  FrameAssembler in_;
  Nonce challenge_{};
  Nonce own_nonce_{};
  int64_t last_reply_ = 0;
  int64_t sequence_ = 1;
  std::string local_address_;
};

}  // namespace kdist

#endif  // KDIST_RENDEZVOUS_RENDEZVOUS_AGENT_H_
