// TLS for JAX's coordination service (JAX 0.12's mutual TLS), as the configuration
// resolves it:
//
// - `tls` / KDIST_TLS: "off", "auto" (the default: on where the job has a token and JAX
//   can) or "required" (the start is refused without it);
// - the user's own certificates, in JAX's own variables (JAX_MTLS_CERT_FILE,
//   JAX_MTLS_KEY_FILE, JAX_MTLS_CA_FILE, JAX_MTLS_PEER_URI_PREFIX), each with its source;
//   they win over kdist's certificates (kdist._start.tls checks them and what a program set
//   with jax.config);
// - the job's TLS binding: what kdist's certificates derive from the job's token. Every
//   process derives the same certificate authority key from the token, the job id, the
//   attempt (the restart count), the coordinator and the process count (HKDF-SHA-256: the
//   token is never the key, and never leaves the core); each signs its own certificate with
//   it, whose URI names the job and the attempt. A process of another job or attempt holds
//   another authority, so JAX's service refuses it, and it refuses the service.
#ifndef KDIST_CONFIG_TLS_SETTINGS_H_
#define KDIST_CONFIG_TLS_SETTINGS_H_

#include <string>
#include <string_view>

#include "base/environment.h"
#include "base/status.h"
#include "config/cluster_spec.h"
#include "config/resolve.h"

namespace kdist {

inline constexpr std::string_view kEnvTls = "KDIST_TLS";
// JAX's own variables for its mTLS settings (jax_mtls_*), read by JAX 0.12 and later.
inline constexpr std::string_view kEnvJaxMtlsCertFile = "JAX_MTLS_CERT_FILE";
inline constexpr std::string_view kEnvJaxMtlsKeyFile = "JAX_MTLS_KEY_FILE";
inline constexpr std::string_view kEnvJaxMtlsCaFile = "JAX_MTLS_CA_FILE";
inline constexpr std::string_view kEnvJaxMtlsPeerUriPrefix = "JAX_MTLS_PEER_URI_PREFIX";

// Bytes of the certificate authority's seed: 16 more than the P-256 key it becomes, so
// that reducing it modulo the group order leaves no measurable bias (FIPS 186-5, A.2.1).
inline constexpr size_t kTlsCaSeedBytes = 48;

// Fills spec.tls (the argument, else KDIST_TLS, else "auto") and spec.mtls_cert_file,
// mtls_key_file, mtls_ca_file and mtls_peer_uri_prefix (JAX's variables; "" with source
// "default" when unset or empty). InvalidArgument naming the value and its source for a
// policy that is not off, auto or required.
Status ResolveTlsSettings(const Request& request, const Environment& env, ClusterSpec& spec);

// What kdist's certificates for one process of a job derive from.
struct TlsBinding {
  // kTlsCaSeedBytes bytes: HKDF-SHA-256 of the job's token (the roll call's, which
  // `kdist launch --nodes` makes for each attempt), bound to the job (`info`). The same
  // in every process of one attempt of one job; a secret, like the token.
  std::string ca_seed;
  // The prefix every certificate of this job's attempt carries in its URI, and JAX's
  // peer check requires: "kdist://job-<16 hex digits>/attempt-<n>/" (the digits: of the
  // job id, the coordinator and the process count; ends with '/', as JAX requires).
  std::string peer_uri_prefix;
  // This process's URI: the prefix, then "process-<id>".
  std::string process_uri;
  // The job and attempt in words, for messages: "attempt 0 of job \"t57\"" (or "attempt
  // 0 of the job at 10.0.0.1:1234" without a job id).
  std::string described;
};

// The binding of `spec`'s process. InvalidArgument when the spec has no token (kdist's
// certificates need the job's secret).
Result<TlsBinding> DeriveTlsBinding(const ClusterSpec& spec);

}  // namespace kdist

#endif  // KDIST_CONFIG_TLS_SETTINGS_H_
