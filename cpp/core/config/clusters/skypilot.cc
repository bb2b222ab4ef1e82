#include "config/clusters/skypilot.h"

#include <utility>

#include "base/scalars.h"
#include "base/text.h"
#include "config/clusters/scheduler_vars.h"
#include "net/address.h"

namespace kdist {
namespace {

constexpr std::string_view kName = "skypilot";
constexpr uint64_t kMaxNodes = uint64_t{1} << 16;

DetectResult Detect(const Environment& env) {
  const std::vector<std::string_view> wanted = {"SKYPILOT_NODE_IPS", "SKYPILOT_NODE_RANK",
                                                "SKYPILOT_NUM_NODES"};
  bool any = false;
  for (std::string_view name : wanted) any = any || Lookup(env, name) != nullptr;
  if (!any) return std::optional<Detection>();
  if (!HasAll(env, wanted)) {
    return Incomplete(kName, env, wanted, "SkyPilot sets all three on every node of a task. ");
  }
  const std::string& ips_text = *Lookup(env, "SKYPILOT_NODE_IPS");
  const std::string& rank_text = *Lookup(env, "SKYPILOT_NODE_RANK");
  const std::string& count_text = *Lookup(env, "SKYPILOT_NUM_NODES");
  std::vector<std::string> ips;
  for (std::string_view line : Split(ips_text, '\n')) {
    line = Trim(line);
    if (!line.empty()) ips.emplace_back(line);
  }
  if (ips.empty()) return Malformed(kName, "SKYPILOT_NODE_IPS", ips_text, "names no node");
  Result<uint64_t> count = ParseDigits(Trim(count_text));
  if (!count.ok() || *count == 0 || *count > kMaxNodes) {
    return Malformed(kName, "SKYPILOT_NUM_NODES", count_text,
                     "is not a number of nodes; expected a positive integer");
  }
  if (*count != ips.size()) {
    return Malformed(kName, "SKYPILOT_NUM_NODES", count_text,
                     "disagrees with SKYPILOT_NODE_IPS, which lists " +
                         std::to_string(ips.size()) + " node(s) (" + Quote(ips_text) + ")");
  }
  Result<uint64_t> rank = ParseDigits(Trim(rank_text));
  if (!rank.ok() || *rank >= *count) {
    return Malformed(kName, "SKYPILOT_NODE_RANK", rank_text,
                     "is not a node index below SKYPILOT_NUM_NODES=" + Quote(count_text));
  }
  PortChoice port{kSkyPilotCoordinatorPort, ""};
  std::string shown = "head node " + ips.front() + " of " + Shown("SKYPILOT_NODE_IPS", ips_text);
  KDIST_RETURN_IF_ERROR(ApplyPortOverride(kName, env, port, &shown).status());
  Result<Address> coordinator = HostPort(ips.front(), port.port);
  if (!coordinator.ok()) {
    return Malformed(kName, "SKYPILOT_NODE_IPS", ips_text,
                     "names the head node " + Quote(ips.front()) + ", which " +
                         coordinator.status().message());
  }
  Detection d;
  d.detector = std::string(kName);
  std::string variables = "SKYPILOT_NODE_IPS";
  if (!port.variable.empty()) variables += ", " + port.variable;
  d.job_addresses = DetectedValue{coordinator->ToString(), variables, shown};
  d.num_processes = DetectedValue{std::to_string(*count), "SKYPILOT_NUM_NODES",
                                  Shown("SKYPILOT_NUM_NODES", count_text)};
  d.process_id = DetectedValue{std::to_string(*rank), "SKYPILOT_NODE_RANK",
                               Shown("SKYPILOT_NODE_RANK", rank_text)};
  for (const std::string& ip : ips) d.process_host_runs.emplace_back(ip, 1);
  d.process_hosts_source = "skypilot (SKYPILOT_NODE_IPS)";
  return std::optional<Detection>(std::move(d));
}

}  // namespace

Detector SkyPilotDetector() {
  return {"skypilot",
          "SkyPilot clusters, one process per node (SKYPILOT_NODE_IPS, SKYPILOT_NODE_RANK, "
          "SKYPILOT_NUM_NODES)",
          "SKYPILOT_NODE_IPS, SKYPILOT_NODE_RANK or SKYPILOT_NUM_NODES",
          {"SKYPILOT_NODE_IPS", "SKYPILOT_NODE_RANK", "SKYPILOT_NUM_NODES", kEnvCoordinatorPort,
           kEnvJaxCoordinatorPort},
          &Detect};
}

}  // namespace kdist
