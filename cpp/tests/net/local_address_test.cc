#include "net/local_address.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

using std::chrono::seconds;

TEST(LocalAddress, LoopbackAddressesAreKnownAsSuch) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackAddress("127.0.1.1"));  // a stock Debian host name's address
  EXPECT_TRUE(IsLoopbackAddress("::1"));
  EXPECT_TRUE(IsLoopbackAddress("::ffff:127.0.0.1"));
  EXPECT_FALSE(IsLoopbackAddress("10.0.0.2"));
  EXPECT_FALSE(IsLoopbackAddress("fd00::2"));
  EXPECT_FALSE(IsLoopbackAddress("localhost"));  // not an IP literal
}

TEST(LocalAddress, TheRouteToLoopbackLeavesFromLoopback) {
  Result<Endpoint> destination = EndpointFromLiteral("127.0.0.1", 0);
  KDIST_ASSERT_OK(destination);
  Result<std::string> local = SourceAddressToward(*destination);
  KDIST_ASSERT_OK(local);
  EXPECT_EQ(*local, "127.0.0.1");
}

TEST(LocalAddress, TheRouteToAnAddressGivenWithAPortStaysOnItsNetwork) {
  RealClock clock;
  Result<std::string> local =
      LocalAddressToward(Address{"127.0.0.5", 1234, HostKind::kIPv4}, seconds(1), clock);
  KDIST_ASSERT_OK(local);
  EXPECT_TRUE(IsLoopbackAddress(*local)) << *local;  // the kernel picks lo's own, 127.0.0.1
}

TEST(LocalAddress, LocalhostResolvesWithinTheTimeout) {
  RealClock clock;
  Result<std::vector<std::string>> addresses = HostAddresses("localhost", seconds(2), clock);
  KDIST_ASSERT_OK(addresses);
  ASSERT_FALSE(addresses->empty());
  for (const std::string& ip : *addresses) EXPECT_TRUE(IsLoopbackAddress(ip)) << ip;
}

TEST(LocalAddress, AnIpLiteralResolvesToItself) {
  RealClock clock;
  Result<std::vector<std::string>> addresses = HostAddresses("10.1.2.3", seconds(1), clock);
  KDIST_ASSERT_OK(addresses);
  EXPECT_EQ(*addresses, std::vector<std::string>{"10.1.2.3"});
}

TEST(LocalAddress, ThisHostsAddressesPassTheCheck) {
  KDIST_EXPECT_OK(CheckLocalAddress("127.0.0.1"));
}

TEST(LocalAddress, AnotherHostsAddressIsNamed) {
  // 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never an address of this host.
  const Status status = CheckLocalAddress("192.0.2.7");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "192.0.2.7 is not an address of this host");
}

TEST(LocalAddress, AHostNameIsNotAnAddress) {
  const Status status = CheckLocalAddress("node-1");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "\"node-1\" is not an IP address");
}

TEST(LocalAddress, TheLoopbackInterfaceHasItsAddress) {
  Result<std::string> address = InterfaceAddress("lo");
  KDIST_ASSERT_OK(address);
  EXPECT_EQ(*address, "127.0.0.1");
}

TEST(LocalAddress, AMissingInterfaceIsNamed) {
  Result<std::string> address = InterfaceAddress("kdistnone0");
  EXPECT_EQ(address.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(address.status().message(), "this host has no network interface \"kdistnone0\"");
}

}  // namespace
}  // namespace kdist
