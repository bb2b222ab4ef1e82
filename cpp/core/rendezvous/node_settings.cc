#include "rendezvous/node_settings.h"

#include <algorithm>
#include <utility>

#include "base/hmac_sha256.h"
#include "base/scalars.h"
#include "base/text.h"
#include "config/clusters/slurm.h"
#include "config/job_settings.h"
#include "config/resolve.h"
#include "config/thrash_guard.h"
#include "net/keepalive.h"
#include "net/local_address.h"
#include "rendezvous/rendezvous_auto.h"

namespace kdist {
namespace {

constexpr std::string_view kMakeToken =
    "make one with `python -c \"import secrets; print(secrets.token_hex(16))\" > token && "
    "chmod 600 token` and give every agent --token-file token (or KDIST_ROLL_CALL_TOKEN)";

Result<Sourced<std::string>> ResolveRendezvous(const NodeRequest& request, const Environment& env,
                                               Address& address) {
  const std::string flag = request.serve_only ? "kdist rendezvous serve" : "--rendezvous";
  if (IsEtcdRendezvous(request.rendezvous)) {
    return InvalidArgument(
        flag + " " + Quote(request.rendezvous) +
        ": kdist rendezvous serve binds HOST:PORT; with etcd:// no machine serves the book "
        "alone (every agent can take it over): give the agents --rendezvous etcd://... instead");
  }
  if (!request.serve_only && request.rendezvous == "auto") {
    KDIST_ASSIGN_OR_RETURN(address, AutoRendezvous(env));
    return Sourced<std::string>{address.ToString(),
                                "--rendezvous auto (the Slurm allocation's first host)"};
  }
  Result<Address> parsed = ParseAddress(request.rendezvous);
  if (!parsed.ok()) {
    return InvalidArgument(flag + " " + Quote(request.rendezvous) + ": " +
                           parsed.status().message());
  }
  address = *parsed;
  return Sourced<std::string>{address.ToString(), flag};
}

Result<Sourced<std::string>> ResolveToken(const NodeRequest& request, const Environment& env,
                                          const NodeSettings& settings) {
  Sourced<std::string> token;
  if (request.token.has_value()) {
    token = {*request.token, request.token_source.empty() ? "--token-file" : request.token_source};
  } else {
    ClusterSpec spec;
    KDIST_RETURN_IF_ERROR(ResolveJobSettings(Request{}, env, spec));
    token = spec.rendezvous_token;
  }
  if (settings.loopback) return token;
  const std::string where = settings.rendezvous.value + " is off loopback" +
                            (settings.ip.empty() ? std::string() : " (" + settings.ip + ")");
  if (token.value.empty()) {
    return InvalidArgument(settings.rendezvous.source + " " + where +
                           ": the job needs a token, the same on every machine; " +
                           std::string(kMakeToken));
  }
  if (token.value.size() < kMinTokenBytes) {
    return InvalidArgument("the job's token (from " + token.source + ") is " +
                           std::to_string(token.value.size()) + " bytes; expected at least " +
                           std::to_string(kMinTokenBytes) + " off loopback (" + where +
                           "), where anyone who reaches it could guess a short one; " +
                           std::string(kMakeToken));
  }
  return token;
}

Result<Sourced<std::optional<Nanos>>> ResolveScaleUpAfter(const NodeRequest& request) {
  if (!request.scale_up_after.has_value()) {
    return Sourced<std::optional<Nanos>>{Nanos(kDefaultScaleUpAfter), "default"};
  }
  if (*request.scale_up_after == "never") {
    return Sourced<std::optional<Nanos>>{std::nullopt, "--scale-up-after"};
  }
  Result<double> seconds = ParseSeconds(*request.scale_up_after);
  if (!seconds.ok() || *seconds < 0 || *seconds > kMaxTimeoutSeconds) {
    return InvalidArgument("--scale-up-after " + Quote(*request.scale_up_after) +
                           ": expected a number of seconds from 0 to 1000000, or never");
  }
  return Sourced<std::optional<Nanos>>{SecondsToNanos(*seconds), "--scale-up-after"};
}

Sourced<Nanos> SecondsOr(const std::optional<double>& given, const char* flag, Nanos fallback) {
  if (!given.has_value()) return {fallback, "default"};
  return {SecondsToNanos(*given), flag};
}

// Job id and node name: the flag, else the Slurm allocation's (a cluster's nodes may share
// one host name, as in containers; two allocations never meet), else the default.
Status ResolveNames(const NodeRequest& request, const Environment& env, NodeSettings& settings) {
  KDIST_ASSIGN_OR_RETURN(const std::optional<SlurmAllocation> slurm, ReadSlurmAllocation(env));
  if (request.job_id.has_value()) {
    settings.job_id = {*request.job_id, "--job-id"};
  } else if (slurm.has_value() &&
             (request.rendezvous == "auto" || settings.store == RendezvousStore::kEtcd)) {
    settings.job_id = {slurm->job_id, "SLURM_JOB_ID"};
  } else if (settings.store == RendezvousStore::kEtcd) {
    return InvalidArgument(
        "--rendezvous " + settings.rendezvous.value +
        " needs a job id: give every agent of the job the same --job-id (under Slurm it is "
        "the allocation's, SLURM_JOB_ID), so that two jobs sharing one etcd never meet");
  } else {
    settings.job_id = {"", "default"};
  }
  if (settings.store == RendezvousStore::kEtcd &&
      (settings.job_id.value.empty() || !std::all_of(settings.job_id.value.begin(),
                                                     settings.job_id.value.end(), [](char c) {
                                                       return IsAlnum(c) || c == '.' ||
                                                              c == '_' || c == '-';
                                                     }))) {
    return InvalidArgument("job id " + Quote(settings.job_id.value) + " (from " +
                           settings.job_id.source + ") names the job's keys in etcd (" +
                           settings.etcd.prefix + "/JOB_ID/); expected letters, digits, '.', "
                           "'_' and '-'");
  }
  if (request.serve_only) {
    settings.node_name = {"", "default"};
  } else if (request.node_name.has_value()) {
    settings.node_name = {*request.node_name, "--node-name"};
  } else if (slurm.has_value() && !slurm->node_name.empty()) {
    settings.node_name = {slurm->node_name, "SLURMD_NODENAME"};
  } else {
    settings.node_name = {request.host_name, "the host name"};
  }
  return Status::Ok();
}

// What every store shares, once the rendezvous is placed: the processes' own settings, as
// each process will resolve them (a value they would refuse is refused here, before any
// process starts, in the same words), the token, the names and the waits.
Result<NodeSettings> ResolveTheRest(const NodeRequest& request, const Environment& env,
                                    NodeSettings settings) {
  ClusterSpec spec;
  KDIST_RETURN_IF_ERROR(ResolveJobSettings(Request{}, env, spec));
  settings.unreachable_timeout = spec.unreachable_timeout;
  if (settings.store == RendezvousStore::kEtcd) {
    settings.etcd_lease_seconds = EtcdLeaseSeconds(settings.unreachable_timeout.value);
  }
  KDIST_ASSIGN_OR_RETURN(settings.token, ResolveToken(request, env, settings));
  KDIST_RETURN_IF_ERROR(ResolveNames(request, env, settings));
  KDIST_ASSIGN_OR_RETURN(settings.scale_up_after, ResolveScaleUpAfter(request));
  settings.min_nodes = request.min_nodes;
  settings.max_nodes = request.max_nodes;
  settings.processes_per_node = request.processes_per_node;
  settings.last_call = SecondsOr(request.last_call, "--last-call", Nanos(kDefaultLastCall));
  settings.join_timeout =
      SecondsOr(request.join_timeout, "--join-timeout", Nanos(kDefaultJoinTimeout));
  settings.max_restarts = request.max_restarts;
  KDIST_ASSIGN_OR_RETURN(const ThrashGuard guard,
                         ResolveThrashGuard(request.max_reforms, request.reform_window, env));
  settings.max_reforms = guard.max_reforms;
  settings.reform_window = guard.reform_window;
  return settings;
}

// --rendezvous etcd://...: no address to look up (the agent reaches the endpoints itself,
// and the machine that holds the book publishes its own address in etcd).
Status ResolveEtcd(const NodeRequest& request, NodeSettings& settings) {
  Result<EtcdPlace> place = ParseEtcdRendezvous(request.rendezvous);
  if (!place.ok()) return InvalidArgument("--rendezvous " + place.status().message());
  settings.store = RendezvousStore::kEtcd;
  settings.etcd = *place;
  settings.rendezvous = {place->ToString(), "--rendezvous"};
  settings.loopback = place->loopback;
  return Status::Ok();
}

}  // namespace

std::map<std::string, std::string> NodeSettings::Sources() const {
  return {{"rendezvous", rendezvous.source},   {"token", token.source},
          {"job_id", job_id.source},           {"node_name", node_name.source},
          {"unreachable_timeout", unreachable_timeout.source},
          {"scale_up_after", scale_up_after.source},
          {"last_call", last_call.source},     {"join_timeout", join_timeout.source},
          {"max_reforms", max_reforms.source}, {"reform_window", reform_window.source}};
}

Result<NodeSettings> ResolveNodeSettings(const NodeRequest& request, const Environment& env,
                                         const HostLookup& lookup) {
  NodeSettings settings;
  if (!request.serve_only && IsEtcdRendezvous(request.rendezvous)) {
    KDIST_RETURN_IF_ERROR(ResolveEtcd(request, settings));
    return ResolveTheRest(request, env, std::move(settings));
  }
  Address address;
  KDIST_ASSIGN_OR_RETURN(settings.rendezvous, ResolveRendezvous(request, env, address));
  Result<std::vector<std::string>> ips = lookup(address.host);
  if (!ips.ok() || ips->empty()) {
    return Unavailable(settings.rendezvous.source + " " + settings.rendezvous.value +
                       ": its host does not resolve" +
                       (ips.ok() ? std::string() : " (" + ips.status().message() + ")") +
                       "; give an address every machine reaches (an IP, or a name in DNS)");
  }
  settings.ip = ips->front();
  settings.port = address.port;
  settings.loopback = IsLoopbackAddress(settings.ip);
  return ResolveTheRest(request, env, std::move(settings));
}

std::string AttemptToken(const NodeSettings& settings, int64_t attempt) {
  const std::string key =
      settings.token.value.empty() ? "kdist launch --nodes (no token)" : settings.token.value;
  const std::string message = "kdist launch --nodes; job " + Quote(settings.job_id.value) +
                              "; attempt " + std::to_string(attempt);
  return HexText(DigestBytes(ComputeHmacSha256(key, message)));
}

int64_t EtcdLeaseSeconds(Nanos unreachable_timeout) {
  constexpr int64_t kShortestEtcdLease = 2;  // etcd's minimum at its default election timing
  const Nanos silence = KeepaliveFor(unreachable_timeout).user_timeout;
  const auto whole = std::chrono::duration_cast<std::chrono::seconds>(
      silence + std::chrono::seconds(1) - Nanos(1));  // rounded up
  return std::max<int64_t>(kShortestEtcdLease, whole.count());
}

RendezvousOptions BookOptionsFor(const NodeSettings& settings) {
  RendezvousOptions o;
  o.job_id = settings.job_id.value;
  o.min_nodes = settings.min_nodes;
  o.max_nodes = settings.max_nodes;
  o.processes_per_node = settings.processes_per_node;
  o.last_call = settings.last_call.value;
  o.join_timeout = settings.join_timeout.value;
  o.ledger.max_restarts = settings.max_restarts;
  o.ledger.max_reforms = settings.max_reforms.value;
  o.ledger.reform_window = settings.reform_window.value;
  o.scale_up_after = settings.scale_up_after.value;
  o.token = settings.token.value;
  o.reconnect_window = settings.unreachable_timeout.value;
  return o;
}

RendezvousServerOptions ServerOptionsFor(const NodeSettings& settings) {
  RendezvousServerOptions o;
  o.book = BookOptionsFor(settings);
  o.unreachable_timeout = settings.unreachable_timeout.value;
  // Every agent of the job may connect at once: none is reset for want of room.
  o.max_unadmitted = std::max<int64_t>(o.max_unadmitted, settings.max_nodes);
  return o;
}

Result<RendezvousAgentOptions> AgentOptionsFor(const NodeSettings& settings) {
  RendezvousAgentOptions o;
  KDIST_ASSIGN_OR_RETURN(o.rendezvous, EndpointFromLiteral(settings.ip, settings.port));
  o.where = settings.rendezvous.value;
  o.token = settings.token.value;
  o.join_timeout = settings.join_timeout.value;
  o.unreachable_timeout = settings.unreachable_timeout.value;
  return o;
}

}  // namespace kdist
