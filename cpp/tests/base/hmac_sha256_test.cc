#include "base/hmac_sha256.h"

#include <string>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

std::string Hex(const uint8_t* data, size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < size; ++i) {
    out += kHex[data[i] >> 4];
    out += kHex[data[i] & 0xf];
  }
  return out;
}

std::string Hex(const Sha256Digest& digest) { return Hex(digest.data(), digest.size()); }

// Bytes from hex, for the RFC 4231 keys and data.
std::string Bytes(std::string_view hex) {
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(nibble(hex[i]) * 16 + nibble(hex[i + 1]));
  }
  return out;
}

// --- SHA-256: the examples of FIPS 180-2 (appendix B) and NIST's CAVP set ---

TEST(Sha256, EmptyString) {
  EXPECT_EQ(Hex(ComputeSha256("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, Abc) {
  EXPECT_EQ(Hex(ComputeSha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, TwoBlockMessageOf448Bits) {
  EXPECT_EQ(Hex(ComputeSha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, MessageOf896Bits) {
  EXPECT_EQ(Hex(ComputeSha256("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
                              "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu")),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, OneMillionAs) {
  EXPECT_EQ(Hex(ComputeSha256(std::string(1000000, 'a'))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, OneMillionAsInPiecesOf1000) {
  const std::string piece(1000, 'a');
  Sha256 hash;
  for (int i = 0; i < 1000; ++i) hash.Update(piece);
  EXPECT_EQ(Hex(hash.Finish()),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// The padding's edge cases: 55 bytes is the longest message whose length
// still fits in its block, 56 needs a second block, 64 is exactly one block.
// (Digests cross-checked with Python's hashlib.)
TEST(Sha256, LengthsAroundTheBlockBoundary) {
  const std::pair<size_t, const char*> cases[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
  };
  for (const auto& [length, want] : cases) {
    EXPECT_EQ(Hex(ComputeSha256(std::string(length, 'a'))), want) << length << " bytes";
  }
}

TEST(Sha256, IncrementalSplitAtEveryOffsetGivesTheOneShotDigest) {
  // 200 bytes of varied content: more than three blocks, so splits fall
  // before, inside and after block boundaries.
  std::string message;
  for (int i = 0; i < 200; ++i) message += static_cast<char>((i * 37 + 11) & 0xff);
  const Sha256Digest want = ComputeSha256(message);
  for (size_t split = 0; split <= message.size(); ++split) {
    Sha256 hash;
    hash.Update(std::string_view(message).substr(0, split));
    hash.Update(std::string_view(message).substr(split));
    EXPECT_EQ(Hex(hash.Finish()), Hex(want)) << "split at " << split;
  }
}

TEST(Sha256, ByteAtATimeAndEmptyUpdatesChangeNothing) {
  const std::string message = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  Sha256 hash;
  for (char c : message) {
    hash.Update("");
    hash.Update(std::string_view(&c, 1));
  }
  EXPECT_EQ(Hex(hash.Finish()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, FinishStartsANewMessage) {
  Sha256 hash;
  hash.Update("first message");
  (void)hash.Finish();
  hash.Update("abc");
  EXPECT_EQ(Hex(hash.Finish()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Hex(hash.Finish()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

// --- HMAC-SHA-256: the seven test cases of RFC 4231, section 4 ---

TEST(HmacSha256, Rfc4231Case1) {
  EXPECT_EQ(Hex(ComputeHmacSha256(std::string(20, '\x0b'), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

TEST(HmacSha256, Rfc4231Case2KeyShorterThanTheOutput) {
  EXPECT_EQ(Hex(ComputeHmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(HmacSha256, Rfc4231Case3) {
  EXPECT_EQ(Hex(ComputeHmacSha256(std::string(20, '\xaa'), std::string(50, '\xdd'))),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
}

TEST(HmacSha256, Rfc4231Case4) {
  EXPECT_EQ(Hex(ComputeHmacSha256(Bytes("0102030405060708090a0b0c0d0e0f10111213141516171819"),
                                  std::string(50, '\xcd'))),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
}

TEST(HmacSha256, Rfc4231Case5TruncatedTo128Bits) {
  const Sha256Digest mac = ComputeHmacSha256(std::string(20, '\x0c'), "Test With Truncation");
  EXPECT_EQ(Hex(mac.data(), 16), "a3b6167473100ee06e0c796c2955552b");
}

TEST(HmacSha256, Rfc4231Case6KeyLargerThanABlock) {
  EXPECT_EQ(Hex(ComputeHmacSha256(std::string(131, '\xaa'),
                                  "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(HmacSha256, Rfc4231Case7KeyAndDataLargerThanABlock) {
  EXPECT_EQ(Hex(ComputeHmacSha256(
                std::string(131, '\xaa'),
                "This is a test using a larger than block-size key and a larger than block-size "
                "data. The key needs to be hashed before being used by the HMAC algorithm.")),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

// A key of exactly one block is used as is; one byte more and it is hashed
// first. (Cross-checked with Python's hmac.)
TEST(HmacSha256, KeysOfOneBlockAndOneByteMore) {
  EXPECT_EQ(Hex(ComputeHmacSha256(std::string(64, 'k'), "message")),
            "890f3a16e0ca0aaa3bf180f70fa8e3970b3fd6505e98fde157988dcc19d1685c");
  EXPECT_EQ(Hex(ComputeHmacSha256(std::string(65, 'k'), "message")),
            "0c256505306af48015530c139bb7add5ad7a6a9291cd511278a067e765816fbd");
}

TEST(HmacSha256, KeyLongerThanABlockEqualsItsHashAsKey) {
  const std::string key(131, '\xaa');
  const Sha256Digest hashed = ComputeSha256(key);
  EXPECT_EQ(Hex(ComputeHmacSha256(key, "hello")),
            Hex(ComputeHmacSha256(DigestBytes(hashed), "hello")));
}

TEST(HmacSha256, IncrementalNonceThenHelloEqualsOneShotOverTheConcatenation) {
  const std::string key = "the job's token";
  const std::string nonce = Bytes("00112233445566778899aabbccddeeff");
  const std::string hello = "{\"process_id\": 3, \"num_processes\": 16384}";
  HmacSha256 mac(key);
  mac.Update(nonce);
  mac.Update(hello);
  EXPECT_EQ(Hex(mac.Finish()), Hex(ComputeHmacSha256(key, nonce + hello)));
}

TEST(HmacSha256, IncrementalSplitAtEveryOffsetGivesTheOneShotMac) {
  const std::string key = "k";
  std::string message;
  for (int i = 0; i < 150; ++i) message += static_cast<char>((i * 53 + 7) & 0xff);
  const std::string want = Hex(ComputeHmacSha256(key, message));
  for (size_t split = 0; split <= message.size(); ++split) {
    HmacSha256 mac(key);
    mac.Update(std::string_view(message).substr(0, split));
    mac.Update(std::string_view(message).substr(split));
    EXPECT_EQ(Hex(mac.Finish()), want) << "split at " << split;
  }
}

TEST(HmacSha256, FinishStartsANewMessageUnderTheSameKey) {
  HmacSha256 mac("Jefe");
  mac.Update("something else");
  (void)mac.Finish();
  mac.Update("what do ya want for nothing?");
  EXPECT_EQ(Hex(mac.Finish()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(HmacSha256, DifferentKeysOrMessagesGiveDifferentMacs) {
  const Sha256Digest base = ComputeHmacSha256("token", "nonce+hello");
  EXPECT_FALSE(MacEqual(base, ComputeHmacSha256("token2", "nonce+hello")));
  EXPECT_FALSE(MacEqual(base, ComputeHmacSha256("token", "nonce+hellp")));
  // The key is not the message: HMAC is not a hash of their concatenation.
  EXPECT_FALSE(MacEqual(base, ComputeSha256("tokennonce+hello")));
}

// --- MacEqual ---

TEST(MacEqual, EqualValuesAreEqual) {
  const Sha256Digest a = ComputeSha256("abc");
  const Sha256Digest b = ComputeSha256("abc");
  EXPECT_TRUE(MacEqual(a, a));
  EXPECT_TRUE(MacEqual(a, b));
  EXPECT_TRUE(MacEqual(Sha256Digest{}, Sha256Digest{}));
}

TEST(MacEqual, DifferentValuesAreNot) {
  EXPECT_FALSE(MacEqual(ComputeSha256("abc"), ComputeSha256("abd")));
}

TEST(MacEqual, OneByteOrOneBitDifferentAnywhereIsNotEqual) {
  const Sha256Digest a = ComputeSha256("abc");
  for (size_t i = 0; i < a.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      Sha256Digest b = a;
      b[i] = static_cast<uint8_t>(b[i] ^ (1u << bit));
      EXPECT_FALSE(MacEqual(a, b)) << "byte " << i << " bit " << bit;
      EXPECT_FALSE(MacEqual(b, a)) << "byte " << i << " bit " << bit;
    }
  }
}

TEST(MacEqual, BytesOffTheWire) {
  const Sha256Digest a = ComputeSha256("abc");
  const std::string wire(DigestBytes(a));
  EXPECT_TRUE(MacEqual(DigestBytes(a), wire));
  EXPECT_FALSE(MacEqual(DigestBytes(a), wire.substr(0, 31)));  // shorter
  EXPECT_FALSE(MacEqual(DigestBytes(a), wire + "x"));           // longer
  EXPECT_FALSE(MacEqual(DigestBytes(a), ""));
  EXPECT_TRUE(MacEqual("", ""));
  std::string flipped = wire;
  flipped[31] = static_cast<char>(flipped[31] ^ 0x80);
  EXPECT_FALSE(MacEqual(DigestBytes(a), flipped));
}

// --- Nonces ---

TEST(FreshNonce, TwoNoncesDiffer) {
  const Result<Nonce> a = FreshNonce();
  const Result<Nonce> b = FreshNonce();
  KDIST_ASSERT_OK(a);
  KDIST_ASSERT_OK(b);
  EXPECT_NE(Hex(a->data(), a->size()), Hex(b->data(), b->size()));
}

TEST(FreshNonce, IsNotAllZeros) {
  // A source that filled nothing would leave zeros: 2^-128 to happen by chance.
  const Result<Nonce> nonce = FreshNonce();
  KDIST_ASSERT_OK(nonce);
  EXPECT_NE(*nonce, Nonce{});
}

TEST(ReadNonceFrom, DevUrandomGivesDifferentNonces) {
  const Result<Nonce> a = ReadNonceFrom("/dev/urandom");
  const Result<Nonce> b = ReadNonceFrom("/dev/urandom");
  KDIST_ASSERT_OK(a);
  KDIST_ASSERT_OK(b);
  EXPECT_NE(*a, *b);
}

TEST(ReadNonceFrom, MissingDeviceIsUnavailableAndSaysWhy) {
  KDIST_EXPECT_ERROR(ReadNonceFrom("/nonexistent/kdist-random"), StatusCode::kUnavailable,
                     "cannot open the random device /nonexistent/kdist-random: no such file");
}

TEST(ReadNonceFrom, DeviceThatEndsEarlyIsUnavailable) {
  KDIST_EXPECT_ERROR(ReadNonceFrom("/dev/null"), StatusCode::kUnavailable,
                     "cannot read 16 bytes from the random device /dev/null (got 0)");
}

TEST(ConstantTimeEquals, DependsOnTheBytesNotTheTime) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("secret", "secret"));
  EXPECT_FALSE(ConstantTimeEquals("secret", "secreT"));
  EXPECT_FALSE(ConstantTimeEquals("secret", ""));
  EXPECT_FALSE(ConstantTimeEquals("", "x"));
  EXPECT_FALSE(ConstantTimeEquals(std::string_view("a\0", 2), "a"));
}

}  // namespace
}  // namespace kdist
