// The field tags that the roll call's frames (roll_call/roll_call_wire.cc) and the
// liveness channel's (liveness/liveness_wire.cc) share: the same number for the same
// field in both.
//
// Only these. Every other tag belongs to one protocol and is named in that
// protocol's file, where the same number may mean something else: tag 10 is
// the roll call hello's MAC and the liveness join's nonce, tag 16 the roll
// call challenge's nonce and the liveness notice's kind, tag 17 the hello's
// environment fingerprint and the notice's barrier. Each decoder knows its own
// frames' tags (base/wire.h), so the two sets never meet in one frame.
#ifndef KDIST_BASE_WIRE_TAGS_H_
#define KDIST_BASE_WIRE_TAGS_H_

#include <cstdint>

namespace kdist {

inline constexpr uint8_t kTagProcessId = 1;  // integer: the process the frame is from or about
inline constexpr uint8_t kTagHost = 8;       // string, at most kMaxHostBytes (base/wire.h)
inline constexpr uint8_t kTagPid = 9;        // integer
inline constexpr uint8_t kTagMessage = 12;   // string, at most kMaxMessageBytes (base/wire.h)

}  // namespace kdist

#endif  // KDIST_BASE_WIRE_TAGS_H_
