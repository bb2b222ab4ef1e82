#include "base/hkdf_sha256.h"

#include <string>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

std::string Hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
  }
  return out;
}

// Bytes `from`, `from + 1`, ... `to` (the RFC's inputs).
std::string ByteRun(int from, int to) {
  std::string out;
  for (int c = from; c <= to; ++c) out += static_cast<char>(c);
  return out;
}

// --- RFC 5869, appendix A: the three SHA-256 cases ---

TEST(HkdfSha256, Rfc5869Case1) {
  Result<std::string> okm = HkdfSha256(std::string(22, '\x0b'), ByteRun(0x00, 0x0c), ByteRun(0xf0, 0xf9), 42);
  KDIST_ASSERT_OK(okm);
  EXPECT_EQ(Hex(*okm),
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865");
}

TEST(HkdfSha256, Rfc5869Case2LongerInputsAndOutput) {
  Result<std::string> okm = HkdfSha256(ByteRun(0x00, 0x4f), ByteRun(0x60, 0xaf), ByteRun(0xb0, 0xff), 82);
  KDIST_ASSERT_OK(okm);
  EXPECT_EQ(Hex(*okm),
            "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271"
            "cb41c65e590e09da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87");
}

TEST(HkdfSha256, Rfc5869Case3EmptySaltAndInfo) {
  Result<std::string> okm = HkdfSha256(std::string(22, '\x0b'), "", "", 42);
  KDIST_ASSERT_OK(okm);
  EXPECT_EQ(Hex(*okm),
            "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8");
}

TEST(HkdfSha256, AnotherInfoGivesAnotherKey) {
  Result<std::string> a = HkdfSha256("token", "salt", "attempt 0", 32);
  Result<std::string> b = HkdfSha256("token", "salt", "attempt 1", 32);
  KDIST_ASSERT_OK(a);
  KDIST_ASSERT_OK(b);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(a->size(), 32u);
}

TEST(HkdfSha256, RefusesAnEmptyOrTooLongOutput) {
  KDIST_EXPECT_ERROR(HkdfSha256("k", "", "", 0), StatusCode::kInvalidArgument,
                     "expected 1 to 8160 bytes");
  KDIST_EXPECT_ERROR(HkdfSha256("k", "", "", kMaxHkdfSha256Bytes + 1),
                     StatusCode::kInvalidArgument, "HKDF-SHA-256 length 8161");
  KDIST_EXPECT_OK(HkdfSha256("k", "", "", kMaxHkdfSha256Bytes));
}

}  // namespace
}  // namespace kdist
