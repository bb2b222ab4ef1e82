// ClusterSpec: the resolved configuration of one process of a job, where each
// value remembers where it came from.
#ifndef KDIST_CONFIG_CLUSTER_SPEC_H_
#define KDIST_CONFIG_CLUSTER_SPEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "config/policies.h"
#include "net/address.h"

namespace kdist {

// Where a value came from: "argument", an environment variable's name, a
// scheduler detector's name, a derivation ("job_addresses"), or "default".
template <typename T>
struct Sourced {
  T value{};
  std::string source;
};

struct ClusterSpec {
  // Empty only for a single process started without a coordinator.
  Sourced<std::vector<Address>> job_addresses;
  Sourced<int64_t> num_processes;
  Sourced<int64_t> process_id;
  Sourced<double> timeout_seconds;
  // Whether the roll call runs (KDIST_ROLL_CALL; the argument keeps its public
  // name, preflight=).
  Sourced<bool> preflight;
  Sourced<std::string> cluster_detection;
  // JAX's heartbeat timeout (a process silent this long is dead) and
  // shutdown timeout (the bound of its shutdown barrier), whole seconds; part
  // of the fingerprint, so every process agrees on them.
  Sourced<int64_t> heartbeat_timeout_seconds;
  Sourced<int64_t> shutdown_timeout_seconds;
  // How long a process's host may answer nothing (no FIN, no RST: it lost
  // power or its network) before the liveness channel names it unreachable and
  // the job ends; TCP keepalive is sized from it (LivenessOptionsFor). Below
  // the heartbeat timeout. Part of the fingerprint. A duration, as the stall
  // timeout is: it crosses into the channel without turning back into seconds.
  Sourced<Nanos> unreachable_timeout;
  // What this process does when another fails or dies (config/policies.h).
  Sourced<PeerFailurePolicy> on_peer_failure;
  Sourced<ConsistencyPolicy> consistency;  // roll_call/consistency.h says what each compares
  // The signals that are stop requests for the whole job (stop/stop_signals.h);
  // empty: none. Part of the fingerprint: a signal that stops one process must
  // stop them all the same way.
  Sourced<std::vector<int>> stop_signals;
  // The stall watchdog: a process that reports no progress for this long
  // ends the job; nullopt: off. Part of the fingerprint.
  Sourced<std::optional<Nanos>> stall_timeout;
  // How many times this job was started again: KDIST_RESTART_COUNT, else the
  // detected scheduler's (SLURM_RESTART_COUNT after a requeue or preemption,
  // TORCHELASTIC_RESTART_COUNT), else 0 ("default"). Not part of the
  // fingerprint.
  Sourced<int64_t> restart_count;
  // Where this process sits when `kdist launch --nodes` started it
  // (config/node_place.h): its machine's rank, the number of machines, its index
  // on its machine, the job's id; nullopt / "" (source "default") when not set.
  // Not part of the fingerprint.
  Sourced<std::optional<int64_t>> node_rank;
  Sourced<std::optional<int64_t>> num_nodes;
  Sourced<std::optional<int64_t>> local_process_id;
  Sourced<std::string> job_id;
  // The job's run (KDIST_RUN_ID, drawn by `kdist launch` or the nodes' rendezvous, the same
  // in every attempt of one job, another in any other); "" ("default") when not set.
  Sourced<std::string> run_id;
  // The previous attempt's process count (KDIST_PREVIOUS_NUM_PROCESSES, set by
  // `kdist launch --nodes` from its second attempt on; config/node_place.h),
  // nullopt ("default") in a first attempt or without it. Not part of the
  // fingerprint.
  Sourced<std::optional<int64_t>> previous_num_processes;
  // The thrash guard of the job's agents (config/thrash_guard.h: KDIST_MAX_REFORMS,
  // KDIST_REFORM_WINDOW, which the agent sets for its processes): shown, never used here.
  Sourced<int64_t> max_reforms{4, "default"};
  Sourced<Nanos> reform_window{std::chrono::minutes(10), "default"};
  // After the roll call: this process's environment fingerprint as compared
  // (empty when nothing was), and the differences let pass.
  std::vector<std::pair<std::string, std::string>> compared_environment;
  std::string consistency_notes;
  // KDIST_ROLL_CALL_TOKEN (formerly KDIST_RENDEZVOUS_TOKEN): a secret every
  // process of the roll call must present; empty when unset. Never printed,
  // not part of the fingerprint. (The field keeps its name for the bindings.)
  Sourced<std::string> rendezvous_token;

  // Whether JAX's coordination service runs under mutual TLS with certificates kdist
  // makes from the token (config/tls_settings.h): KDIST_TLS, default "auto". Not part of
  // the fingerprint: the roll call compares what each process made of it (its
  // environment fingerprint's "tls" entry).
  Sourced<TlsPolicy> tls;
  // The user's own mTLS settings in JAX's variables (JAX_MTLS_CERT_FILE, ...), paths
  // ("" with source "default" when unset); they win over kdist's certificates. Not
  // part of the fingerprint (each host has its own files).
  Sourced<std::string> mtls_cert_file;
  Sourced<std::string> mtls_key_file;
  Sourced<std::string> mtls_ca_file;
  Sourced<std::string> mtls_peer_uri_prefix;
  // After initialize(): what the start did about TLS, in words ("on: kdist's
  // certificates for attempt 0 of job \"t57\"", "off: the job has no token ..."); empty
  // before, and for a job without a coordinator. Not part of the fingerprint.
  std::string tls_state;

  // KDIST_VERDICT_FILE: where this process appends the records of how its job
  // ended (liveness/verdict_record.h), for the launcher that started it; "" for
  // none. Read once, here; a launcher sets it per process (not in the fingerprint).
  Sourced<std::string> verdict_file;

  // Where process 0 binds the coordinator port, for the roll call and JAX's
  // service, when that is not every interface on the coordinator's port
  // (JAX_COORDINATOR_BIND_ADDRESS: a host that binds one address and
  // advertises another). An IP literal; nullopt: every interface. Source
  // "default" or "JAX_COORDINATOR_BIND_ADDRESS".
  Sourced<std::optional<Address>> coordinator_bind_address;

  // What JAX's CPU collectives (Gloo) advertise to the other hosts, when the
  // user chose it: an IP literal of this host (KDIST_COLLECTIVES_ADDRESS), or
  // a network interface's name (KDIST_COLLECTIVES_INTERFACE); "" ("default")
  // when not, and initialize() takes the address this host reaches the
  // coordinator from. Not part of the fingerprint (each host has its own).
  Sourced<std::string> collectives_address;
  Sourced<std::string> collectives_interface;

  // The scheduler detector that recognised this environment ("slurm"), even
  // when explicit settings left it nothing to fill; nullopt when none did.
  std::optional<std::string> scheduler;

  // The host of each process id, where the configuration says (the job's
  // addresses name every process, or the scheduler lays processes out on
  // known hosts: Slurm's block distribution, Kubernetes' pod names); empty
  // otherwise, and in every process but 0, which alone names the hosts of
  // processes that never arrive. Not part of the fingerprint.
  Sourced<std::vector<std::string>> process_hosts;

  // The local device ids this process hands to JAX; nullopt: every device it
  // sees. Source "default", "KDIST_LOCAL_DEVICE_IDS", or the detector when
  // KDIST_LOCAL_DEVICE_IDS=auto applied its suggestion ("slurm (SLURM_LOCALID)").
  Sourced<std::optional<std::vector<int64_t>>> local_device_ids;
  // What the detected scheduler suggests (nullopt: keep every device), and why.
  std::optional<std::vector<int64_t>> suggested_local_device_ids;
  std::string local_devices_reason;
  // Whether local_device_ids is that suggestion (KDIST_LOCAL_DEVICE_IDS=auto).
  bool local_devices_suggestion_applied = false;

  // The job-wide random seed, agreed by initialize() (nullopt before): from the
  // roll call's "go", JAX's key-value store, or the program's own Keras seed.
  // Not part of the fingerprint or of SameJobAndProcess.
  Sourced<std::optional<int64_t>> seed;

  // The coordinator (the first job address), when there is one.
  std::optional<Address> coordinator() const;

  // A short hex digest of the settings every process of the job must share
  // (coordinator address, process count, JAX's heartbeat and shutdown
  // timeouts, the unreachable timeout, the consistency policy, the stop
  // signals and the stall timeout), for comparing processes.
  std::string Fingerprint() const;

  // Whether two specs describe the same process of the same job: the same
  // addresses, process count, process id and local devices. Sources and
  // deadlines may differ.
  bool SameJobAndProcess(const ClusterSpec& other) const;
};

// 64-bit FNV-1a of `text`, as 16 lower-case hex digits.
std::string HexDigest(std::string_view text);

}  // namespace kdist

#endif  // KDIST_CONFIG_CLUSTER_SPEC_H_
