#include "config/clusters/gke_tpu.h"

#include <utility>

#include "base/text.h"
#include "config/clusters/scheduler_vars.h"
#include "config/clusters/tpu_slices.h"

namespace kdist {
namespace {

constexpr std::string_view kName = "gke_tpu";

DetectResult Detect(const Environment& env) {
  // JAX's order: TPU_PROCESS_ADDRESSES, then TPU_WORKER_HOSTNAMES.
  std::string_view list_name = "TPU_PROCESS_ADDRESSES";
  const std::string* list = Lookup(env, list_name);
  if (list == nullptr) {
    list_name = "TPU_WORKER_HOSTNAMES";
    list = Lookup(env, list_name);
  }
  if (list == nullptr) {
    // JAX reads the list from this file first; kdist's detectors read no files.
    if (const std::string* path = Lookup(env, "TPU_PROCESS_ADDRESSES_PATH")) {
      return Malformed(kName, "TPU_PROCESS_ADDRESSES_PATH", *path,
                       "names a file, which kdist's detectors do not read; set "
                       "TPU_PROCESS_ADDRESSES to its content (the workers' addresses separated "
                       "by commas), as GKE also does. " + std::string(kExplicitWay));
    }
    return std::optional<Detection>();
  }
  const std::string* worker_id = Lookup(env, "TPU_WORKER_ID");
  if (worker_id == nullptr) {
    return Incomplete(kName, env, {list_name, "TPU_WORKER_ID"},
                      "GKE sets both in every pod of a TPU node pool; set the missing one. ");
  }
  TpuSlice slice;
  slice.detector = std::string(kName);
  slice.workers_value = FromVariable(list_name, *list);
  slice.worker_id = FromVariable("TPU_WORKER_ID", *worker_id);
  Result<std::vector<std::string>> workers = GkeWorkerHosts(*list);
  if (!workers.ok()) {
    return Malformed(kName, list_name, *list,
                     workers.status().message() + "; expected host names or host:port "
                                                  "entries separated by commas");
  }
  slice.workers = std::move(workers).value();
  if (const std::string* v = Lookup(env, kEnvMegascaleCoordinator)) {
    slice.megascale_coordinator = FromVariable(kEnvMegascaleCoordinator, *v);
  }
  if (const std::string* v = Lookup(env, kEnvMegascaleNumSlices)) {
    slice.num_slices = FromVariable(kEnvMegascaleNumSlices, *v);
  }
  if (const std::string* v = Lookup(env, kEnvMegascaleSliceId)) {
    slice.slice_id = FromVariable(kEnvMegascaleSliceId, *v);
  }
  return TpuDetection(slice, env);
}

}  // namespace

Detector GkeTpuDetector() {
  return {"gke_tpu",
          "GKE TPU node pools (TPU_WORKER_HOSTNAMES or TPU_PROCESS_ADDRESSES, TPU_WORKER_ID; "
          "MEGASCALE_* for multislice)",
          "TPU_WORKER_HOSTNAMES, TPU_PROCESS_ADDRESSES or TPU_PROCESS_ADDRESSES_PATH",
          {"TPU_PROCESS_ADDRESSES", "TPU_WORKER_HOSTNAMES", "TPU_PROCESS_ADDRESSES_PATH",
           "TPU_WORKER_ID",
           kEnvMegascaleCoordinator, kEnvMegascaleNumSlices, kEnvMegascaleSliceId,
           kEnvCoordinatorPort, kEnvJaxCoordinatorPort},
          &Detect};
}

}  // namespace kdist
