#include "config/clusters/gce_tpu.h"

#include <utility>

#include "base/text.h"
#include "config/clusters/gce_metadata.h"
#include "config/clusters/scheduler_vars.h"
#include "config/clusters/tpu_slices.h"

namespace kdist {
namespace {

constexpr std::string_view kName = "gce_tpu";

TpuValue FromMetadata(std::string_view key, const std::string& value) {
  const std::string source = "metadata " + std::string(key);
  return {value, source, source + "=" + Quote(value)};
}

// A metadata server that could not be asked: named, with what to do.
Status Unanswered(const Status& status) {
  return InvalidArgument(Prefix(kName) + status.message() +
                         ". On a Cloud TPU VM the metadata server answers at once: check "
                         "GCE_METADATA_IP and the VM's network. " + std::string(kExplicitWay));
}

// A MEGASCALE_* value: the environment's, else tpu-env's, else none.
Result<std::optional<TpuValue>> Megascale(const Environment& env, InstanceMetadata& metadata,
                                          std::string_view key) {
  if (const std::string* value = Lookup(env, key)) return std::optional(FromVariable(key, *value));
  Result<std::string> tpu_env = metadata.Attribute("tpu-env");
  if (!tpu_env.ok()) {
    if (tpu_env.status().code() == StatusCode::kNotFound) return std::optional<TpuValue>();
    return Unanswered(tpu_env.status());
  }
  std::optional<std::string> value = TpuEnvValue(*tpu_env, key);
  if (!value) return std::optional<TpuValue>();
  const std::string source = "metadata tpu-env " + std::string(key);
  return std::optional(TpuValue{*value, source, source + "=" + Quote(*value)});
}

DetectResult Detect(const Environment& env, const Machine& machine) {
  if (machine.metadata == nullptr) return std::optional<Detection>();
  InstanceMetadata& metadata = *machine.metadata;
  Result<std::string> number = metadata.Attribute("agent-worker-number");
  if (!number.ok()) {
    // No such attribute: this is not a Cloud TPU VM.
    if (number.status().code() == StatusCode::kNotFound) return std::optional<Detection>();
    return Unanswered(number.status());
  }
  Result<std::string> endpoints = metadata.Attribute("worker-network-endpoints");
  if (!endpoints.ok()) {
    if (endpoints.status().code() != StatusCode::kNotFound) return Unanswered(endpoints.status());
    return InvalidArgument(Prefix(kName) + metadata.Describe() + " gives agent-worker-number=" +
                           Quote(*number) + " but no worker-network-endpoints. " +
                           std::string(kExplicitWay));
  }
  TpuSlice slice;
  slice.detector = std::string(kName);
  slice.worker_id = FromMetadata("agent-worker-number", std::string(Trim(*number)));
  slice.workers_value = FromMetadata("worker-network-endpoints", *endpoints);
  Result<std::vector<std::string>> workers = GceWorkerHosts(*endpoints);
  if (!workers.ok()) {
    return InvalidArgument(Prefix(kName) + slice.workers_value.shown + " " +
                           workers.status().message() + " (JAX's two formats). " +
                           std::string(kExplicitWay));
  }
  slice.workers = std::move(workers).value();
  KDIST_ASSIGN_OR_RETURN(slice.megascale_coordinator,
                         Megascale(env, metadata, kEnvMegascaleCoordinator));
  KDIST_ASSIGN_OR_RETURN(slice.num_slices, Megascale(env, metadata, kEnvMegascaleNumSlices));
  KDIST_ASSIGN_OR_RETURN(slice.slice_id, Megascale(env, metadata, kEnvMegascaleSliceId));
  return TpuDetection(slice, env);
}

// "auto" asks only where TPU chips or TPU variables show, and not when
// TPU_SKIP_MDS_QUERY is set (JAX sets it itself on a machine without TPU chips).
bool WorthAsking(const Environment& env, const Machine& machine) {
  return Lookup(env, kEnvTpuSkipMdsQuery) == nullptr && LooksLikeTpu(env, machine);
}

}  // namespace

Detector GceTpuDetector() {
  Detector d{"gce_tpu",
             "Cloud TPU VMs (the GCE metadata server: agent-worker-number, "
             "worker-network-endpoints, tpu-env); asked under \"auto\" only where TPU chips or "
             "TPU variables show",
             "the metadata attribute agent-worker-number",
             {kEnvGceMetadataIp, kEnvTpuSkipMdsQuery, kEnvMegascaleCoordinator,
              kEnvMegascaleNumSlices, kEnvMegascaleSliceId, kEnvCoordinatorPort,
              kEnvJaxCoordinatorPort}};
  d.detect_on_machine = &Detect;
  d.worth_asking = &WorthAsking;
  return d;
}

}  // namespace kdist
