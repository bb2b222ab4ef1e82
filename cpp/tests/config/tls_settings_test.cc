#include "config/tls_settings.h"

#include "net/address.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

ClusterSpec Resolved(const Request& request, const Environment& env) {
  ClusterSpec spec;
  EXPECT_TRUE(ResolveTlsSettings(request, env, spec).ok());
  return spec;
}

// Process `id` of a job of `n` processes at 10.0.0.1:1234, with `token`.
ClusterSpec Job(std::string token, int64_t id = 0, int64_t n = 2) {
  ClusterSpec spec;
  spec.job_addresses = {{ParseAddress("10.0.0.1:1234").value()}, "argument"};
  spec.num_processes = {n, "argument"};
  spec.process_id = {id, "argument"};
  spec.rendezvous_token = {std::move(token), "KDIST_ROLL_CALL_TOKEN"};
  return spec;
}

TEST(TlsSettings, AutoByDefaultThenTheVariableThenTheArgument) {
  ClusterSpec spec = Resolved(Request{}, {});
  EXPECT_EQ(spec.tls.value, TlsPolicy::kAuto);
  EXPECT_EQ(spec.tls.source, "default");
  Environment env{{"KDIST_TLS", "required"}};
  spec = Resolved(Request{}, env);
  EXPECT_EQ(spec.tls.value, TlsPolicy::kRequired);
  EXPECT_EQ(spec.tls.source, "KDIST_TLS");
  Request request;
  request.tls = "off";
  spec = Resolved(request, env);
  EXPECT_EQ(spec.tls.value, TlsPolicy::kOff);
  EXPECT_EQ(spec.tls.source, "argument");
}

TEST(TlsSettings, ABadPolicyIsNamedWithItsSource) {
  ClusterSpec spec;
  KDIST_EXPECT_ERROR(ResolveTlsSettings(Request{}, {{"KDIST_TLS", "yes"}}, spec),
                     StatusCode::kInvalidArgument,
                     "KDIST_TLS=\"yes\" (from the environment): expected \"off\"");
  Request request;
  request.tls = "always";
  KDIST_EXPECT_ERROR(ResolveTlsSettings(request, {}, spec), StatusCode::kInvalidArgument,
                     "tls=\"always\" (argument): expected \"off\"");
}

TEST(TlsSettings, JaxMtlsVariablesAreReadWithTheirNamesAndEmptyMeansUnset) {
  Environment env{{"JAX_MTLS_CERT_FILE", "/etc/job/cert.pem"},
                  {"JAX_MTLS_KEY_FILE", "/etc/job/key.pem"},
                  {"JAX_MTLS_CA_FILE", ""},
                  {"JAX_MTLS_PEER_URI_PREFIX", "spiffe://example.org/"}};
  ClusterSpec spec = Resolved(Request{}, env);
  EXPECT_EQ(spec.mtls_cert_file.value, "/etc/job/cert.pem");
  EXPECT_EQ(spec.mtls_cert_file.source, "JAX_MTLS_CERT_FILE");
  EXPECT_EQ(spec.mtls_key_file.source, "JAX_MTLS_KEY_FILE");
  EXPECT_EQ(spec.mtls_ca_file.value, "");
  EXPECT_EQ(spec.mtls_ca_file.source, "default");
  EXPECT_EQ(spec.mtls_peer_uri_prefix.value, "spiffe://example.org/");
}

TEST(TlsBinding, EveryProcessOfOneAttemptDerivesTheSameAuthority) {
  Result<TlsBinding> zero = DeriveTlsBinding(Job("s3cret", 0));
  Result<TlsBinding> one = DeriveTlsBinding(Job("s3cret", 1));
  KDIST_ASSERT_OK(zero);
  KDIST_ASSERT_OK(one);
  EXPECT_EQ(zero->ca_seed.size(), kTlsCaSeedBytes);
  EXPECT_EQ(zero->ca_seed, one->ca_seed);
  EXPECT_EQ(zero->peer_uri_prefix, one->peer_uri_prefix);
  EXPECT_EQ(zero->process_uri, zero->peer_uri_prefix + "process-0");
  EXPECT_EQ(one->process_uri, one->peer_uri_prefix + "process-1");
  EXPECT_EQ(zero->described, "attempt 0 of the job at 10.0.0.1:1234");
}

TEST(TlsBinding, ThePrefixNamesTheAttemptAndEndsWithASlash) {
  ClusterSpec spec = Job("s3cret");
  spec.restart_count = {3, "KDIST_RESTART_COUNT"};
  spec.job_id = {"t57", "KDIST_JOB_ID"};
  Result<TlsBinding> binding = DeriveTlsBinding(spec);
  KDIST_ASSERT_OK(binding);
  EXPECT_EQ(binding->peer_uri_prefix.rfind("kdist://job-", 0), 0u) << binding->peer_uri_prefix;
  EXPECT_EQ(binding->peer_uri_prefix.size(), std::string("kdist://job-0123456789abcdef/attempt-3/").size());
  EXPECT_EQ(binding->peer_uri_prefix.substr(28), "/attempt-3/");
  EXPECT_EQ(binding->described, "attempt 3 of job \"t57\"");
}

TEST(TlsBinding, AnotherTokenAttemptJobOrCoordinatorIsAnotherAuthority) {
  const ClusterSpec base = Job("s3cret");
  const std::string seed = DeriveTlsBinding(base).value().ca_seed;
  const std::string prefix = DeriveTlsBinding(base).value().peer_uri_prefix;
  EXPECT_NE(DeriveTlsBinding(Job("other")).value().ca_seed, seed);
  EXPECT_EQ(DeriveTlsBinding(Job("other")).value().peer_uri_prefix, prefix);  // not secret
  ClusterSpec attempt = base;
  attempt.restart_count = {1, "KDIST_RESTART_COUNT"};
  EXPECT_NE(DeriveTlsBinding(attempt).value().ca_seed, seed);
  EXPECT_NE(DeriveTlsBinding(attempt).value().peer_uri_prefix, prefix);
  ClusterSpec job = base;
  job.job_id = {"run-8", "KDIST_JOB_ID"};
  EXPECT_NE(DeriveTlsBinding(job).value().ca_seed, seed);
  EXPECT_NE(DeriveTlsBinding(job).value().peer_uri_prefix, prefix);
  ClusterSpec moved = base;
  moved.job_addresses = {{ParseAddress("10.0.0.2:1234").value()}, "argument"};
  EXPECT_NE(DeriveTlsBinding(moved).value().ca_seed, seed);
}

TEST(TlsBinding, NeverTheTokenItself) {
  const std::string token(kTlsCaSeedBytes, 'k');
  const TlsBinding binding = DeriveTlsBinding(Job(token)).value();
  EXPECT_NE(binding.ca_seed, token);
  EXPECT_EQ(binding.ca_seed.find("kkkkkkkk"), std::string::npos);
  EXPECT_EQ(binding.peer_uri_prefix.find('k' + std::string("kkkkkkk")), std::string::npos);
}

TEST(TlsBinding, NeedsAToken) {
  KDIST_EXPECT_ERROR(DeriveTlsBinding(Job("")), StatusCode::kInvalidArgument,
                     "set KDIST_ROLL_CALL_TOKEN to the same secret in every process");
}

}  // namespace
}  // namespace kdist
