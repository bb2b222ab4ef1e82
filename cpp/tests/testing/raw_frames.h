// Hand-made frames for the wire tests: a header and fields written byte by
// byte, so malformed inputs can be built and encoders checked against them.
#ifndef KDIST_TESTING_RAW_FRAMES_H_
#define KDIST_TESTING_RAW_FRAMES_H_

#include <cstdint>
#include <string>

#include "base/wire.h"

namespace kdist::testing {

// A frame with a hand-made header (the payload's length, or `announced`) and payload.
inline std::string RawFrame(uint16_t version, uint16_t type, const std::string& payload,
                            int64_t announced = -1) {
  std::string out(kFrameMagic);
  out += static_cast<char>(version >> 8);
  out += static_cast<char>(version & 0xff);
  out += static_cast<char>(type >> 8);
  out += static_cast<char>(type & 0xff);
  const uint32_t size = announced < 0 ? static_cast<uint32_t>(payload.size())
                                      : static_cast<uint32_t>(announced);
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((size >> shift) & 0xff);
  return out + payload;
}

// One field: its tag, a big-endian u16 length and the value.
inline std::string RawField(uint8_t tag, const std::string& value) {
  std::string out(1, static_cast<char>(tag));
  out += static_cast<char>(value.size() >> 8);
  out += static_cast<char>(value.size() & 0xff);
  return out + value;
}

// An integer field's value: 8 bytes, big-endian two's complement.
inline std::string RawInteger(int64_t value) {
  std::string out;
  for (int shift = 56; shift >= 0; shift -= 8) {
    out += static_cast<char>((static_cast<uint64_t>(value) >> shift) & 0xff);
  }
  return out;
}

}  // namespace kdist::testing

#endif  // KDIST_TESTING_RAW_FRAMES_H_
