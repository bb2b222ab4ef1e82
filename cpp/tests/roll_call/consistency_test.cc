#include "roll_call/consistency.h"

#include <string>

#include "roll_call/own_id_arguments.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

Fingerprint Own() {
  return {{"jax", "0.10.2", true},
          {"python", "3.11.7", false},
          {"XLA_FLAGS", "unset", false}};
}

Fingerprint With(std::string jax, std::string python = "3.11.7", std::string xla = "unset") {
  return {{"jax", std::move(jax), false}, {"python", std::move(python), false},
          {"XLA_FLAGS", std::move(xla), false}};
}

std::string HostOf(int64_t id) { return "node-" + std::to_string(id); }

TEST(FingerprintWire, RoundTripsInOrder) {
  Fingerprint f = {{"jax", "0.10.2", true}, {"XLA_FLAGS", std::string(1024, 'x'), false},
                   {"arguments", "", false}};
  Result<Fingerprint> back = DecodeFingerprint(EncodeFingerprint(f));
  KDIST_ASSERT_OK(back);
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[1].value, f[1].value);
  EXPECT_EQ((*back)[2].name, "arguments");
  EXPECT_FALSE((*back)[0].must_match);  // process 0's view decides
  Result<Fingerprint> empty = DecodeFingerprint("");
  KDIST_ASSERT_OK(empty);
  EXPECT_TRUE(empty->empty());
}

TEST(FingerprintWire, RefusesWhatIsMalformed) {
  const std::string good = EncodeFingerprint({{"jax", "1", false}});
  KDIST_EXPECT_ERROR(DecodeFingerprint(good.substr(0, good.size() - 1)),
                     StatusCode::kInvalidArgument, "malformed");
  KDIST_EXPECT_ERROR(DecodeFingerprint(std::string(1, '\0')), StatusCode::kInvalidArgument,
                     "malformed at byte 0");
  KDIST_EXPECT_ERROR(DecodeFingerprint(good + good), StatusCode::kInvalidArgument,
                     "names \"jax\" twice");
  KDIST_EXPECT_ERROR(ValidateFingerprint({{"XLA_FLAGS", std::string(1025, 'x'), false}}),
                     StatusCode::kInvalidArgument, "1025 bytes; at most 1024");
}

TEST(ConsistencyCheck, AgreeingProcessesPassWithNothingToSay) {
  ConsistencyCheck check(Own(), ConsistencyPolicy::kWarn);
  for (int64_t id = 1; id < 4; ++id) KDIST_EXPECT_OK(check.Add(id, With("0.10.2"), HostOf));
  EXPECT_EQ(check.Differences(HostOf), "");
  EXPECT_EQ(check.Compared(), (std::vector<std::string>{"jax", "python", "XLA_FLAGS"}));
}

TEST(ConsistencyCheck, AMustMatchDifferenceFailsWithTheTable) {
  ConsistencyCheck check(Own(), ConsistencyPolicy::kWarn);
  KDIST_EXPECT_OK(check.Add(2, With("0.10.2"), HostOf));
  KDIST_EXPECT_OK(check.Add(3, With("0.10.2"), HostOf));
  const Status failed = check.Add(1, With("0.9.0"), HostOf);
  KDIST_EXPECT_ERROR(failed, StatusCode::kFailedPrecondition,
                     "the processes cannot work together:\n  jax: \"0.10.2\" in processes 0, 2-3 "
                     "on hosts node-[0,2-3]; \"0.9.0\" in process 1 on host node-1\n");
  KDIST_EXPECT_ERROR(failed, StatusCode::kFailedPrecondition, "Install the same jax and jaxlib");
}

TEST(ConsistencyCheck, ATlsDifferenceFailsNamingWhatMakesTheTlsTheSame) {
  Fingerprint own = Own();
  own.push_back({"tls", "on: kdist's certificates for attempt 0", true});
  ConsistencyCheck check(own, ConsistencyPolicy::kWarn);
  Fingerprint theirs = With("0.10.2");
  theirs.push_back({"tls", "off: KDIST_TLS=\"off\"", false});
  const Status failed = check.Add(1, theirs, HostOf);
  KDIST_EXPECT_ERROR(failed, StatusCode::kFailedPrecondition,
                     "tls: \"on: kdist's certificates for attempt 0\" in process 0 on host "
                     "node-0; \"off: KDIST_TLS=\\\"off\\\"\" in process 1 on host node-1\n"
                     "Give every process the same TLS for JAX's coordination service");
  EXPECT_EQ(failed.message().find("Install the same jax"), std::string::npos);
  // With the versions too: both remedies.
  ConsistencyCheck both(own, ConsistencyPolicy::kWarn);
  theirs[0].value = "0.9.0";
  const Status twice = both.Add(1, theirs, HostOf);
  KDIST_EXPECT_ERROR(twice, StatusCode::kFailedPrecondition,
                     "Install the same jax and jaxlib, and give every process the same kind and "
                     "number of devices, on every host; Give every process the same TLS");
}

TEST(ConsistencyCheck, OtherDifferencesAreWarningsUnderWarn) {
  ConsistencyCheck check(Own(), ConsistencyPolicy::kWarn);
  KDIST_EXPECT_OK(check.Add(1, With("0.10.2", "3.12.1"), HostOf));
  KDIST_EXPECT_OK(check.Add(2, With("0.10.2", "3.11.7", "--xla_cpu_fast_math"), HostOf));
  KDIST_EXPECT_OK(check.Add(3, With("0.10.2", "3.12.1"), HostOf));
  EXPECT_EQ(check.Differences(HostOf),
            "python: \"3.11.7\" in processes 0, 2 on hosts node-[0,2]; \"3.12.1\" in processes "
            "1, 3 on hosts node-[1,3]\n"
            "XLA_FLAGS: \"unset\" in processes 0-1, 3 on hosts node-[0-1,3]; "
            "\"--xla_cpu_fast_math\" in process 2 on host node-2");
}

TEST(ConsistencyCheck, StrictFailsOnAnyDifference) {
  ConsistencyCheck check(Own(), ConsistencyPolicy::kStrict);
  KDIST_EXPECT_ERROR(check.Add(1, With("0.10.2", "3.11.7", "--xla_x"), HostOf),
                     StatusCode::kFailedPrecondition,
                     "cannot work together under KDIST_CONSISTENCY=strict:\n  XLA_FLAGS:");
}

TEST(ConsistencyCheck, ArgumentsThatDifferOnlyByEachProcesssOwnIdPassEvenUnderStrict) {
  // --worker_id=0 in process 0, --worker_id=1 and =2 in processes 1 and 2
  // (roll_call/own_id_arguments.h); process 3 has --lr=0.2 where process 0 has --lr=0.1.
  Fingerprint own = {{"arguments", "sha256:aaaaaaaaaaaaaaaa =1 6b86b273", false}};
  ConsistencyCheck check(own, ConsistencyPolicy::kStrict);
  KDIST_EXPECT_OK(check.Add(1, {{"arguments", "sha256:aaaaaaaaaaaaaaaa =1 6b86b273"}}, HostOf));
  KDIST_EXPECT_OK(check.Add(2, {{"arguments", "sha256:aaaaaaaaaaaaaaaa =1 6b86b273"}}, HostOf));
  EXPECT_EQ(check.Differences(HostOf), "");
  KDIST_EXPECT_ERROR(
      check.Add(3, {{"arguments", "sha256:aaaaaaaaaaaaaaaa 5feceb66 d4735e3a"}}, HostOf),
      StatusCode::kFailedPrecondition, "processes 0-2 on hosts node-[0-2]; ");
}

TEST(ConsistencyCheck, OnlyTheArgumentsEntryKnowsOwnIds) {
  Fingerprint own = {{"script", "sha256:aaaaaaaaaaaaaaaa =1", false}};
  ConsistencyCheck check(own, ConsistencyPolicy::kWarn);
  // What the rule would take for process 10's own id, in another entry: a difference.
  ASSERT_TRUE(DifferOnlyByOwnIds("sha256:aaaaaaaaaaaaaaaa =1", 0, "sha256:aaaaaaaaaaaaaaaa =2", 10));
  KDIST_EXPECT_OK(check.Add(10, {{"script", "sha256:aaaaaaaaaaaaaaaa =2"}}, HostOf));
  EXPECT_NE(check.Differences(HostOf), "");
}

TEST(ConsistencyCheck, OffComparesNothing) {
  ConsistencyCheck check(Own(), ConsistencyPolicy::kOff);
  KDIST_EXPECT_OK(check.Add(1, With("0.1"), HostOf));
  EXPECT_EQ(check.Differences(HostOf), "");
  EXPECT_TRUE(check.Compared().empty());
}

TEST(ConsistencyCheck, AnEntryNotSentIsADifference) {
  ConsistencyCheck check(Own(), ConsistencyPolicy::kWarn);
  KDIST_EXPECT_ERROR(check.Add(1, {{"python", "3.11.7", false}}, HostOf),
                     StatusCode::kFailedPrecondition, "(not sent) in process 1 on host node-1");
}

TEST(ConsistencyCheck, AProcessThatLeftIsForgotten) {
  ConsistencyCheck check(Own(), ConsistencyPolicy::kWarn);
  KDIST_EXPECT_OK(check.Add(1, With("0.10.2", "3.12.1"), HostOf));
  check.Remove(1);
  KDIST_EXPECT_OK(check.Add(1, With("0.10.2"), HostOf));
  EXPECT_EQ(check.Differences(HostOf), "");
}

TEST(ConsistencyCheck, SixteenThousandProcessesStayReadable) {
  ConsistencyCheck check(Own(), ConsistencyPolicy::kWarn);
  const auto host = [](int64_t id) {
    char name[16];
    std::snprintf(name, sizeof name, "node-%04lld", static_cast<long long>(id / 8));
    return std::string(name);
  };
  for (int64_t id = 1; id < 16384; ++id) {
    KDIST_EXPECT_OK(check.Add(id, With("0.10.2", id >= 8192 ? "3.12.1" : "3.11.7"), host));
  }
  EXPECT_EQ(check.Differences(host),
            "python: \"3.11.7\" in processes 0-8191 on hosts node-[0000-1023]; \"3.12.1\" in "
            "processes 8192-16383 on hosts node-[1024-2047]");
}

}  // namespace
}  // namespace kdist
