#include "rendezvous/etcd_address.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

TEST(EtcdAddress, EndpointsWithTheirSchemesAndThePrefix) {
  Result<EtcdPlace> place =
      ParseEtcdRendezvous("etcd://https://etcd-a:2379,10.0.0.2:2379,http://[::1]:2379/team-a/jobs/");
  KDIST_ASSERT_OK(place);
  ASSERT_EQ(place->endpoints.size(), 3u);
  EXPECT_TRUE(place->endpoints[0].tls);
  EXPECT_EQ(place->endpoints[0].Url(), "https://etcd-a:2379");
  EXPECT_FALSE(place->endpoints[1].tls);
  EXPECT_EQ(place->endpoints[1].Url(), "http://10.0.0.2:2379");
  EXPECT_EQ(place->endpoints[2].Url(), "http://[::1]:2379");
  EXPECT_EQ(place->prefix, "team-a/jobs");
  EXPECT_FALSE(place->loopback);
  EXPECT_EQ(place->ToString(),
            "etcd://https://etcd-a:2379,http://10.0.0.2:2379,http://[::1]:2379/team-a/jobs");
}

TEST(EtcdAddress, TheDefaultPrefixAndLoopback) {
  Result<EtcdPlace> place = ParseEtcdRendezvous("etcd://127.0.0.1:2379,localhost:22379");
  KDIST_ASSERT_OK(place);
  EXPECT_EQ(place->prefix, "kdist");
  EXPECT_TRUE(place->loopback);
  EXPECT_TRUE(IsEtcdRendezvous("etcd://x"));
  EXPECT_FALSE(IsEtcdRendezvous("10.0.0.1:29400"));
}

TEST(EtcdAddress, MalformedListsAreNamed) {
  for (const char* text : {"etcd://", "etcd://10.0.0.1:2379,,10.0.0.2:2379", "etcd://10.0.0.1",
                           "etcd://10.0.0.1:2379/a//b", "etcd://10.0.0.1:2379/a b",
                           "etcd://ftp://10.0.0.1:2379", "10.0.0.1:2379"}) {
    Result<EtcdPlace> place = ParseEtcdRendezvous(text);
    EXPECT_EQ(place.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(place.status().message().find("etcd://"), std::string::npos)
        << text << ": " << place.status().message();
  }
}

}  // namespace
}  // namespace kdist
