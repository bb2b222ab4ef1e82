#include "roll_call_options.h"

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

int ListenBacklog(int64_t num_processes) {
  return static_cast<int>(std::clamp<int64_t>(num_processes + 64, 128, 65535));
}

Waiter::Waiter(Clock& clock, const RollCallOptions& options)
    : clock_(clock), options_(options), next_check_(options.deadline.start()) {
  next_progress_ = NextProgressAfter(clock.Now());
}

Nanos Waiter::ProgressInterval() const {
  return std::max(options_.progress_interval, kMinWaiterInterval);
}

Nanos Waiter::CheckInterval() const { return std::max(options_.check_interval, kMinWaiterInterval); }

Nanos Waiter::NextProgressAfter(Nanos now) const {
  // Lines fall on whole intervals since the start of initialize(), the first
  // one strictly after `now`: one cadence across the phases of a start, and
  // the lines missed by a long stall are skipped instead of printed.
  const Nanos start = options_.deadline.start();
  const Nanos interval = ProgressInterval();
  return start + interval * ((now - start) / interval + 1);
}

Nanos Waiter::Slice(Nanos want) const {
  const Nanos now = clock_.Now();
  Nanos slice = std::min(want, options_.deadline.end() - now);
  if (options_.interrupted) slice = std::min(slice, std::max(Nanos(0), next_check_ - now));
  if (options_.progress) slice = std::min(slice, std::max(Nanos(0), next_progress_ - now));
  return std::max(slice, Nanos(0));
}

Status Waiter::Check(const std::function<std::string()>& line) {
  const Nanos now = clock_.Now();
  if (options_.interrupted && now >= next_check_) {
    next_check_ = now + CheckInterval();
    KDIST_RETURN_IF_ERROR(options_.interrupted());
  }
  if (now >= next_progress_) {
    next_progress_ = NextProgressAfter(now);
    if (options_.progress && line) options_.progress(line());
  }
  return Status::Ok();
}

Status Waiter::Sleep(Nanos duration, const std::function<std::string()>& line) {
  const Nanos until = std::min(clock_.Now() + duration, options_.deadline.end());
  // Each pass sleeps at least 1 ns of a bounded remainder, so the loop ends.
  while (clock_.Now() < until) {
    const Nanos slice = std::max(Nanos(1), std::min(until - clock_.Now(), Slice(until - clock_.Now())));
    clock_.Sleep(slice);
    KDIST_RETURN_IF_ERROR(Check(line));
  }
  return Status::Ok();
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned difference = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    difference |= static_cast<unsigned>(x ^ y);
  }
  return difference == 0;
}

}  // namespace kdist
