// The job's policies, as the configuration resolves them (config/resolve.h) and the
// parts that act on them read them: what a process does when another fails
// (the liveness channel), how strictly the processes' environments must
// agree (the roll call) and whether JAX's service runs under TLS. Each is parsed once, from text, in Resolve().
#ifndef KDIST_CONFIG_POLICIES_H_
#define KDIST_CONFIG_POLICIES_H_

#include <string_view>

#include "base/status.h"

namespace kdist {

// on_peer_failure / KDIST_ON_PEER_FAILURE: "exit" (the default: every process
// stops when one fails or dies) or "ignore" (the program handles it).
enum class PeerFailurePolicy { kExit, kIgnore };
Result<PeerFailurePolicy> ParsePeerFailurePolicy(std::string_view text);  // case-insensitive
std::string_view PeerFailurePolicyName(PeerFailurePolicy policy);

// consistency / KDIST_CONSISTENCY: strict, warn (the default), off
// (roll_call/consistency.h says what each compares).
enum class ConsistencyPolicy { kStrict, kWarn, kOff };
Result<ConsistencyPolicy> ParseConsistencyPolicy(std::string_view text);  // case-insensitive
std::string_view ConsistencyPolicyName(ConsistencyPolicy policy);

// tls / KDIST_TLS: whether JAX's coordination service runs under mutual TLS with
// certificates kdist makes from the job's token (config/tls_settings.h): "off" (never),
// "auto" (the default: where the job has a token and JAX can), "required" (refuse to
// start without it).
enum class TlsPolicy { kOff, kAuto, kRequired };
Result<TlsPolicy> ParseTlsPolicy(std::string_view text);  // case-insensitive
std::string_view TlsPolicyName(TlsPolicy policy);

}  // namespace kdist

#endif  // KDIST_CONFIG_POLICIES_H_
