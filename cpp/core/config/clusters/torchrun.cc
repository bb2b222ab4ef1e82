#include "config/clusters/torchrun.h"

#include <utility>

#include "base/text.h"
#include "config/clusters/scheduler_vars.h"
#include "net/address.h"

namespace kdist {
namespace {

DetectResult Detect(const Environment& env) {
  constexpr std::string_view kName = "torchrun";
  if (!Lookup(env, "WORLD_SIZE") && !Lookup(env, "RANK")) return std::optional<Detection>();
  const std::vector<std::string_view> wanted = {"WORLD_SIZE", "RANK", "MASTER_ADDR",
                                                "MASTER_PORT"};
  if (!HasAll(env, wanted)) {
    return Incomplete(kName, env, wanted,
                      "torchrun, torch.distributed.launch and Kubeflow's PyTorchJob set all "
                      "four; set the missing ones. ");
  }
  const std::string& master_addr = *Lookup(env, "MASTER_ADDR");
  const std::string& master_port = *Lookup(env, "MASTER_PORT");

  PortChoice port;
  std::string shown = Shown("MASTER_ADDR", master_addr);
  KDIST_ASSIGN_OR_RETURN(const bool overridden, ApplyPortOverride(kName, env, port, &shown));
  if (!overridden) {
    Result<uint16_t> parsed = ParsePort(master_port);
    if (!parsed.ok()) return Malformed(kName, "MASTER_PORT", master_port, parsed.status().message());
    port = {*parsed, "MASTER_PORT"};
    shown += ", " + Shown("MASTER_PORT", master_port);
    const std::string* agent_store = Lookup(env, "TORCHELASTIC_USE_AGENT_STORE");
    if (agent_store != nullptr && *agent_store == "True") {
      // torchrun's agent serves its TCPStore on MASTER_PORT: take the next port.
      port.port = *parsed == 65535 ? 65534 : static_cast<uint16_t>(*parsed + 1);
      port.variable = "MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE";
      shown += " (port " + std::to_string(port.port) +
               ": torchrun's agent serves its store on MASTER_PORT)";
    }
  }
  if (master_addr.empty()) return Malformed(kName, "MASTER_ADDR", master_addr, "is empty");
  Result<Address> coordinator = HostPort(master_addr, port.port);
  if (!coordinator.ok()) {
    return Malformed(kName, "MASTER_ADDR", master_addr, coordinator.status().message());
  }

  Detection d;
  d.detector = std::string(kName);
  d.job_addresses =
      DetectedValue{coordinator->ToString(), "MASTER_ADDR, " + port.variable, shown};
  d.num_processes = Copy("WORLD_SIZE", *Lookup(env, "WORLD_SIZE"));
  d.process_id = Copy("RANK", *Lookup(env, "RANK"));
  if (const std::string* v = Lookup(env, "LOCAL_RANK")) d.local_rank = Copy("LOCAL_RANK", *v);
  if (const std::string* v = Lookup(env, "LOCAL_WORLD_SIZE")) {
    d.local_size = Copy("LOCAL_WORLD_SIZE", *v);
  }
  if (const std::string* v = Lookup(env, "TORCHELASTIC_RESTART_COUNT")) {
    d.restart_count = Copy("TORCHELASTIC_RESTART_COUNT", *v);
  }
  return std::optional<Detection>(std::move(d));
}

}  // namespace

Detector TorchrunDetector() {
  return {"torchrun", "torchrun-style launchers (torchrun, torch.distributed.launch, Kubeflow)",
          "WORLD_SIZE or RANK",
          {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
           "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RESTART_COUNT", kEnvCoordinatorPort,
           kEnvJaxCoordinatorPort},
          &Detect};
}

}  // namespace kdist
