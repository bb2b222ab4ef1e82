#include "base/hmac_sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#if defined(__linux__)
#include <sys/random.h>
#endif

#include "base/text.h"

namespace kdist {
namespace {

// FIPS 180-4, 4.2.2: the first 32 bits of the fractional parts of the cube
// roots of the first 64 primes.
constexpr uint32_t kRoundConstants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

// FIPS 180-4, 5.3.3: the first 32 bits of the fractional parts of the square
// roots of the first 8 primes.
constexpr uint32_t kInitialState[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

// The functions of FIPS 180-4, 4.1.2.
constexpr uint32_t RotateRight(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
constexpr uint32_t Choose(uint32_t x, uint32_t y, uint32_t z) { return (x & y) ^ (~x & z); }
constexpr uint32_t Majority(uint32_t x, uint32_t y, uint32_t z) {
  return (x & y) ^ (x & z) ^ (y & z);
}
constexpr uint32_t BigSigma0(uint32_t x) {
  return RotateRight(x, 2) ^ RotateRight(x, 13) ^ RotateRight(x, 22);
}
constexpr uint32_t BigSigma1(uint32_t x) {
  return RotateRight(x, 6) ^ RotateRight(x, 11) ^ RotateRight(x, 25);
}
constexpr uint32_t SmallSigma0(uint32_t x) {
  return RotateRight(x, 7) ^ RotateRight(x, 18) ^ (x >> 3);
}
constexpr uint32_t SmallSigma1(uint32_t x) {
  return RotateRight(x, 17) ^ RotateRight(x, 19) ^ (x >> 10);
}

uint32_t LoadBigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

void StoreBigEndian32(uint32_t value, uint8_t* p) {
  p[0] = static_cast<uint8_t>(value >> 24);
  p[1] = static_cast<uint8_t>(value >> 16);
  p[2] = static_cast<uint8_t>(value >> 8);
  p[3] = static_cast<uint8_t>(value);
}

// The most times a read of the random source is retried after a signal
// interrupted it (or after a short read) before giving up.
constexpr int kMaxRandomAttempts = 16;

}  // namespace

void Sha256::Reset() {
  for (size_t i = 0; i < 8; ++i) state_[i] = kInitialState[i];
  buffer_.fill(0);
  buffered_ = 0;
  length_ = 0;
}

// FIPS 180-4, 6.2.2: one 64-byte block into the state.
void Sha256::Compress(const uint8_t* block) {
  uint32_t schedule[64];
  for (size_t t = 0; t < 16; ++t) schedule[t] = LoadBigEndian32(block + 4 * t);
  for (size_t t = 16; t < 64; ++t) {
    schedule[t] = SmallSigma1(schedule[t - 2]) + schedule[t - 7] + SmallSigma0(schedule[t - 15]) +
                  schedule[t - 16];
  }
  uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
  uint32_t e = state_[4], f = state_[5], g = state_[6], h = state_[7];
  for (size_t t = 0; t < 64; ++t) {
    const uint32_t t1 = h + BigSigma1(e) + Choose(e, f, g) + kRoundConstants[t] + schedule[t];
    const uint32_t t2 = BigSigma0(a) + Majority(a, b, c);
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state_[0] += a;
  state_[1] += b;
  state_[2] += c;
  state_[3] += d;
  state_[4] += e;
  state_[5] += f;
  state_[6] += g;
  state_[7] += h;
}

void Sha256::Update(std::string_view data) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(data.data());
  size_t size = data.size();
  length_ += size;
  // Top up a partial block first.
  if (buffered_ > 0) {
    const size_t take = std::min(size, kSha256BlockBytes - buffered_);
    for (size_t i = 0; i < take; ++i) buffer_[buffered_ + i] = bytes[i];
    buffered_ += take;
    bytes += take;
    size -= take;
    if (buffered_ < kSha256BlockBytes) return;
    Compress(buffer_.data());
    buffered_ = 0;
  }
  // Whole blocks straight from the input.
  while (size >= kSha256BlockBytes) {
    Compress(bytes);
    bytes += kSha256BlockBytes;
    size -= kSha256BlockBytes;
  }
  // Keep the rest for later.
  for (size_t i = 0; i < size; ++i) buffer_[i] = bytes[i];
  buffered_ = size;
}

// FIPS 180-4, 5.1.1: a 1 bit, zeros up to 56 bytes into a block, and the
// message length in bits as a 64-bit big-endian number.
Sha256Digest Sha256::Finish() {
  const uint64_t length_in_bits = length_ << 3;
  buffer_[buffered_++] = 0x80;
  if (buffered_ > kSha256BlockBytes - 8) {
    while (buffered_ < kSha256BlockBytes) buffer_[buffered_++] = 0;
    Compress(buffer_.data());
    buffered_ = 0;
  }
  while (buffered_ < kSha256BlockBytes - 8) buffer_[buffered_++] = 0;
  for (int i = 7; i >= 0; --i) buffer_[buffered_++] = static_cast<uint8_t>(length_in_bits >> (8 * i));
  Compress(buffer_.data());

  Sha256Digest digest;
  for (size_t i = 0; i < 8; ++i) StoreBigEndian32(state_[i], digest.data() + 4 * i);
  Reset();
  return digest;
}

Sha256Digest ComputeSha256(std::string_view data) {
  Sha256 hash;
  hash.Update(data);
  return hash.Finish();
}

// RFC 2104: H((K ^ opad) || H((K ^ ipad) || message)), K padded with zeros to
// the block size, or first hashed when longer than a block.
HmacSha256::HmacSha256(std::string_view key) {
  std::array<uint8_t, kSha256BlockBytes> block{};  // zeros
  if (key.size() > kSha256BlockBytes) {
    const Sha256Digest hashed = ComputeSha256(key);
    for (size_t i = 0; i < hashed.size(); ++i) block[i] = hashed[i];
  } else {
    for (size_t i = 0; i < key.size(); ++i) block[i] = static_cast<uint8_t>(key[i]);
  }
  for (size_t i = 0; i < kSha256BlockBytes; ++i) {
    inner_pad_[i] = block[i] ^ 0x36;
    outer_pad_[i] = block[i] ^ 0x5c;
  }
  inner_.Update({reinterpret_cast<const char*>(inner_pad_.data()), inner_pad_.size()});
}

Sha256Digest HmacSha256::Finish() {
  const Sha256Digest inner = inner_.Finish();
  inner_.Update({reinterpret_cast<const char*>(inner_pad_.data()), inner_pad_.size()});
  Sha256 outer;
  outer.Update({reinterpret_cast<const char*>(outer_pad_.data()), outer_pad_.size()});
  outer.Update(DigestBytes(inner));
  return outer.Finish();
}

Sha256Digest ComputeHmacSha256(std::string_view key, std::string_view message) {
  HmacSha256 mac(key);
  mac.Update(message);
  return mac.Finish();
}

bool MacEqual(const Sha256Digest& a, const Sha256Digest& b) {
  return MacEqual(DigestBytes(a), DigestBytes(b));
}

bool MacEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  // Every byte is read and the differences are only OR-ed together; volatile
  // keeps the compiler from ending the loop at the first difference.
  volatile uint8_t difference = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    difference = difference | static_cast<uint8_t>(a[i] ^ b[i]);
  }
  return difference == 0;
}

Result<Nonce> ReadNonceFrom(const std::string& path) {
  const std::string source = "the random device " + path;
  int fd = -1;
  int open_error = 0;
  for (int attempt = 0; attempt < kMaxRandomAttempts && fd < 0; ++attempt) {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    open_error = fd < 0 ? errno : 0;
    if (open_error != EINTR) break;
  }
  if (fd < 0) return Unavailable("cannot open " + source + ": " + ErrorText(open_error));
  Nonce nonce{};
  size_t filled = 0;
  int error = 0;
  for (int attempt = 0; attempt < kMaxRandomAttempts && filled < nonce.size(); ++attempt) {
    const ssize_t n = ::read(fd, nonce.data() + filled, nonce.size() - filled);
    if (n > 0) {
      filled += static_cast<size_t>(n);
    } else if (n == 0) {
      break;  // end of file: a device that is not a random source
    } else if (errno != EINTR) {
      error = errno;
      break;
    }
  }
  ::close(fd);
  if (filled < nonce.size()) {
    return Unavailable("cannot read 16 bytes from " + source + " (got " + std::to_string(filled) +
                       (error != 0 ? "): " + ErrorText(error) : ")"));
  }
  return nonce;
}

Result<Nonce> FreshNonce() {
#if defined(__linux__)
  Nonce nonce{};
  size_t filled = 0;
  for (int attempt = 0; attempt < kMaxRandomAttempts && filled < nonce.size(); ++attempt) {
    const ssize_t n = ::getrandom(nonce.data() + filled, nonce.size() - filled, 0);
    const int error = n < 0 ? errno : 0;
    if (n > 0) {
      filled += static_cast<size_t>(n);
    } else if (error == ENOSYS) {
      return ReadNonceFrom("/dev/urandom");  // a kernel older than 3.17
    } else if (error != EINTR && error != 0) {
      return Unavailable("cannot read the kernel's random source: getrandom: " +
                         ErrorText(error));
    }
  }
  if (filled < nonce.size()) {
    return Unavailable("cannot read the kernel's random source: getrandom was interrupted " +
                       std::to_string(kMaxRandomAttempts) + " times");
  }
  return nonce;
#else
  return ReadNonceFrom("/dev/urandom");
#endif
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned difference = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    difference |= static_cast<unsigned>(x ^ y);
  }
  return difference == 0;
}

}  // namespace kdist
