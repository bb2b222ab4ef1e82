#include "config/clusters/ompi_uri.h"

#include "testing/random_text.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

TEST(OmpiHnpUri, ParsesIpv4Interfaces) {
  auto uri = ParseOmpiHnpUri("1531576320.0;tcp://10.96.0.1,10.148.0.1,10.108.0.1:34911");
  KDIST_ASSERT_OK(uri);
  EXPECT_EQ(uri->job_id, uint64_t{1531576320});
  EXPECT_EQ(uri->vpid, uint64_t{0});
  ASSERT_EQ(uri->addresses.size(), size_t{3});
  EXPECT_EQ(uri->addresses[0].ToString(), std::string("10.96.0.1:34911"));
  EXPECT_EQ(uri->addresses[2].ToString(), std::string("10.108.0.1:34911"));
}

TEST(OmpiHnpUri, ParsesIpv6AndMixedEntries) {
  auto v6 = ParseOmpiHnpUri(
      "1314521088.0;tcp6://[fe80::b9b:ac5d:9cf0:b858,2620:10d:c083:150e::3000:2]:43370");
  KDIST_ASSERT_OK(v6);
  ASSERT_EQ(v6->addresses.size(), size_t{2});
  EXPECT_EQ(v6->addresses[0].ToString(), std::string("[fe80::b9b:ac5d:9cf0:b858]:43370"));
  EXPECT_TRUE(v6->addresses[1].kind == HostKind::kIPv6);

  auto mixed = ParseOmpiHnpUri("7.1;usock://whatever;tcp6://[::1]:2;tcp://10.0.0.1:1");
  KDIST_ASSERT_OK(mixed);
  EXPECT_EQ(mixed->vpid, uint64_t{1});
  ASSERT_EQ(mixed->addresses.size(), size_t{2});
  EXPECT_EQ(mixed->addresses[0].ToString(), std::string("[::1]:2"));
  EXPECT_EQ(mixed->addresses[1].ToString(), std::string("10.0.0.1:1"));
}

TEST(OmpiHnpUri, RejectsMalformedValues) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "is empty"},
      {"1531576320;tcp://10.0.0.1:1", "has no '.' between job id and vpid"},
      {"x.0;tcp://10.0.0.1:1",
       "has job id \"x\", which is not a non-negative integer (has \"x\" at index 0 where a "
       "digit was expected)"},
      {"-5.0;tcp://10.0.0.1:1", "has job id \"-5\""},
      {" 5.0;tcp://10.0.0.1:1", "has job id \" 5\", which is not a non-negative integer"},
      {"5. 0;tcp://10.0.0.1:1", "has vpid \" 0\", which is not a non-negative integer"},
      {"5.0 ;tcp://10.0.0.1:1", "has vpid \"0 \", which is not a non-negative integer"},
      {"1234567890123456789.0;tcp://10.0.0.1:1", "(has more than 18 digits)"},
      {"5.;tcp://10.0.0.1:1", "has vpid \"\", which is not a non-negative integer (is empty)"},
      {"5.0", "has no tcp:// or tcp6:// URI"},
      {"5.0;usock://x", "has no tcp:// or tcp6:// URI"},
      {"5.0;garbage", "has \"garbage\", which is not a <transport>://... URI"},
      {"5.0;tcp://10.0.0.1", "has the URI \"tcp://10.0.0.1\" without a port"},
      {"5.0;tcp://10.0.0.1:http",
       "has the URI \"tcp://10.0.0.1:http\" whose port \"http\" is not a number; expected a "
       "port in 1..65535"},
      {"5.0;tcp://10.0.0.1:0",
       "whose port \"0\" would let the system pick a different port on each process"},
      {"5.0;tcp://10.0.0.1:70000", "whose port \"70000\" is out of range"},
      {"5.0;tcp://10.0.0.1:", "whose port \"\" is empty"},
      {"5.0;tcp://node1:1",
       "has the URI \"tcp://node1:1\" whose entry \"node1\" is not a valid IPv4 address (four "
       "numbers 0..255)"},
      {"5.0;tcp://10.0.0.1,:1", "whose entry \"\" is not a valid IPv4 address"},
      {"5.0;tcp://10.0.0.1 :1", "whose entry \"10.0.0.1 \" is not a valid IPv4 address"},
      {"5.0;tcp://10.0.0.1: 1", "whose port \" 1\" is not a number"},
      {"5.0;tcp6://fe80::1:1", "which is not tcp6://[<IPv6>[,<IPv6>...]]:<port>"},
      {"5.0;tcp6://[fe80::1]", "which is not tcp6://"},
      {"5.0;tcp6://[fe80::1]x1", "which is not tcp6://"},
      {"5.0;tcp6://[10.0.0.1]:1", "whose entry \"10.0.0.1\" is not a valid IPv6 address"},
      {"5.0;tcp6://[node1]:1", "whose entry \"node1\" is not a valid IPv6 address"},
      {"5.0;tcp6://", "which is not tcp6://"},
  };
  for (const auto& [text, reason] : cases) {
    KDIST_EXPECT_ERROR(ParseOmpiHnpUri(text), StatusCode::kInvalidArgument, reason);
  }
  KDIST_EXPECT_ERROR(ParseOmpiHnpUri("x"), StatusCode::kInvalidArgument,
                     "expected <job id>.<vpid>;tcp://");
  KDIST_EXPECT_ERROR(ParseOmpiHnpUri(std::string("5.0;tcp://10.0.0.1\0:1", 20)),
                     StatusCode::kInvalidArgument, "\\x00");
}

}  // namespace
}  // namespace kdist

namespace kdist {
namespace {

// Any bytes: a URI with at least one address, or an error; never a crash.
TEST(OmpiHnpUri, SurvivesArbitraryInput) {
  static constexpr char kAlphabet[] = "0123456789.;:/,[]tcp6fe:x\0 ";
  testing::RandomText random(0xd1b54a32d192ed03ull, std::string_view(kAlphabet, sizeof kAlphabet - 1));
  for (int round = 0; round < 20000; ++round) {
    const std::string text = (round % 2 ? "5.0;tcp://" : "5.0;tcp6://[") + random.Next(30);
    auto uri = ParseOmpiHnpUri(text);
    if (uri.ok()) {
      EXPECT_FALSE(uri->addresses.empty());
      for (const Address& a : uri->addresses) EXPECT_TRUE(a.port != 0);
    }
  }
}

TEST(PrrteNamespace, MpirunsForm) {
  Result<PrrteNamespace> ns = ParsePrrteNamespace("prterun-node-01-8504@1");
  KDIST_ASSERT_OK(ns);
  EXPECT_EQ(ns->host, std::string("node-01"));
  EXPECT_EQ(ns->pid, uint64_t{8504});
  EXPECT_EQ(ns->job, uint64_t{1});
  ns = ParsePrrteNamespace("prterun-n1.cluster.example-17@3");
  KDIST_ASSERT_OK(ns);
  EXPECT_EQ(ns->host, std::string("n1.cluster.example"));
}

TEST(PrrteNamespace, OtherFormsAreNotFound) {
  for (const char* text : {"", "prterun-", "prterun-host@1", "prterun--12@1", "prterun-h-x@1",
                           "prterun-h-12@", "prterun-h-12", "prte-h-12@1", "1304494081",
                           "prterun-bad host-12@1"}) {
    KDIST_EXPECT_ERROR(ParsePrrteNamespace(text), StatusCode::kNotFound,
                       "is not prterun-<host>-<pid>@<job>");
  }
}

}  // namespace
}  // namespace kdist
