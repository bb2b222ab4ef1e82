#include "resolve.h"

#include "testing/check.h"

namespace kdist {
namespace {

Request Args(std::optional<std::string> addresses, std::optional<std::string> count,
             std::optional<std::string> id) {
  Request request;
  request.job_addresses = std::move(addresses);
  request.num_processes = std::move(count);
  request.process_id = std::move(id);
  return request;
}

KDIST_TEST(Resolve, ArgumentsOnly) {
  auto spec = Resolve(Args("10.0.0.1:1234", "2", "1"), {});
  KDIST_ASSERT_OK(spec);
  KDIST_EXPECT_EQ(spec->coordinator()->ToString(), std::string("10.0.0.1:1234"));
  KDIST_EXPECT_EQ(spec->num_processes.value, int64_t{2});
  KDIST_EXPECT_EQ(spec->num_processes.source, std::string("argument"));
  KDIST_EXPECT_EQ(spec->process_id.value, int64_t{1});
  KDIST_EXPECT_EQ(spec->timeout_seconds.value, 300.0);
  KDIST_EXPECT_EQ(spec->timeout_seconds.source, std::string("default"));
  KDIST_EXPECT_TRUE(spec->preflight.value);
  KDIST_EXPECT_EQ(spec->cluster_detection.value, std::string("auto"));
}

KDIST_TEST(Resolve, EnvironmentFillsWhatArgumentsLeaveOut) {
  Environment env{{"KERAS_DISTRIBUTION_JOB_ADDRESSES", "h:1"},
                  {"KERAS_DISTRIBUTION_NUM_PROCESSES", "4"},
                  {"KERAS_DISTRIBUTION_PROCESS_ID", "3"},
                  {"KDIST_INIT_TIMEOUT", "2.5"},
                  {"KDIST_PREFLIGHT", "off"}};
  auto spec = Resolve(Args(std::nullopt, std::nullopt, "2"), env);
  KDIST_ASSERT_OK(spec);
  KDIST_EXPECT_EQ(spec->job_addresses.source, std::string("KERAS_DISTRIBUTION_JOB_ADDRESSES"));
  KDIST_EXPECT_EQ(spec->num_processes.value, int64_t{4});
  KDIST_EXPECT_EQ(spec->num_processes.source, std::string("KERAS_DISTRIBUTION_NUM_PROCESSES"));
  KDIST_EXPECT_EQ(spec->process_id.value, int64_t{2});
  KDIST_EXPECT_EQ(spec->process_id.source, std::string("argument"));
  KDIST_EXPECT_EQ(spec->timeout_seconds.value, 2.5);
  KDIST_EXPECT_EQ(spec->timeout_seconds.source, std::string("KDIST_INIT_TIMEOUT"));
  KDIST_EXPECT_FALSE(spec->preflight.value);
}

KDIST_TEST(Resolve, AddressListGivesTheProcessCount) {
  auto spec = Resolve(Args("a:1,b:2,c:3", std::nullopt, "0"), {});
  KDIST_ASSERT_OK(spec);
  KDIST_EXPECT_EQ(spec->num_processes.value, int64_t{3});
  KDIST_EXPECT_EQ(spec->num_processes.source, std::string("job_addresses"));
  KDIST_EXPECT_EQ(spec->coordinator()->ToString(), std::string("a:1"));
}

KDIST_TEST(Resolve, AddressCountMustMatch) {
  KDIST_EXPECT_ERROR(Resolve(Args("a:1,b:2", "3", "0"), {}), StatusCode::kInvalidArgument,
                     "job_addresses=\"a:1,b:2\" (argument) lists 2 addresses but num_processes=3 "
                     "(argument)");
  Environment env{{"KERAS_DISTRIBUTION_NUM_PROCESSES", "3"}};
  KDIST_EXPECT_ERROR(Resolve(Args("a:1,b:2", std::nullopt, "0"), env),
                     StatusCode::kInvalidArgument,
                     "KERAS_DISTRIBUTION_NUM_PROCESSES=\"3\" (from the environment)");
}

KDIST_TEST(Resolve, SingleProcessNeedsNoCoordinator) {
  auto spec = Resolve(Args(std::nullopt, "1", std::nullopt), {});
  KDIST_ASSERT_OK(spec);
  KDIST_EXPECT_FALSE(spec->coordinator().has_value());
  KDIST_EXPECT_EQ(spec->process_id.value, int64_t{0});
  KDIST_EXPECT_EQ(spec->process_id.source, std::string("default"));
}

KDIST_TEST(Resolve, NothingConfiguredListsTheWays) {
  KDIST_EXPECT_ERROR(Resolve(Request{}, {}), StatusCode::kInvalidArgument,
                     "found no cluster configuration");
  KDIST_EXPECT_ERROR(Resolve(Request{}, {}), StatusCode::kInvalidArgument,
                     "KERAS_DISTRIBUTION_NUM_PROCESSES");
  KDIST_EXPECT_ERROR(Resolve(Request{}, {}), StatusCode::kInvalidArgument, "num_processes=1");
}

KDIST_TEST(Resolve, MissingPieces) {
  KDIST_EXPECT_ERROR(Resolve(Args("h:1", std::nullopt, "0"), {}), StatusCode::kInvalidArgument,
                     "names the coordinator but the number of processes is not set");
  KDIST_EXPECT_ERROR(Resolve(Args(std::nullopt, "2", "0"), {}), StatusCode::kInvalidArgument,
                     "num_processes=2 (argument) needs the coordinator's address");
  KDIST_EXPECT_ERROR(Resolve(Args("h:1", "2", std::nullopt), {}), StatusCode::kInvalidArgument,
                     "process_id is not set for a job of 2 processes");
  KDIST_EXPECT_ERROR(Resolve(Args(std::nullopt, std::nullopt, "0"), {}),
                     StatusCode::kInvalidArgument, "process_id=0 (argument) is set but");
}

KDIST_TEST(Resolve, RangeChecks) {
  KDIST_EXPECT_ERROR(Resolve(Args("h:1", "0", "0"), {}), StatusCode::kInvalidArgument,
                     "num_processes=0 (argument): expected a positive integer");
  KDIST_EXPECT_ERROR(Resolve(Args("h:1", "-3", "0"), {}), StatusCode::kInvalidArgument,
                     "expected a positive integer");
  KDIST_EXPECT_ERROR(Resolve(Args("h:1", "2", "2"), {}), StatusCode::kInvalidArgument,
                     "process_id=2 (argument): expected an integer in [0, 2) because "
                     "num_processes=2 (argument)");
  KDIST_EXPECT_ERROR(Resolve(Args("h:1", "2", "-1"), {}), StatusCode::kInvalidArgument,
                     "process_id=-1 (argument)");
  KDIST_EXPECT_ERROR(Resolve(Args("h:1", "99999999999999999999999", "0"), {}),
                     StatusCode::kInvalidArgument, "64-bit range");
}

KDIST_TEST(Resolve, BadEnvironmentValuesNameTheVariable) {
  for (const char* bad : {"two", "", "1.5", " "}) {
    Environment env{{"KERAS_DISTRIBUTION_NUM_PROCESSES", bad}};
    KDIST_EXPECT_ERROR(Resolve(Args("h:1", std::nullopt, "0"), env), StatusCode::kInvalidArgument,
                       "KERAS_DISTRIBUTION_NUM_PROCESSES=\"" + std::string(bad) +
                           "\" (from the environment): ");
  }
  Environment env{{"KERAS_DISTRIBUTION_PROCESS_ID", "one"}};
  KDIST_EXPECT_ERROR(Resolve(Args("h:1", "2", std::nullopt), env), StatusCode::kInvalidArgument,
                     "KERAS_DISTRIBUTION_PROCESS_ID=\"one\" (from the environment): is not an "
                     "integer; expected an integer in [0, 2)");
  Environment addresses{{"KERAS_DISTRIBUTION_JOB_ADDRESSES", "h:99999"}};
  KDIST_EXPECT_ERROR(Resolve(Args(std::nullopt, "2", "0"), addresses),
                     StatusCode::kInvalidArgument,
                     "KERAS_DISTRIBUTION_JOB_ADDRESSES=\"h:99999\" (from the environment): has "
                     "port 99999, which is out of range");
}

KDIST_TEST(Resolve, TimeoutPreflightAndDetection) {
  Request request = Args(std::nullopt, "1", std::nullopt);
  request.timeout = "0";
  KDIST_EXPECT_ERROR(Resolve(request, {}), StatusCode::kInvalidArgument,
                     "timeout=0 (argument): expected a positive number of seconds");
  request.timeout = std::nullopt;
  KDIST_EXPECT_ERROR(Resolve(request, {{"KDIST_INIT_TIMEOUT", "soon"}}),
                     StatusCode::kInvalidArgument,
                     "KDIST_INIT_TIMEOUT=\"soon\" (from the environment): is not a number");
  KDIST_EXPECT_ERROR(Resolve(request, {{"KDIST_PREFLIGHT", "perhaps"}}),
                     StatusCode::kInvalidArgument, "KDIST_PREFLIGHT=\"perhaps\"");
  request.cluster_detection = "slurmm";
  KDIST_EXPECT_ERROR(Resolve(request, {}), StatusCode::kInvalidArgument,
                     "cluster_detection=\"slurmm\" (argument): is not a known cluster detection "
                     "mode; expected one of \"auto\", \"none\"");
  request.cluster_detection = "NONE";
  auto spec = Resolve(request, {});
  KDIST_ASSERT_OK(spec);
  KDIST_EXPECT_EQ(spec->cluster_detection.value, std::string("none"));
}

KDIST_TEST(Resolve, BadSettingsAreReportedEvenWithoutACluster) {
  KDIST_EXPECT_ERROR(Resolve(Request{}, {{"KDIST_INIT_TIMEOUT", "-1"}}),
                     StatusCode::kInvalidArgument, "KDIST_INIT_TIMEOUT");
}

KDIST_TEST(Resolve, RendezvousTokenComesOnlyFromTheEnvironment) {
  auto none = Resolve(Args("h:1", "2", "0"), {});
  KDIST_ASSERT_OK(none);
  KDIST_EXPECT_EQ(none->rendezvous_token.value, std::string());
  KDIST_EXPECT_EQ(none->rendezvous_token.source, std::string("default"));
  auto empty = Resolve(Args("h:1", "2", "0"), {{"KDIST_RENDEZVOUS_TOKEN", ""}});
  KDIST_ASSERT_OK(empty);
  KDIST_EXPECT_EQ(empty->rendezvous_token.value, std::string());
  auto set = Resolve(Args("h:1", "2", "0"), {{"KDIST_RENDEZVOUS_TOKEN", "s3cret"}});
  KDIST_ASSERT_OK(set);
  KDIST_EXPECT_EQ(set->rendezvous_token.value, std::string("s3cret"));
  KDIST_EXPECT_EQ(set->rendezvous_token.source, std::string("KDIST_RENDEZVOUS_TOKEN"));
  // The token is no part of the job's identity.
  KDIST_EXPECT_EQ(set->Fingerprint(), none->Fingerprint());
  KDIST_EXPECT_TRUE(set->SameJobAndProcess(*none));
  // Too long: named by length, never printed.
  const std::string secret(2000, 'z');
  auto long_token = Resolve(Args("h:1", "2", "0"), {{"KDIST_RENDEZVOUS_TOKEN", secret}});
  KDIST_EXPECT_ERROR(long_token, StatusCode::kInvalidArgument, "2000 bytes long");
  KDIST_EXPECT_TRUE(long_token.status().message().find("zzzz") == std::string::npos);
}

KDIST_TEST(ClusterSpec, FingerprintCoversCoordinatorAndCount) {
  auto a = Resolve(Args("h:1", "2", "0"), {});
  auto b = Resolve(Args("h:1", "2", "1"), {});
  auto c = Resolve(Args("h:2", "2", "0"), {});
  auto d = Resolve(Args("h:1", "3", "0"), {});
  KDIST_ASSERT_TRUE(a.ok() && b.ok() && c.ok() && d.ok());
  KDIST_EXPECT_EQ(a->Fingerprint(), b->Fingerprint());
  KDIST_EXPECT_NE(a->Fingerprint(), c->Fingerprint());
  KDIST_EXPECT_NE(a->Fingerprint(), d->Fingerprint());
  KDIST_EXPECT_EQ(a->Fingerprint().size(), size_t{16});
  KDIST_EXPECT_FALSE(a->SameJobAndProcess(*b));
  KDIST_EXPECT_TRUE(a->SameJobAndProcess(*a));
}

KDIST_TEST(ClusterSpec, HexDigestIsFnv1a) {
  KDIST_EXPECT_EQ(HexDigest(""), std::string("cbf29ce484222325"));
  KDIST_EXPECT_EQ(HexDigest("a"), std::string("af63dc4c8601ec8c"));
}

}  // namespace
}  // namespace kdist
