// libFuzzer target: the liveness channel's frames, which process 0's hub reads
// from anyone who connects to its port, and every process reads from the hub.
// Properties: decoding never crashes or over-reads (ASan); every refusal
// explains itself; a decoded join or notice encodes to a frame that decodes to
// the same values.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "liveness/liveness_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  kdist::Result<kdist::LiveJoin> join = kdist::DecodeLiveJoin(bytes);
  if (join.ok()) {
    kdist::Result<kdist::LiveJoin> again = kdist::DecodeLiveJoin(kdist::EncodeLiveJoin(*join));
    if (!again.ok() || again->process_id != join->process_id || again->nonce != join->nonce ||
        again->host != join->host || again->pid != join->pid) {
      __builtin_trap();
    }
  } else if (join.status().message().empty()) {
    __builtin_trap();
  }

  kdist::Result<kdist::LiveNotice> notice = kdist::DecodeLiveNotice(bytes);
  if (notice.ok()) {
    kdist::Result<kdist::LiveNotice> again =
        kdist::DecodeLiveNotice(kdist::EncodeLiveNotice(*notice));
    if (!again.ok() || again->kind != notice->kind || again->process_id != notice->process_id ||
        again->host != notice->host || again->pid != notice->pid ||
        again->message != notice->message || again->barrier != notice->barrier) {
      __builtin_trap();
    }
  } else if (notice.status().message().empty()) {
    __builtin_trap();
  }
  return 0;
}
