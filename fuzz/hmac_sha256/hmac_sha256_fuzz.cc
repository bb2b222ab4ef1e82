// libFuzzer target: SHA-256 and HMAC-SHA-256.
// Input: byte 0 is the key's length (0-255, cut to what there is), byte 1
// picks where to split the message, then the key, then the message.
// Properties: hashing the message in two pieces, split anywhere, gives the
// one-shot digest (SHA-256 and HMAC); a key longer than a block gives the MAC
// of its hash as key (RFC 2104); MacEqual(a, a) holds and one flipped bit
// anywhere makes it false.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/hmac_sha256.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t key_size = std::min<size_t>(data[0], size - 2);
  const std::string_view key = input.substr(2, key_size);
  const std::string_view message = input.substr(2 + key_size);
  const size_t split = message.empty() ? 0 : data[1] % (message.size() + 1);

  const kdist::Sha256Digest one_shot = kdist::ComputeSha256(message);
  kdist::Sha256 hash;
  hash.Update(message.substr(0, split));
  hash.Update(message.substr(split));
  if (hash.Finish() != one_shot) __builtin_trap();

  const kdist::Sha256Digest mac = kdist::ComputeHmacSha256(key, message);
  kdist::HmacSha256 pieces(key);
  pieces.Update(message.substr(0, split));
  pieces.Update(message.substr(split));
  const kdist::Sha256Digest mac_in_pieces = pieces.Finish();
  if (!kdist::MacEqual(mac, mac_in_pieces) || mac != mac_in_pieces) __builtin_trap();
  if (key.size() > kdist::kSha256BlockBytes &&
      kdist::ComputeHmacSha256(kdist::DigestBytes(kdist::ComputeSha256(key)), message) != mac) {
    __builtin_trap();
  }

  if (!kdist::MacEqual(mac, mac) || !kdist::MacEqual(one_shot, one_shot)) __builtin_trap();
  kdist::Sha256Digest flipped = mac;
  const size_t byte = split % flipped.size();
  flipped[byte] = static_cast<uint8_t>(flipped[byte] ^ (1u << (data[1] % 8)));
  if (kdist::MacEqual(mac, flipped) ||
      kdist::MacEqual(kdist::DigestBytes(mac), kdist::DigestBytes(flipped))) {
    __builtin_trap();
  }
  return 0;
}
