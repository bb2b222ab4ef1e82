// HKDF-SHA-256 (RFC 5869): keys derived from a secret, each bound to what it is for.
//
// kdist derives the job's TLS certificate authority from the job's token this way
// (config/tls_settings.h): the token is the input keying material, the `info` names the
// job and its attempt, so every job and every attempt gets its own key and the token itself
// is never used as a key, nor leaves the core.
//
//   std::string key = HkdfSha256(token, "salt", "what the key is for", 32).value();
#ifndef KDIST_BASE_HKDF_SHA256_H_
#define KDIST_BASE_HKDF_SHA256_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace kdist {

// The most bytes HKDF-SHA-256 can give: 255 blocks of 32 (RFC 5869, section 2.3).
inline constexpr size_t kMaxHkdfSha256Bytes = 255 * 32;

// HKDF-Extract then HKDF-Expand: `length` bytes of keying material from the secret
// `input_key`, a `salt` (may be empty: RFC 5869 then uses 32 zero bytes) and `info`.
// kInvalidArgument when `length` is 0 or above kMaxHkdfSha256Bytes.
Result<std::string> HkdfSha256(std::string_view input_key, std::string_view salt,
                               std::string_view info, size_t length);

}  // namespace kdist

#endif  // KDIST_BASE_HKDF_SHA256_H_
