#include "config/job_settings.h"

#include <algorithm>
#include <cstdio>

#include "base/scalars.h"
#include "base/text.h"
#include "config/raw_setting.h"
#include "config/tls_settings.h"
#include "stop/stop_signals.h"

namespace kdist {
namespace {

std::string Number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

Result<Sourced<double>> ResolveTimeout(const Request& request, const Environment& env) {
  const std::optional<Raw> raw = Pick(request.timeout, "timeout", env, kEnvInitTimeout, false);
  if (!raw) return Sourced<double>{kDefaultTimeoutSeconds, "default"};
  const std::string expected = "expected a positive number of seconds (at most " +
                               Number(kMaxTimeoutSeconds) + ")";
  Result<double> value = ParseSeconds(raw->text);
  if (!value.ok()) return Invalid(*raw, value.status().message() + "; " + expected);
  if (*value <= 0 || *value > kMaxTimeoutSeconds) return Invalid(*raw, expected);
  return Sourced<double>{*value, raw->source};
}

// JAX's heartbeat or shutdown timeout: whole seconds, as JAX takes them.
Result<Sourced<int64_t>> ResolveJaxTimeout(const std::optional<std::string>& argument,
                                           std::string_view name, const Environment& env,
                                           std::string_view variable, int64_t fallback) {
  const std::optional<Raw> raw = Pick(argument, name, env, variable, false);
  if (!raw) return Sourced<int64_t>{fallback, "default"};
  const std::string expected = "expected a whole number of seconds from 1 to " +
                               std::to_string(kMaxJaxTimeoutSeconds) +
                               " (JAX takes whole seconds)";
  Result<int64_t> value = ParseInteger(raw->text);
  if (!value.ok()) return Invalid(*raw, value.status().message() + "; " + expected);
  if (*value < 1 || *value > kMaxJaxTimeoutSeconds) return Invalid(*raw, expected);
  return Sourced<int64_t>{*value, raw->source};
}

Result<Sourced<PeerFailurePolicy>> ResolveOnPeerFailure(const Request& request,
                                                        const Environment& env) {
  const std::optional<Raw> raw =
      Pick(request.on_peer_failure, "on_peer_failure", env, kEnvOnPeerFailure);
  if (!raw) return Sourced<PeerFailurePolicy>{PeerFailurePolicy::kExit, "default"};
  Result<PeerFailurePolicy> policy = ParsePeerFailurePolicy(raw->text);
  if (!policy.ok()) {
    return Invalid(*raw, "expected \"exit\" (every process stops when one fails or dies) or "
                         "\"ignore\" (the program handles it)");
  }
  return Sourced<PeerFailurePolicy>{*policy, raw->source};
}

Result<Sourced<std::vector<int>>> ResolveStopSignals(const Request& request,
                                                     const Environment& env) {
  const std::optional<Raw> raw = Pick(request.stop_signals, "stop_signals", env, kEnvStopSignals);
  if (!raw) {
    Result<std::vector<int>> defaults = ParseStopSignals(kDefaultStopSignals);
    return Sourced<std::vector<int>>{std::move(defaults).value(), "default"};
  }
  Result<std::vector<int>> signals = ParseStopSignals(raw->text);
  if (!signals.ok()) return Invalid(*raw, signals.status().message());
  return Sourced<std::vector<int>>{std::move(signals).value(), raw->source};
}

// The stall watchdog's timeout: positive seconds, or "off"/"none"/"0" (the default).
Result<Sourced<std::optional<Nanos>>> ResolveStallTimeout(const Request& request,
                                                          const Environment& env) {
  using Stall = Sourced<std::optional<Nanos>>;
  const std::optional<Raw> raw =
      Pick(request.stall_timeout, "stall_timeout", env, kEnvStallTimeout, false);
  if (!raw) return Stall{std::nullopt, "default"};
  const std::string word = Lower(Trim(raw->text));
  if (word == "off" || word == "none") return Stall{std::nullopt, raw->source};
  const std::string expected = "expected a positive number of seconds (at most " +
                               Number(kMaxTimeoutSeconds) +
                               ") without progress that ends the job, or \"off\"";
  Result<double> value = ParseSeconds(raw->text);
  if (!value.ok()) return Invalid(*raw, value.status().message() + "; " + expected);
  if (*value == 0) return Stall{std::nullopt, raw->source};
  if (*value > kMaxTimeoutSeconds) return Invalid(*raw, expected);
  return Stall{SecondsToNanos(*value), raw->source};
}

// The unreachable timeout: seconds, at least 1 (the kernel counts keepalive
// in whole seconds), and below JAX's heartbeat timeout, which would otherwise
// end the job first (by SIGABRT, without kdist's line).
Result<Sourced<Nanos>> ResolveUnreachableTimeout(const Request& request, const Environment& env,
                                                 const Sourced<int64_t>& heartbeat) {
  const std::optional<Raw> raw =
      Pick(request.unreachable_timeout, "unreachable_timeout", env, kEnvUnreachableTimeout, false);
  if (!raw) {
    const double fallback = kDefaultUnreachableTimeoutSeconds;
    if (fallback < static_cast<double>(heartbeat.value)) return Sourced<Nanos>{SecondsToNanos(fallback), "default"};
    // A heartbeat timeout at or below the default window: the window follows it.
    return Sourced<Nanos>{SecondsToNanos(std::max(1.0, static_cast<double>(heartbeat.value) / 2)),
                          "default (half of heartbeat_timeout)"};
  }
  const std::string expected =
      "expected a number of seconds of at least 1 (how long a process's host may answer "
      "nothing before the job ends; TCP counts keepalive in whole seconds)";
  Result<double> value = ParseSeconds(raw->text);
  if (!value.ok()) return Invalid(*raw, value.status().message() + "; " + expected);
  if (*value < 1 || *value > kMaxTimeoutSeconds) return Invalid(*raw, expected);
  if (*value >= static_cast<double>(heartbeat.value)) {
    return Invalid(*raw, "is not below heartbeat_timeout (" + std::to_string(heartbeat.value) +
                             " s, from " + heartbeat.source +
                             "): JAX's heartbeat would end the job first, by SIGABRT, before "
                             "kdist could name the unreachable process. Choose a shorter "
                             "unreachable timeout, or raise heartbeat_timeout "
                             "(KDIST_HEARTBEAT_TIMEOUT) above it");
  }
  return Sourced<Nanos>{SecondsToNanos(*value), raw->source};
}

Result<Sourced<ConsistencyPolicy>> ResolveConsistency(const Request& request,
                                                      const Environment& env) {
  const std::optional<Raw> raw = Pick(request.consistency, "consistency", env, kEnvConsistency);
  if (!raw) return Sourced<ConsistencyPolicy>{ConsistencyPolicy::kWarn, "default"};
  Result<ConsistencyPolicy> policy = ParseConsistencyPolicy(raw->text);
  if (!policy.ok()) {
    return Invalid(*raw, "expected \"strict\" (any difference between the processes' "
                         "environments stops the job), \"warn\" (only those that would crash or "
                         "corrupt it do; the rest are warnings) or \"off\"");
  }
  return Sourced<ConsistencyPolicy>{*policy, raw->source};
}

// A setting under its new name and its former one, with different values:
// "<what>; KDIST_PREFLIGHT is the former name of KDIST_ROLL_CALL: set only KDIST_ROLL_CALL".
Status Disagree(std::string_view new_name, std::string_view old_name, const std::string& what) {
  return InvalidArgument(what + "; " + std::string(old_name) + " is the former name of " +
                         std::string(new_name) + ": set only " + std::string(new_name));
}

Result<bool> ParseRollCall(const Raw& raw) {
  Result<bool> value = ParseBool(raw.text);
  if (!value.ok()) {
    return Invalid(raw, value.status().message() + "; expected 1/0, true/false, yes/no or on/off");
  }
  return *value;
}

// The argument preflight=, else KDIST_ROLL_CALL, else its former name KDIST_PREFLIGHT.
Result<Sourced<bool>> ResolveRollCall(const Request& request, const Environment& env) {
  std::optional<Raw> raw = Pick(request.preflight, "preflight", env, kEnvRollCall, false);
  if (!raw) raw = Pick(std::nullopt, "preflight", env, kEnvPreflight);
  if (!raw) return Sourced<bool>{true, "default"};
  KDIST_ASSIGN_OR_RETURN(const bool value, ParseRollCall(*raw));
  if (raw->source == kEnvRollCall) {
    if (const std::optional<Raw> old = Pick(std::nullopt, "preflight", env, kEnvPreflight)) {
      KDIST_ASSIGN_OR_RETURN(const bool old_value, ParseRollCall(*old));
      if (old_value != value) {
        return Disagree(kEnvRollCall, kEnvPreflight,
                        std::string(kEnvRollCall) + "=" + Quote(raw->text) + " and " +
                            std::string(kEnvPreflight) + "=" + Quote(old->text) +
                            " (from the environment) disagree");
      }
    }
  }
  return Sourced<bool>{value, raw->source};
}

Result<Sourced<std::string>> ResolveClusterDetection(const Request& request,
                                                     const Environment& env) {
  const std::optional<Raw> raw =
      Pick(request.cluster_detection, "cluster_detection", env, kEnvClusterDetection);
  if (!raw) return Sourced<std::string>{"auto", "default"};
  const std::string mode = Lower(Trim(raw->text));
  std::vector<std::string> quoted;
  for (const std::string& valid : ClusterDetectionModes()) {
    if (mode == valid) return Sourced<std::string>{mode, raw->source};
    quoted.push_back(Quote(valid));
  }
  return Invalid(*raw, "is not a known cluster detection mode; expected one of " +
                           Join(quoted, ", "));
}

// The token only ever comes from the environment (an argument would end up in
// source code and logs): KDIST_ROLL_CALL_TOKEN, else its former name
// KDIST_RENDEZVOUS_TOKEN. Empty means unset; the value is never printed, not
// even when the two names disagree.
Result<Sourced<std::string>> ResolveRollCallToken(const Environment& env) {
  const std::string* token = Lookup(env, kEnvRollCallToken);
  const std::string* old = Lookup(env, kEnvRendezvousToken);
  if (token != nullptr && token->empty()) token = nullptr;
  if (old != nullptr && old->empty()) old = nullptr;
  if (token != nullptr && old != nullptr && *token != *old) {
    return Disagree(kEnvRollCallToken, kEnvRendezvousToken,
                    std::string(kEnvRollCallToken) + " and " + std::string(kEnvRendezvousToken) +
                        " (from the environment) hold different tokens (not shown: a token is "
                        "a secret)");
  }
  const std::string_view name = token != nullptr ? kEnvRollCallToken : kEnvRendezvousToken;
  const std::string* value = token != nullptr ? token : old;
  if (value == nullptr) return Sourced<std::string>{"", "default"};
  if (value->size() > kMaxRollCallTokenBytes) {
    return InvalidArgument(std::string(name) + " (from the environment) is " +
                           std::to_string(value->size()) + " bytes long; expected at most " +
                           std::to_string(kMaxRollCallTokenBytes) + " bytes");
  }
  return Sourced<std::string>{*value, std::string(name)};
}

// The verdict file comes from the environment only: a launcher sets it for each
// process it starts. Any path; "" (or unset) for none.
Sourced<std::string> ResolveVerdictFile(const Environment& env) {
  const std::string* path = Lookup(env, kEnvVerdictFile);
  if (path == nullptr || path->empty()) return Sourced<std::string>{"", "default"};
  return Sourced<std::string>{*path, std::string(kEnvVerdictFile)};
}

}  // namespace

Status ResolveJobSettings(const Request& request, const Environment& env, ClusterSpec& spec) {
  KDIST_ASSIGN_OR_RETURN(spec.timeout_seconds, ResolveTimeout(request, env));
  KDIST_ASSIGN_OR_RETURN(spec.preflight, ResolveRollCall(request, env));
  KDIST_ASSIGN_OR_RETURN(spec.heartbeat_timeout_seconds,
                         ResolveJaxTimeout(request.heartbeat_timeout, "heartbeat_timeout", env,
                                           kEnvHeartbeatTimeout, kDefaultHeartbeatTimeoutSeconds));
  KDIST_ASSIGN_OR_RETURN(spec.shutdown_timeout_seconds,
                         ResolveJaxTimeout(request.shutdown_timeout, "shutdown_timeout", env,
                                           kEnvShutdownTimeout, kDefaultShutdownTimeoutSeconds));
  KDIST_ASSIGN_OR_RETURN(spec.unreachable_timeout,
                         ResolveUnreachableTimeout(request, env, spec.heartbeat_timeout_seconds));
  KDIST_ASSIGN_OR_RETURN(spec.on_peer_failure, ResolveOnPeerFailure(request, env));
  KDIST_ASSIGN_OR_RETURN(spec.consistency, ResolveConsistency(request, env));
  KDIST_ASSIGN_OR_RETURN(spec.stop_signals, ResolveStopSignals(request, env));
  KDIST_ASSIGN_OR_RETURN(spec.stall_timeout, ResolveStallTimeout(request, env));
  KDIST_ASSIGN_OR_RETURN(spec.cluster_detection, ResolveClusterDetection(request, env));
  KDIST_ASSIGN_OR_RETURN(spec.rendezvous_token, ResolveRollCallToken(env));
  KDIST_RETURN_IF_ERROR(ResolveTlsSettings(request, env, spec));
  spec.verdict_file = ResolveVerdictFile(env);
  return Status::Ok();
}

}  // namespace kdist
