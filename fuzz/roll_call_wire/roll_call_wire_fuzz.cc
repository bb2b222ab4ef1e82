// libFuzzer target: the roll call's frames, which process 0 reads from anyone
// who connects (and the challenge, which a process reads from whatever answers
// on the coordinator port). Properties: decoding never crashes or over-reads
// (ASan); a decoded hello, reply or challenge encodes to a frame that decodes
// to the same values; the bytes a decoded hello's MAC covers are the frame of
// the same hello without its MAC; the stream assembler only ever hands out
// frames whose header it accepted; a hello's environment fingerprint either
// decodes and re-encodes to the same bytes, or is refused with a reason.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "roll_call/consistency.h"
#include "roll_call/roll_call_wire.h"

namespace {

bool SameHello(const kdist::Hello& a, const kdist::Hello& b) {
  return a.process_id == b.process_id && a.num_processes == b.num_processes &&
         a.fingerprint == b.fingerprint && a.coordinator == b.coordinator &&
         a.num_processes_source == b.num_processes_source &&
         a.coordinator_source == b.coordinator_source && a.jax_version == b.jax_version &&
         a.host == b.host && a.pid == b.pid && a.mac == b.mac && a.environment == b.environment;
}

bool SameReply(const kdist::Reply& a, const kdist::Reply& b) {
  return a.type == b.type && a.code == b.code && a.message == b.message && a.host == b.host &&
         a.pid == b.pid && a.jax_version == b.jax_version;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  kdist::Result<kdist::Hello> hello = kdist::DecodeHello(bytes);
  if (hello.ok()) {
    kdist::Result<kdist::Hello> again = kdist::DecodeHello(kdist::EncodeHello(*hello));
    if (!again.ok() || !SameHello(*again, *hello)) __builtin_trap();
    kdist::Result<std::string> covered = kdist::FrameMacInput(bytes);
    if (!covered.ok()) __builtin_trap();  // every hello that decodes has MAC input
    kdist::Result<kdist::Hello> bare = kdist::DecodeHello(*covered);
    if (!bare.ok() || !bare->mac.empty()) __builtin_trap();
    kdist::Hello without = *hello;
    without.mac.clear();
    if (!SameHello(*bare, without)) __builtin_trap();
    kdist::Result<std::string> reencoded = kdist::FrameMacInput(kdist::EncodeHello(*hello));
    if (!reencoded.ok() || *reencoded != kdist::EncodeHello(without)) __builtin_trap();
    kdist::Result<kdist::Fingerprint> environment = kdist::DecodeFingerprint(hello->environment);
    if (environment.ok()) {
      if (kdist::EncodeFingerprint(*environment) != hello->environment) __builtin_trap();
    } else if (environment.status().message().empty()) {
      __builtin_trap();
    }
  } else if (hello.status().message().empty()) {
    __builtin_trap();  // every refusal explains itself
  }

  kdist::Result<kdist::Reply> reply = kdist::DecodeReply(bytes);
  if (reply.ok()) {
    kdist::Result<kdist::Reply> again = kdist::DecodeReply(kdist::EncodeReply(*reply));
    if (!again.ok() || !SameReply(*again, *reply)) __builtin_trap();
  }

  kdist::Result<kdist::Challenge> challenge = kdist::DecodeChallenge(bytes, "roll call");
  if (challenge.ok()) {
    kdist::Result<kdist::Challenge> again =
        kdist::DecodeChallenge(kdist::EncodeChallenge(*challenge), "roll call");
    if (!again.ok() || again->nonce != challenge->nonce) __builtin_trap();
  } else if (challenge.status().message().empty()) {
    __builtin_trap();
  }

  // The same bytes as a stream, fed in uneven pieces.
  kdist::FrameAssembler assembler;
  size_t offset = 0;
  for (size_t piece = 1; offset < size; piece = piece * 2 + 1) {
    const std::string_view chunk = bytes.substr(offset, piece);
    offset += chunk.size();
    if (!assembler.Append(chunk).ok()) break;
    for (std::string frame = assembler.TakeFrame(); !frame.empty();
         frame = assembler.TakeFrame()) {
      kdist::Result<kdist::FrameHeader> header = kdist::DecodeFrameHeader(frame);
      if (!header.ok() || header->frame_size() != frame.size()) __builtin_trap();
    }
  }
  return 0;
}
