// The MAC of a signed frame (base/wire.h's framing), as the roll call's hello and
// every frame of the nodes' rendezvous carry it: one field, tag kTagFrameMac,
// exactly kMacBytes bytes,
//
//   MAC = HMAC-SHA-256(key = the token's bytes,
//                      message = the other side's nonce (16 bytes) || the frame
//                                without its MAC field)
//
// where "the frame without its MAC field" is the frame exactly as received —
// 12-byte header included — with the 35 bytes of the MAC field (tag, length,
// value) cut out wherever they stand and the header's payload length lowered
// by 35 to match (FrameMacInput). An encoder that writes the MAC as the last
// field gets, for the frame it signed, exactly the bytes it encoded without
// one. The token never travels; the receiver recomputes the MAC with the nonce
// it sent on that very connection and compares in constant time (MacEqual).
#ifndef KDIST_BASE_FRAME_MAC_H_
#define KDIST_BASE_FRAME_MAC_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/hmac_sha256.h"
#include "base/status.h"

namespace kdist {

inline constexpr uint8_t kTagFrameMac = 10;               // the MAC field's tag in a signed frame
inline constexpr size_t kMacBytes = kSha256DigestBytes;  // the MAC field's value, exactly

// The bytes a frame's MAC covers, after the nonce: `frame` (a whole frame) with
// its MAC field cut out and the header's length lowered to match; `frame` as is
// when it has no MAC field. kInvalidArgument when `frame` is not a well-formed
// frame of fields.
Result<std::string> FrameMacInput(std::string_view frame);

// HMAC-SHA-256 under `token` over nonce || mac_input, as kMacBytes bytes.
std::string FrameMac(std::string_view token, const Nonce& nonce, std::string_view mac_input);

}  // namespace kdist

#endif  // KDIST_BASE_FRAME_MAC_H_
