#include "config/tls_settings.h"

#include <optional>
#include <string>
#include <utility>

#include "base/hkdf_sha256.h"
#include "base/hmac_sha256.h"
#include "base/text.h"
#include "config/policies.h"
#include "config/raw_setting.h"

namespace kdist {
namespace {

// Versioned: a change of what the seed binds makes every certificate of the old
// derivation a stranger's.
constexpr std::string_view kCaSeedSalt = "kdist tls: the job's certificate authority, v1";

Result<Sourced<TlsPolicy>> ResolveTlsPolicy(const Request& request, const Environment& env) {
  const std::optional<Raw> raw = Pick(request.tls, "tls", env, kEnvTls);
  if (!raw) return Sourced<TlsPolicy>{TlsPolicy::kAuto, "default"};
  Result<TlsPolicy> policy = ParseTlsPolicy(raw->text);
  if (!policy.ok()) {
    return Invalid(*raw,
                   "expected \"off\" (JAX's coordination service without TLS), \"auto\" (mutual "
                   "TLS where the job has a token, KDIST_ROLL_CALL_TOKEN, and JAX can: JAX "
                   "0.12 or later) or \"required\" (refuse to start without it)");
  }
  return Sourced<TlsPolicy>{*policy, raw->source};
}

// One of JAX's variables: its value and name when set and not empty.
Sourced<std::string> JaxVariable(const Environment& env, std::string_view name) {
  const std::string* value = Lookup(env, name);
  if (value == nullptr || Trim(*value).empty()) return Sourced<std::string>{"", "default"};
  return Sourced<std::string>{*value, std::string(name)};
}

}  // namespace

Status ResolveTlsSettings(const Request& request, const Environment& env, ClusterSpec& spec) {
  KDIST_ASSIGN_OR_RETURN(spec.tls, ResolveTlsPolicy(request, env));
  spec.mtls_cert_file = JaxVariable(env, kEnvJaxMtlsCertFile);
  spec.mtls_key_file = JaxVariable(env, kEnvJaxMtlsKeyFile);
  spec.mtls_ca_file = JaxVariable(env, kEnvJaxMtlsCaFile);
  spec.mtls_peer_uri_prefix = JaxVariable(env, kEnvJaxMtlsPeerUriPrefix);
  return Status::Ok();
}

Result<TlsBinding> DeriveTlsBinding(const ClusterSpec& spec) {
  if (spec.rendezvous_token.value.empty()) {
    return InvalidArgument(
        "kdist's TLS certificates derive from the job's token, and this process has none: "
        "set KDIST_ROLL_CALL_TOKEN to the same secret in every process of the job");
  }
  const std::optional<Address> coordinator = spec.coordinator();
  const std::string coordinator_text = coordinator ? coordinator->ToString() : "";
  const std::string job = "job=" + spec.job_id.value + "\ncoordinator=" + coordinator_text +
                          "\nnum_processes=" + std::to_string(spec.num_processes.value);
  const std::string attempt = std::to_string(spec.restart_count.value);
  const std::string info = job + "\nattempt=" + attempt;
  TlsBinding binding;
  KDIST_ASSIGN_OR_RETURN(binding.ca_seed, HkdfSha256(spec.rendezvous_token.value, kCaSeedSalt,
                                                     info, kTlsCaSeedBytes));
  const Sha256Digest job_digest = ComputeSha256(job);
  binding.peer_uri_prefix =
      "kdist://job-" + HexText(DigestBytes(job_digest).substr(0, 8)) + "/attempt-" + attempt + "/";
  binding.process_uri =
      binding.peer_uri_prefix + "process-" + std::to_string(spec.process_id.value);
  binding.described = "attempt " + attempt + " of " +
                      (spec.job_id.value.empty() ? "the job at " + coordinator_text
                                                 : "job " + Quote(spec.job_id.value));
  return binding;
}

}  // namespace kdist
