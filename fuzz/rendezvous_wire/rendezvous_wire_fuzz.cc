// libFuzzer target: the nodes' rendezvous frames, which the rendezvous reads from
// anyone who reaches its port (a hello, then reports) and an agent reads from
// whatever answers there (replies). Properties: decoding never crashes or
// over-reads (ASan); every refusal explains itself; a decoded hello, reply or
// report encodes to a frame that decodes to the same values; signed with a token
// over a nonce, that frame verifies under the token and nonce, and under no other
// token, nonce or MAC.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rendezvous/rendezvous_wire.h"

namespace {

using kdist::NodeHello;
using kdist::NodeReply;
using kdist::NodeReport;

bool SameHello(const NodeHello& a, const NodeHello& b) {
  return a.sequence == b.sequence && a.job_id == b.job_id && a.node_name == b.node_name &&
         a.host == b.host && a.pid == b.pid && a.processes_per_node == b.processes_per_node &&
         a.min_nodes == b.min_nodes && a.max_nodes == b.max_nodes &&
         a.coordinator_port == b.coordinator_port && a.environment == b.environment &&
         a.nonce == b.nonce && a.purpose == b.purpose && a.mac == b.mac;
}

bool SameReply(const NodeReply& a, const NodeReply& b) {
  return a.sequence == b.sequence && a.kind == b.kind && a.code == b.code &&
         a.message == b.message && a.attempt == b.attempt && a.node_rank == b.node_rank &&
         a.processes_per_node == b.processes_per_node &&
         a.coordinator_host == b.coordinator_host && a.coordinator_port == b.coordinator_port &&
         a.node_count == b.node_count && a.run_id == b.run_id && a.previous_processes == b.previous_processes &&
         a.first_failure == b.first_failure && a.ended == b.ended && a.exit_status == b.exit_status && a.status == b.status && a.mac == b.mac;
}

bool SameReport(const NodeReport& a, const NodeReport& b) {
  return a.sequence == b.sequence && a.attempt == b.attempt && a.exit_status == b.exit_status &&
         a.failure.SamePoint(b.failure) && a.failure.Text() == b.failure.Text() &&
         a.failure.pid == b.failure.pid && a.failure.exit_status == b.failure.exit_status && a.coordinator_port == b.coordinator_port &&
         a.drain == b.drain && a.progressed == b.progressed && a.steps_only == b.steps_only &&
         a.first_step == b.first_step && a.first_step_unix_millis == b.first_step_unix_millis &&
         a.step == b.step && a.step_unix_millis == b.step_unix_millis && a.mac == b.mac;
}

// The MAC field of a signed frame: its last kMacBytes bytes.
std::string_view MacOf(std::string_view frame) {
  return frame.size() < kdist::kMacBytes ? std::string_view()
                                         : frame.substr(frame.size() - kdist::kMacBytes);
}

// A frame signed under "token" over `nonce` verifies there and nowhere else.
void CheckSigned(const std::string& frame, const kdist::Nonce& nonce) {
  const std::string_view mac = MacOf(frame);
  if (!kdist::NodeFrameVerifies(frame, mac, "token", nonce)) __builtin_trap();
  if (kdist::NodeFrameVerifies(frame, mac, "tokem", nonce)) __builtin_trap();
  if (kdist::NodeFrameVerifies(frame, mac, "", nonce)) __builtin_trap();
  kdist::Nonce other = nonce;
  other[0] ^= 1;
  if (kdist::NodeFrameVerifies(frame, mac, "token", other)) __builtin_trap();
  std::string forged(mac);
  if (!forged.empty()) forged[forged.size() - 1] ^= 1;
  if (kdist::NodeFrameVerifies(frame, forged, "token", nonce)) __builtin_trap();
}

kdist::Nonce NonceFrom(std::string_view bytes) {
  kdist::Nonce nonce{};
  for (size_t i = 0; i < nonce.size() && i < bytes.size(); ++i) {
    nonce[i] = static_cast<uint8_t>(bytes[i]);
  }
  return nonce;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const kdist::Nonce nonce = NonceFrom(bytes);

  kdist::Result<NodeHello> hello = kdist::DecodeNodeHello(bytes);
  if (hello.ok()) {
    kdist::Result<NodeHello> again = kdist::DecodeNodeHello(kdist::EncodeNodeHello(*hello));
    if (!again.ok() || !SameHello(*again, *hello)) __builtin_trap();
    CheckSigned(kdist::EncodeSignedNodeHello(*hello, "token", nonce), nonce);
  } else if (hello.status().message().empty()) {
    __builtin_trap();
  }

  kdist::Result<NodeReply> reply = kdist::DecodeNodeReply(bytes);
  if (reply.ok()) {
    kdist::Result<NodeReply> again = kdist::DecodeNodeReply(kdist::EncodeNodeReply(*reply));
    if (!again.ok() || !SameReply(*again, *reply)) __builtin_trap();
    CheckSigned(kdist::EncodeSignedNodeReply(*reply, "token", nonce), nonce);
  } else if (reply.status().message().empty()) {
    __builtin_trap();
  }

  kdist::Result<NodeReport> report = kdist::DecodeNodeReport(bytes);
  if (report.ok()) {
    kdist::Result<NodeReport> again = kdist::DecodeNodeReport(kdist::EncodeNodeReport(*report));
    if (!again.ok() || !SameReport(*again, *report)) __builtin_trap();
    CheckSigned(kdist::EncodeSignedNodeReport(*report, "token", nonce), nonce);
  } else if (report.status().message().empty()) {
    __builtin_trap();
  }
  return 0;
}
