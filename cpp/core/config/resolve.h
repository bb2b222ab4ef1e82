// Resolve: every setting of initialize() in one place and one order —
// explicit argument, then environment variable, then a detected scheduler
// (config/detectors.h), then default — validated before anything else happens, each
// value remembering its source.
#ifndef KDIST_CONFIG_RESOLVE_H_
#define KDIST_CONFIG_RESOLVE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/environment.h"
#include "base/status.h"
#include "config/cluster_spec.h"
#include "config/clusters/detection.h"
#include "net/keepalive.h"

namespace kdist {

inline constexpr std::string_view kEnvJobAddresses = "KERAS_DISTRIBUTION_JOB_ADDRESSES";
inline constexpr std::string_view kEnvNumProcesses = "KERAS_DISTRIBUTION_NUM_PROCESSES";
inline constexpr std::string_view kEnvProcessId = "KERAS_DISTRIBUTION_PROCESS_ID";
// JAX's own variables (a job written for plain JAX, a Kubeflow JAX runtime),
// read after the KERAS_DISTRIBUTION_* ones.
inline constexpr std::string_view kEnvJaxCoordinatorAddress = "JAX_COORDINATOR_ADDRESS";
inline constexpr std::string_view kEnvJaxNumProcesses = "JAX_NUM_PROCESSES";
inline constexpr std::string_view kEnvJaxProcessId = "JAX_PROCESS_ID";
inline constexpr std::string_view kEnvJaxCoordinatorBindAddress = "JAX_COORDINATOR_BIND_ADDRESS";
// What JAX's CPU collectives (Gloo) advertise to the other hosts: an address of
// this host, or an interface whose address it is (net/local_address.h).
inline constexpr std::string_view kEnvCollectivesAddress = "KDIST_COLLECTIVES_ADDRESS";
inline constexpr std::string_view kEnvCollectivesInterface = "KDIST_COLLECTIVES_INTERFACE";
inline constexpr std::string_view kEnvInitTimeout = "KDIST_INIT_TIMEOUT";
inline constexpr std::string_view kEnvClusterDetection = "KDIST_CLUSTER_DETECTION";
// The roll call (on/off) and its token. The former names, KDIST_PREFLIGHT and
// KDIST_RENDEZVOUS_TOKEN, keep working: the new name wins when it is set, and
// both set to different values is an error that names both.
inline constexpr std::string_view kEnvRollCall = "KDIST_ROLL_CALL";
inline constexpr std::string_view kEnvRollCallToken = "KDIST_ROLL_CALL_TOKEN";
inline constexpr std::string_view kEnvPreflight = "KDIST_PREFLIGHT";             // former name
inline constexpr std::string_view kEnvRendezvousToken = "KDIST_RENDEZVOUS_TOKEN";  // former name
// After the start (the liveness channel, JAX's heartbeat and shutdown barrier).
inline constexpr std::string_view kEnvHeartbeatTimeout = "KDIST_HEARTBEAT_TIMEOUT";
inline constexpr std::string_view kEnvShutdownTimeout = "KDIST_SHUTDOWN_TIMEOUT";
inline constexpr std::string_view kEnvOnPeerFailure = "KDIST_ON_PEER_FAILURE";
// How strictly the processes' environments must agree in the roll call
// (roll_call/consistency.h): strict, warn (the default), off.
inline constexpr std::string_view kEnvConsistency = "KDIST_CONSISTENCY";
// How long a process's host may answer nothing before the liveness channel names
// it unreachable (TCP keepalive is sized from it).
inline constexpr std::string_view kEnvUnreachableTimeout = "KDIST_UNREACHABLE_TIMEOUT";
// Where this process records how its job ended (set per process by kdist launch and
// kdist.testing; liveness/verdict_record.h).
inline constexpr std::string_view kEnvVerdictFile = "KDIST_VERDICT_FILE";
// Stopping together: the signals that are stop requests, and the stall watchdog.
inline constexpr std::string_view kEnvStopSignals = "KDIST_STOP_SIGNALS";
inline constexpr std::string_view kEnvStallTimeout = "KDIST_STALL_TIMEOUT";
// How many times this job was started again (requeued, preempted, restarted by
// its launcher): from the environment only, else the detected scheduler's.
inline constexpr std::string_view kEnvRestartCount = "KDIST_RESTART_COUNT";
inline constexpr int64_t kDefaultHeartbeatTimeoutSeconds = 100;  // JAX's own default
inline constexpr int64_t kDefaultShutdownTimeoutSeconds = 300;   // JAX's own default
inline constexpr double kDefaultUnreachableTimeoutSeconds =
    std::chrono::duration<double>(kDefaultUnreachableTimeout).count();  // net/keepalive.h
inline constexpr int64_t kMaxJaxTimeoutSeconds = 1000000;
inline constexpr size_t kMaxRollCallTokenBytes = 1024;

inline constexpr int64_t kMaxProcesses = int64_t{1} << 20;
inline constexpr double kDefaultTimeoutSeconds = 300.0;  // JAX's own default
inline constexpr double kMaxTimeoutSeconds = 1e6;

// The arguments of initialize() as the caller passed them, in text form
// (integers in decimal, booleans as "true"/"false"); nullopt = not passed.
// Python has already rejected wrong types (a float or bool for an integer).
struct Request {
  std::optional<std::string> job_addresses;
  std::optional<std::string> num_processes;
  std::optional<std::string> process_id;
  std::optional<std::string> timeout;
  std::optional<std::string> cluster_detection;
  std::optional<std::string> preflight;
  std::optional<std::string> heartbeat_timeout;
  std::optional<std::string> shutdown_timeout;
  std::optional<std::string> on_peer_failure;
  std::optional<std::string> consistency;
  std::optional<std::string> stop_signals;
  std::optional<std::string> stall_timeout;
  std::optional<std::string> unreachable_timeout;
  std::optional<std::string> tls;
};

// The values cluster_detection accepts, in the order they are listed:
// "auto", "none", then every detector's name in table order.
std::vector<std::string> ClusterDetectionModes();

// JAX's variables that place a process in a job (its coordinator, the count,
// its id, its bind address and port, its local devices) and kdist's port
// override: what a launcher of a fresh job leaves out of the environment it
// was given, lest the new job join the one its starter belongs to.
std::vector<std::string> JaxJobVariables();

// Resolves and validates. Each cluster setting comes from the argument,
// else its KERAS_DISTRIBUTION_* variable, else JAX's own variable
// (JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID). A detected
// scheduler fills only the cluster settings (job addresses, process count,
// process id) that none of those gives, and nothing when the explicit
// process count is 1. When it fills any of them, the explicit ones must agree
// with its values: an explicit process count or id that contradicts the
// scheduler's is an error naming both (a job taken half from the scheduler and
// half from elsewhere cannot form); explicit settings that describe the whole
// job leave the scheduler nothing to fill and win without a check (a launcher
// inside a job step). The restart count comes from KDIST_RESTART_COUNT, else
// the detected scheduler, else 0. Failure is kInvalidArgument with a message
// that names the value, where it came from, and the expected form.
Result<ClusterSpec> Resolve(const Request& request, const Environment& env);
// The same on `machine` (config/clusters/detection.h): what the platform
// detectors may read beyond the snapshot. Under "auto", when explicit settings
// leave the detectors nothing to fill, its metadata server is not asked.
Result<ClusterSpec> Resolve(const Request& request, const Environment& env,
                            const Machine& machine);

// A duration as the command line's options take one (`kdist launch --timeout`,
// `kdist doctor --probe-timeout`): a positive, finite number of seconds, at
// most kMaxTimeoutSeconds. Failure is kInvalidArgument whose message is the
// expected form alone, "expected a positive number of seconds (at most
// 1000000)", for the caller to follow with what it received.
Result<double> ParseTimeoutSeconds(std::string_view text);

}  // namespace kdist

#endif  // KDIST_CONFIG_RESOLVE_H_
