#include "net/address.h"

#include "testing/status_matchers.h"

namespace kdist {
namespace {

TEST(Address, ParsesIpv4) {
  auto a = ParseAddress("10.0.0.1:1234");
  KDIST_ASSERT_OK(a);
  EXPECT_EQ(a->host, std::string("10.0.0.1"));
  EXPECT_EQ(a->port, 1234);
  EXPECT_TRUE(a->kind == HostKind::kIPv4);
  EXPECT_EQ(a->ToString(), std::string("10.0.0.1:1234"));
}

TEST(Address, ParsesBracketedIpv6) {
  auto a = ParseAddress("[::1]:65535");
  KDIST_ASSERT_OK(a);
  EXPECT_EQ(a->host, std::string("::1"));
  EXPECT_EQ(a->port, 65535);
  EXPECT_TRUE(a->kind == HostKind::kIPv6);
  EXPECT_EQ(a->ToString(), std::string("[::1]:65535"));
  KDIST_EXPECT_OK(ParseAddress("[fe80::1%eth0]:1"));
  KDIST_EXPECT_OK(ParseAddress("[2001:db8::8a2e:370:7334]:8476"));
}

TEST(Address, ParsesHostNames) {
  for (const char* text : {"localhost:1", "node-7.cluster.local:1234", "a:80", "x1.:22",
                           "trainer-0.trainer.default.svc.cluster.local:8476"}) {
    auto a = ParseAddress(text);
    KDIST_EXPECT_OK(a);
    if (a.ok()) EXPECT_TRUE(a->kind == HostKind::kName);
  }
}

TEST(Address, RejectsMissingOrEmptyParts) {
  KDIST_EXPECT_ERROR(ParseAddress(""), StatusCode::kInvalidArgument, "is empty");
  KDIST_EXPECT_ERROR(ParseAddress("   "), StatusCode::kInvalidArgument, "is empty");
  KDIST_EXPECT_ERROR(ParseAddress("10.0.0.1"), StatusCode::kInvalidArgument, "has no port");
  KDIST_EXPECT_ERROR(ParseAddress("10.0.0.1:"), StatusCode::kInvalidArgument, "empty port");
  KDIST_EXPECT_ERROR(ParseAddress(":1234"), StatusCode::kInvalidArgument, "no host");
  KDIST_EXPECT_ERROR(ParseAddress("[::1]"), StatusCode::kInvalidArgument, "has no port");
  KDIST_EXPECT_ERROR(ParseAddress("[::1"), StatusCode::kInvalidArgument, "without a closing");
  KDIST_EXPECT_ERROR(ParseAddress("[::1]1234"), StatusCode::kInvalidArgument, "after ']'");
}

TEST(Address, RejectsBadPorts) {
  KDIST_EXPECT_ERROR(ParseAddress("h:0"), StatusCode::kInvalidArgument,
                     "has port 0, which would let the system pick a different port on each "
                     "process; expected a port in 1..65535");
  KDIST_EXPECT_ERROR(ParseAddress("h:65536"), StatusCode::kInvalidArgument,
                     "port 65536, which is out of range");
  KDIST_EXPECT_ERROR(ParseAddress("h:99999"), StatusCode::kInvalidArgument, "out of range");
  KDIST_EXPECT_ERROR(ParseAddress("h:99999999999999999999999"), StatusCode::kInvalidArgument,
                     "out of range");
  KDIST_EXPECT_ERROR(ParseAddress("h:http"), StatusCode::kInvalidArgument,
                     "has port \"http\", which is not a number; expected a port in 1..65535");
  KDIST_EXPECT_ERROR(ParseAddress("h:-1"), StatusCode::kInvalidArgument, "not a number");
  KDIST_EXPECT_ERROR(ParseAddress("h:+1"), StatusCode::kInvalidArgument, "not a number");
  KDIST_EXPECT_ERROR(ParseAddress("h: 1"), StatusCode::kInvalidArgument,
                     "has port \" 1\", which is not a number");
}

TEST(Address, RejectsBadHosts) {
  KDIST_EXPECT_ERROR(ParseAddress("fe80::1:1234"), StatusCode::kInvalidArgument,
                     "IPv6 address without brackets");
  KDIST_EXPECT_ERROR(ParseAddress("::1:1234"), StatusCode::kInvalidArgument, "without brackets");
  KDIST_EXPECT_ERROR(ParseAddress("256.1.1.1:1"), StatusCode::kInvalidArgument,
                     "not a valid IPv4");
  KDIST_EXPECT_ERROR(ParseAddress("1.2.3:1"), StatusCode::kInvalidArgument, "not a valid IPv4");
  KDIST_EXPECT_ERROR(ParseAddress("bad_host:1"), StatusCode::kInvalidArgument,
                     "not a valid host name");
  KDIST_EXPECT_ERROR(ParseAddress("-node:1"), StatusCode::kInvalidArgument, "host name");
  KDIST_EXPECT_ERROR(ParseAddress("a..b:1"), StatusCode::kInvalidArgument, "host name");
  KDIST_EXPECT_ERROR(ParseAddress("h st:1"), StatusCode::kInvalidArgument, "host name");
  KDIST_EXPECT_ERROR(ParseAddress("[nonsense]:1"), StatusCode::kInvalidArgument,
                     "not a valid IPv6");
  KDIST_EXPECT_ERROR(ParseAddress("[10.0.0.1]:1"), StatusCode::kInvalidArgument,
                     "not a valid IPv6");
  KDIST_EXPECT_ERROR(ParseAddress(std::string(64, 'a') + ":1"), StatusCode::kInvalidArgument,
                     "host name");
}

TEST(Address, RejectsNulBytes) {
  // inet_pton reads a C string: without a check, "::1<NUL>junk" would pass as ::1.
  KDIST_EXPECT_ERROR(ParseAddress(std::string("[::1\0junk]:1", 12)),
                     StatusCode::kInvalidArgument,
                     "has a NUL byte (\\x00) at byte 4; expected host:port");
  KDIST_EXPECT_ERROR(ParseAddress(std::string("10.0.0.1\0:1", 11)), StatusCode::kInvalidArgument,
                     "has a NUL byte (\\x00) at byte 8; expected host:port");
  KDIST_EXPECT_ERROR(ParseAddress(std::string("node\0:1", 7)), StatusCode::kInvalidArgument,
                     "has a NUL byte (\\x00) at byte 4; expected host:port");
  KDIST_EXPECT_ERROR(ParseAddress(std::string("node:1\0", 7)), StatusCode::kInvalidArgument,
                     "has a NUL byte (\\x00) at byte 6; expected host:port");
  KDIST_EXPECT_ERROR(ParseHost(std::string("::1\0x", 5)), StatusCode::kInvalidArgument,
                     "has a NUL byte (\\x00) at byte 3; expected an IP address or a host name");
  KDIST_EXPECT_ERROR(ParseHost(std::string("1.2.3.4\0", 8)), StatusCode::kInvalidArgument,
                     "has a NUL byte (\\x00) at byte 7");
}

TEST(Address, ParseHostAloneTellsTheKind) {
  EXPECT_TRUE(*ParseHost("10.0.0.1") == HostKind::kIPv4);
  EXPECT_TRUE(*ParseHost("fe80::1%eth0") == HostKind::kIPv6);
  EXPECT_TRUE(*ParseHost("node-1.cluster") == HostKind::kName);
  KDIST_EXPECT_ERROR(ParseHost(""), StatusCode::kInvalidArgument,
                     "is empty; expected an IP address or a host name");
  KDIST_EXPECT_ERROR(ParseHost("[::1]"), StatusCode::kInvalidArgument,
                     "is not a valid IPv6 address");
  KDIST_EXPECT_ERROR(ParseHost("300.1.1.1"), StatusCode::kInvalidArgument,
                     "is not a valid IPv4 address (four numbers 0..255)");
  KDIST_EXPECT_ERROR(ParseHost("gpu_a01"), StatusCode::kInvalidArgument,
                     "is not a valid host name (dot-separated labels");
  KDIST_EXPECT_ERROR(ParseHost(" node"), StatusCode::kInvalidArgument, "is not a valid host name");
}

TEST(Address, ParsePortAloneIsStrict) {
  EXPECT_EQ(*ParsePort("1"), 1);
  EXPECT_EQ(*ParsePort("65535"), 65535);
  KDIST_EXPECT_ERROR(ParsePort(""), StatusCode::kInvalidArgument,
                     "is empty; expected a port in 1..65535");
  KDIST_EXPECT_ERROR(ParsePort(" 80 "), StatusCode::kInvalidArgument,
                     "is not a number; expected a port in 1..65535");
  KDIST_EXPECT_ERROR(ParsePort("+80"), StatusCode::kInvalidArgument, "is not a number");
  KDIST_EXPECT_ERROR(ParsePort("65536"), StatusCode::kInvalidArgument,
                     "is out of range; expected a port in 1..65535");
  KDIST_EXPECT_ERROR(ParsePort("0"), StatusCode::kInvalidArgument,
                     "would let the system pick a different port on each process; expected a "
                     "port in 1..65535");
}

TEST(Address, HostNameLimits) {
  EXPECT_TRUE(IsValidHostName(std::string(63, 'a')));
  EXPECT_FALSE(IsValidHostName(std::string(64, 'a')));
  std::string long_name;
  for (int i = 0; i < 64; ++i) long_name += "abc.";
  long_name.pop_back();
  EXPECT_FALSE(IsValidHostName(long_name));  // 255 characters
  EXPECT_FALSE(IsValidHostName(""));
  EXPECT_FALSE(IsValidHostName("."));
}

TEST(Address, ParsesLists) {
  auto list = ParseAddressList("10.0.0.1:1234, 10.0.0.2:2345,[::1]:3");
  KDIST_ASSERT_OK(list);
  ASSERT_EQ(list->size(), size_t{3});
  EXPECT_EQ((*list)[1].ToString(), std::string("10.0.0.2:2345"));
  EXPECT_EQ((*list)[2].ToString(), std::string("[::1]:3"));
}

TEST(Address, ListNamesTheBadEntry) {
  KDIST_EXPECT_ERROR(ParseAddressList("a:1,,b:2"), StatusCode::kInvalidArgument,
                     "entry 2 of 3 is empty");
  KDIST_EXPECT_ERROR(ParseAddressList("a:1,b:x"), StatusCode::kInvalidArgument,
                     "entry 2 of 2 (\"b:x\") has port");
  KDIST_EXPECT_ERROR(ParseAddressList("a:1,"), StatusCode::kInvalidArgument, "entry 2 of 2 is empty");
  KDIST_EXPECT_ERROR(ParseAddressList(""), StatusCode::kInvalidArgument, "is empty");
  KDIST_EXPECT_ERROR(ParseAddressList("a"), StatusCode::kInvalidArgument, "has no port");
}

}  // namespace
}  // namespace kdist
