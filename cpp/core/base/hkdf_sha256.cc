#include "base/hkdf_sha256.h"

#include <algorithm>
#include <string>

#include "base/hmac_sha256.h"

namespace kdist {

Result<std::string> HkdfSha256(std::string_view input_key, std::string_view salt,
                               std::string_view info, size_t length) {
  if (length == 0 || length > kMaxHkdfSha256Bytes) {
    return InvalidArgument("HKDF-SHA-256 length " + std::to_string(length) +
                           ": expected 1 to " + std::to_string(kMaxHkdfSha256Bytes) + " bytes");
  }
  // Extract: PRK = HMAC(salt, IKM); an empty salt is HashLen zero bytes, which HMAC
  // pads to the same key as the empty string.
  const Sha256Digest prk = ComputeHmacSha256(salt, input_key);
  // Expand: T(i) = HMAC(PRK, T(i-1) || info || i), output = T(1) || T(2) || ...
  std::string out;
  out.reserve(length);
  std::string previous;
  HmacSha256 mac(DigestBytes(prk));
  for (unsigned counter = 1; out.size() < length; ++counter) {
    mac.Update(previous);
    mac.Update(info);
    const char index = static_cast<char>(counter);
    mac.Update(std::string_view(&index, 1));
    const Sha256Digest block = mac.Finish();
    previous.assign(DigestBytes(block));
    out.append(previous, 0, std::min(previous.size(), length - out.size()));
  }
  return out;
}

}  // namespace kdist
