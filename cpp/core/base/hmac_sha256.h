// SHA-256 (FIPS 180-4), HMAC-SHA-256 (RFC 2104) and the roll call's nonces.
//
// The roll call proves that a process holds the job's secret without sending
// it: process 0 sends each accepted connection a fresh nonce, and the worker's
// hello carries
//
//   ComputeHmacSha256(token, nonce || hello bytes)
//
// which process 0 recomputes and compares with MacEqual. Written here, in the
// core, because the core links nothing but the C++ runtime (no OpenSSL).
//
//   Sha256 hash;                      // incremental
//   hash.Update("ab");
//   hash.Update("c");
//   Sha256Digest d = hash.Finish();   // == ComputeSha256("abc")
//
//   HmacSha256 mac(token);            // incremental, e.g. nonce then hello
//   mac.Update(nonce_bytes);
//   mac.Update(hello_bytes);
//   if (!MacEqual(mac.Finish(), received)) { ... refuse ... }
#ifndef KDIST_BASE_HMAC_SHA256_H_
#define KDIST_BASE_HMAC_SHA256_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace kdist {

inline constexpr size_t kSha256DigestBytes = 32;
inline constexpr size_t kSha256BlockBytes = 64;

using Sha256Digest = std::array<uint8_t, kSha256DigestBytes>;

// SHA-256 over data given in any number of pieces.
class Sha256 {
 public:
  Sha256() { Reset(); }

  // Appends `data` to the message.
  void Update(std::string_view data);
  // The digest of everything given since construction (or the last Finish),
  // after which the hasher is empty again, ready for a new message.
  Sha256Digest Finish();

 private:
  void Reset();
  void Compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, kSha256BlockBytes> buffer_;  // a partial block
  size_t buffered_ = 0;                             // bytes used in buffer_
  uint64_t length_ = 0;                             // message bytes so far (mod 2^64)
};

// SHA-256 of `data` in one call.
Sha256Digest ComputeSha256(std::string_view data);

// HMAC-SHA-256 with `key` over data given in any number of pieces. A key of
// any length is accepted: one longer than the block (64 bytes) is hashed first,
// a shorter one is padded with zeros (RFC 2104).
class HmacSha256 {
 public:
  explicit HmacSha256(std::string_view key);

  void Update(std::string_view data) { inner_.Update(data); }
  // The MAC of everything given since construction (or the last Finish); the
  // object then starts a new message under the same key.
  Sha256Digest Finish();

 private:
  std::array<uint8_t, kSha256BlockBytes> outer_pad_;  // key ^ 0x5c..
  std::array<uint8_t, kSha256BlockBytes> inner_pad_;  // key ^ 0x36..
  Sha256 inner_;
};

// HMAC-SHA-256 of `message` under `key` in one call.
Sha256Digest ComputeHmacSha256(std::string_view key, std::string_view message);

// Whether two MACs are equal, in time that does not depend on where they
// differ (every byte is read), so a verifier leaks nothing about the right MAC.
bool MacEqual(const Sha256Digest& a, const Sha256Digest& b);
// The same for MACs as bytes off the wire: false when the lengths differ (the
// length is public); otherwise constant in time for a given length.
bool MacEqual(std::string_view a, std::string_view b);

// A digest as its bytes, e.g. to place in a message.
inline std::string_view DigestBytes(const Sha256Digest& digest) {
  return {reinterpret_cast<const char*>(digest.data()), digest.size()};
}

inline constexpr size_t kNonceBytes = 16;
using Nonce = std::array<uint8_t, kNonceBytes>;

// 16 bytes from the kernel's CSPRNG: getrandom(2), retried a bounded number
// of times when a signal interrupts it, and /dev/urandom where getrandom is
// missing (ENOSYS, or not Linux). Fails with kUnavailable, naming the source
// and the system's reason, when neither gives 16 bytes.
Result<Nonce> FreshNonce();

// FreshNonce's fallback on its own: a nonce read from the device at `path`
// (normally "/dev/urandom"); kUnavailable when it cannot be opened or ends
// before 16 bytes. For tests and for systems without getrandom.
Result<Nonce> ReadNonceFrom(const std::string& path);

// Whether `a` equals `b`, in time that depends only on their lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace kdist

#endif  // KDIST_BASE_HMAC_SHA256_H_
