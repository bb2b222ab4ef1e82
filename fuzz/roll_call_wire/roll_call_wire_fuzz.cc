// libFuzzer target: the roll call's frames, which process 0 reads from anyone
// who connects. Properties: decoding never crashes or over-reads (ASan); a
// decoded hello or reply encodes to a frame that decodes to the same values;
// the stream assembler only ever hands out frames whose header it accepted.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "roll_call_wire.h"

namespace {

bool SameHello(const kdist::Hello& a, const kdist::Hello& b) {
  return a.process_id == b.process_id && a.num_processes == b.num_processes &&
         a.fingerprint == b.fingerprint && a.coordinator == b.coordinator &&
         a.num_processes_source == b.num_processes_source &&
         a.coordinator_source == b.coordinator_source && a.jax_version == b.jax_version &&
         a.host == b.host && a.pid == b.pid && a.token == b.token;
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
  } else if (hello.status().message().empty()) {
    __builtin_trap();  // every refusal explains itself
  }

  kdist::Result<kdist::Reply> reply = kdist::DecodeReply(bytes);
  if (reply.ok()) {
    kdist::Result<kdist::Reply> again = kdist::DecodeReply(kdist::EncodeReply(*reply));
    if (!again.ok() || !SameReply(*again, *reply)) __builtin_trap();
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
