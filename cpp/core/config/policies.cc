#include "config/policies.h"

#include <string>

#include "base/text.h"

namespace kdist {

Result<PeerFailurePolicy> ParsePeerFailurePolicy(std::string_view text) {
  const std::string value = Lower(Trim(text));
  if (value == "exit") return PeerFailurePolicy::kExit;
  if (value == "ignore") return PeerFailurePolicy::kIgnore;
  return InvalidArgument("is " + Quote(text) + "; expected exit or ignore");
}

std::string_view PeerFailurePolicyName(PeerFailurePolicy policy) {
  return policy == PeerFailurePolicy::kIgnore ? "ignore" : "exit";
}

Result<ConsistencyPolicy> ParseConsistencyPolicy(std::string_view text) {
  const std::string value = Lower(Trim(text));
  if (value == "strict") return ConsistencyPolicy::kStrict;
  if (value == "warn") return ConsistencyPolicy::kWarn;
  if (value == "off") return ConsistencyPolicy::kOff;
  return InvalidArgument("is " + Quote(text) + "; expected strict, warn or off");
}

std::string_view ConsistencyPolicyName(ConsistencyPolicy policy) {
  switch (policy) {
    case ConsistencyPolicy::kStrict: return "strict";
    case ConsistencyPolicy::kWarn: return "warn";
    case ConsistencyPolicy::kOff: return "off";
  }
  return "warn";
}

Result<TlsPolicy> ParseTlsPolicy(std::string_view text) {
  const std::string value = Lower(Trim(text));
  if (value == "off") return TlsPolicy::kOff;
  if (value == "auto") return TlsPolicy::kAuto;
  if (value == "required") return TlsPolicy::kRequired;
  return InvalidArgument("is " + Quote(text) + "; expected off, auto or required");
}

std::string_view TlsPolicyName(TlsPolicy policy) {
  switch (policy) {
    case TlsPolicy::kOff: return "off";
    case TlsPolicy::kAuto: return "auto";
    case TlsPolicy::kRequired: return "required";
  }
  return "auto";
}

}  // namespace kdist
