#include "roll_call/roll_call_options.h"

#include <algorithm>

namespace kdist {

Hello MakeHello(const ClusterSpec& spec, const Identity& identity) {
  Hello hello;
  hello.process_id = spec.process_id.value;
  hello.num_processes = spec.num_processes.value;
  hello.fingerprint = spec.Fingerprint();
  const std::optional<Address> coordinator = spec.coordinator();
  hello.coordinator = coordinator ? coordinator->ToString() : "";
  hello.num_processes_source = spec.num_processes.source;
  hello.coordinator_source = spec.job_addresses.source;
  hello.jax_version = identity.jax_version;
  hello.host = identity.host;
  hello.pid = identity.pid;
  hello.token = spec.rendezvous_token.value;
  return hello;
}

BackoffPolicy WorkerBackoff(int64_t num_processes) {
  constexpr Nanos kCapPerProcess = std::chrono::microseconds(250);
  constexpr double kJitter = 0.5;
  const int64_t n = std::max<int64_t>(num_processes, 1);
  // Every delay, even with the most jitter taken off, is at least
  // n / kMaxRefusedConnectsPerSecond, so the job as a whole stays under that rate.
  const Nanos floor = std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(
      static_cast<double>(n) / kMaxRefusedConnectsPerSecond / (1.0 - kJitter)));
  const Nanos initial = std::max<Nanos>(std::chrono::milliseconds(1), floor);
  const Nanos cap = std::max(std::clamp<Nanos>(kCapPerProcess * n, std::chrono::milliseconds(2),
                                               std::chrono::seconds(1)),
                             initial);
  return BackoffPolicy{initial, cap, 2.0, kJitter};
}

Nanos ServiceProbeInterval(int64_t num_processes) {
  const double seconds =
      static_cast<double>(std::max<int64_t>(num_processes, 1)) / kMaxRefusedConnectsPerSecond;
  return std::max<Nanos>(kMinServiceProbeInterval,
                         std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(seconds)));
}


}  // namespace kdist
