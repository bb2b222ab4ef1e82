// What a scheduler detector is and what it returns: the entry each
// config/clusters/<scheduler>.h gives the table of detectors (config/detectors.h), and the
// values it found, each with the variables it came from.
#ifndef KDIST_CONFIG_CLUSTERS_DETECTION_H_
#define KDIST_CONFIG_CLUSTERS_DETECTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/environment.h"
#include "base/status.h"

namespace kdist {

// One value a detector found.
struct DetectedValue {
  std::string text;       // parsed by the resolver like any other setting: "3", "node01:61234"
  std::string variables;  // where it came from: "SLURM_PROCID", "SLURM_STEP_NODELIST, SLURM_JOB_ID"
  std::string shown;      // how messages show it: SLURM_PROCID="3"
};

struct Detection {
  std::string detector;  // the detector's name: "slurm"
  std::optional<DetectedValue> job_addresses;  // the coordinator's, or every process's (first: coordinator)
  std::optional<DetectedValue> num_processes;
  std::optional<DetectedValue> process_id;
  std::optional<DetectedValue> local_rank;  // this process's index among those on its host
  std::optional<DetectedValue> local_size;  // the number of the job's processes on its host
  // How many times the scheduler started this job again (a requeued or
  // preempted Slurm job, a torchrun restart), when it says.
  std::optional<DetectedValue> restart_count;
  // Where each process runs, when the scheduler's layout says: runs of
  // consecutive ids on one host, in id order ({"node-1", 4}, {"node-2", 4}:
  // ids 0-3 on node-1, 4-7 on node-2), or a prefix that the id completes
  // ("train-" gives train-0, train-1, ...). Process 0 spells them out
  // (ClusterSpec::process_hosts) to name processes that never arrived.
  std::vector<std::pair<std::string, int64_t>> process_host_runs;
  std::string process_host_prefix;
  std::string process_hosts_source;  // the variables they come from
  // For each value left out: why, and what to set instead.
  std::string job_addresses_hint;
  std::string num_processes_hint;
  std::string process_id_hint;
};

using DetectResult = Result<std::optional<Detection>>;

// The GCE metadata server's instance attributes, as the Cloud TPU detector
// asks for them (config/clusters/gce_metadata.h reaches the real server; tests
// pass a fake).
class InstanceMetadata {
 public:
  virtual ~InstanceMetadata() = default;
  // The attribute's text ("agent-worker-number" gives "1"). kNotFound when
  // the server answers that it has none; otherwise an error whose message
  // names the server, what was asked and why it failed (kUnavailable,
  // kDeadlineExceeded), within the client's bound.
  virtual Result<std::string> Attribute(std::string_view key) = 0;
  // The server as messages name it: "the GCE metadata server at
  // metadata.google.internal (GCE_METADATA_IP not set)".
  virtual std::string Describe() const = 0;
};

// What this machine shows beyond the environment, for the platform detectors
// (Cloud TPU): its TPU chips (/dev/accel*, /dev/vfio/*, read once at the
// edge) and its metadata server. The default shows no chips and no server.
struct Machine {
  bool tpu_chips = false;
  std::string tpu_chips_shown;             // "/dev/accel0, /dev/accel1" for messages
  InstanceMetadata* metadata = nullptr;  // nullptr: no server can be asked
};

struct Detector {
  std::string_view name;        // the public value of cluster_detection / KDIST_CLUSTER_DETECTION
  std::string_view summary;     // what it reads, for help texts and `kdist doctor`
  std::string_view presence;    // the variables whose presence means "this scheduler is here"
  // Every variable it reads, the coordinator port overrides included; for
  // help texts and tests. Presence is decided by `detect` alone (see
  // `presence`): a variable here does not make the detector present.
  std::vector<std::string_view> variables;
  // A scheduler's detector: a pure function of the snapshot.
  DetectResult (*detect)(const Environment& env) = nullptr;
  // A platform's detector (gce_tpu) instead: it may also read the machine,
  // the metadata server included.
  DetectResult (*detect_on_machine)(const Environment& env, const Machine& machine) = nullptr;
  // Whether "auto" (and `kdist doctor`) asks this detector at all on this
  // machine; nullptr: always. A platform detector that costs a DNS lookup or
  // an HTTP request is asked only where its platform shows (TPU chips, or its
  // variables), so the start elsewhere pays nothing for it.
  bool (*worth_asking)(const Environment& env, const Machine& machine) = nullptr;
};

// Runs `detector` on the snapshot and the machine.
inline DetectResult RunDetector(const Detector& detector, const Environment& env,
                                const Machine& machine) {
  if (detector.detect_on_machine != nullptr) return detector.detect_on_machine(env, machine);
  return detector.detect(env);
}

}  // namespace kdist

#endif  // KDIST_CONFIG_CLUSTERS_DETECTION_H_
