#include "config/clusters/tpu_slices.h"

#include <utility>

#include "base/scalars.h"
#include "base/text.h"
#include "config/clusters/scheduler_vars.h"
#include "net/address.h"

namespace kdist {
namespace {

// The most workers in one slice and slices in one job kdist takes.
constexpr uint64_t kMaxTpuWorkers = uint64_t{1} << 16;

Status Bad(const std::string& detector, const TpuValue& value, std::string_view reason) {
  return InvalidArgument(Prefix(detector) + value.shown + " " + std::string(reason) + " " +
                         std::string(kExplicitWay));
}

Result<uint64_t> Number(const std::string& detector, const TpuValue& value, std::string_view what) {
  Result<uint64_t> parsed = ParseDigits(Trim(value.text));
  if (!parsed.ok() || *parsed > kMaxTpuWorkers) {
    return Bad(detector, value, "is not " + std::string(what) + "; expected a non-negative integer");
  }
  return *parsed;
}

// The host of "host", "host:port", "[v6]:port" or a bare IPv6 address.
std::string HostOf(std::string_view entry) {
  entry = Trim(entry);
  if (!entry.empty() && entry.front() == '[') {
    const size_t close = entry.find(']');
    return std::string(close == std::string_view::npos ? entry : entry.substr(0, close + 1));
  }
  const size_t colon = entry.find(':');
  if (colon != std::string_view::npos && entry.find(':', colon + 1) == std::string_view::npos) {
    return std::string(entry.substr(0, colon));
  }
  return std::string(entry);
}

std::string Sources(std::vector<std::string> parts) { return Join(parts, ", "); }

}  // namespace

bool LooksLikeTpu(const Environment& env, const Machine& machine) {
  if (machine.tpu_chips) return true;
  for (std::string_view name : kTpuVariables) {
    if (Lookup(env, name) != nullptr) return true;
  }
  return false;
}

TpuValue FromVariable(std::string_view name, const std::string& value) {
  return {value, std::string(name), Shown(name, value)};
}

Result<std::vector<std::string>> GceWorkerHosts(std::string_view text) {
  std::vector<std::string> hosts;
  for (std::string_view worker : Split(Trim(text), ',')) {
    const std::vector<std::string_view> parts = Split(Trim(worker), ':');
    std::string_view host;
    if (parts.size() == 1) {
      host = parts[0];
    } else if (parts.size() == 3) {
      host = parts[2];
    } else {
      return InvalidArgument("has the worker " + Quote(worker) +
                             ", which is neither a host name nor name:id:ip");
    }
    if (host.empty()) return InvalidArgument("names an empty worker");
    hosts.emplace_back(host);
  }
  if (hosts.size() > kMaxTpuWorkers) return InvalidArgument("names too many workers");
  return hosts;
}

Result<std::vector<std::string>> GkeWorkerHosts(std::string_view text) {
  std::vector<std::string> hosts;
  for (std::string_view entry : Split(Trim(text), ',')) {
    std::string host = HostOf(entry);
    if (host.empty()) return InvalidArgument("names an empty worker");
    hosts.push_back(std::move(host));
  }
  if (hosts.size() > kMaxTpuWorkers) return InvalidArgument("names too many workers");
  return hosts;
}

std::optional<std::string> TpuEnvValue(std::string_view tpu_env, std::string_view key) {
  std::optional<std::string> found;
  for (std::string_view line : Split(tpu_env, '\n')) {
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || Trim(line.substr(0, colon)) != key) continue;
    std::string_view value = Trim(line.substr(colon + 1));
    while (!value.empty() && value.front() == '\'') value.remove_prefix(1);
    while (!value.empty() && value.back() == '\'') value.remove_suffix(1);
    found = std::string(value);  // the last line wins, as in JAX
  }
  return found;
}

DetectResult TpuDetection(const TpuSlice& slice, const Environment& env) {
  const std::string& name = slice.detector;
  if (slice.workers.empty()) return Bad(name, slice.workers_value, "names no worker");
  const uint64_t workers = slice.workers.size();
  KDIST_ASSIGN_OR_RETURN(const uint64_t worker_id, Number(name, slice.worker_id, "a worker id"));
  if (worker_id >= workers) {
    return Bad(name, slice.worker_id,
               "is not below the number of workers, " + std::to_string(workers) + " (" +
                   slice.workers_value.shown + ")");
  }
  uint64_t slices = 1;
  uint64_t slice_id = 0;
  if (slice.num_slices && !Trim(slice.num_slices->text).empty()) {
    KDIST_ASSIGN_OR_RETURN(slices, Number(name, *slice.num_slices, "a number of slices"));
    if (slices == 0) return Bad(name, *slice.num_slices, "is not a number of slices (at least 1)");
  }
  if (slice.slice_id && !Trim(slice.slice_id->text).empty()) {
    KDIST_ASSIGN_OR_RETURN(slice_id, Number(name, *slice.slice_id, "a slice id"));
    if (slice_id >= slices) {
      return Bad(name, *slice.slice_id,
                 "is not below the number of slices, " + std::to_string(slices) +
                     (slice.num_slices ? " (" + slice.num_slices->shown + ")"
                                       : std::string(" (MEGASCALE_NUM_SLICES is not set)")));
    }
  }
  const bool multislice = slices > 1 || slice_id > 0;

  Detection d;
  d.detector = name;
  std::vector<std::string> id_sources = {slice.worker_id.source};
  std::string id_shown = slice.worker_id.shown;
  std::vector<std::string> count_sources = {slice.workers_value.source};
  std::string count_shown = std::to_string(workers) + " workers in " + slice.workers_value.shown;
  if (multislice) {
    id_sources.push_back(slice.workers_value.source);
    if (slice.slice_id) {
      id_sources.push_back(slice.slice_id->source);
      id_shown += ", " + slice.slice_id->shown;
    }
    if (slice.num_slices) {
      count_sources.push_back(slice.num_slices->source);
      count_shown += ", " + slice.num_slices->shown;
    }
  }
  d.process_id = DetectedValue{std::to_string(slice_id * workers + worker_id),
                               Sources(id_sources), id_shown};
  d.num_processes =
      DetectedValue{std::to_string(slices * workers), Sources(count_sources), count_shown};

  // The coordinator: the megascale coordinator (the host of process 0), else worker 0.
  const bool megascale =
      slice.megascale_coordinator && !Trim(slice.megascale_coordinator->text).empty();
  const TpuValue& from = megascale ? *slice.megascale_coordinator : slice.workers_value;
  const std::string host = megascale ? HostOf(from.text) : slice.workers.front();
  PortChoice port{kTpuCoordinatorPort, ""};
  std::string shown = megascale ? from.shown : "worker 0 of " + from.shown;
  KDIST_RETURN_IF_ERROR(ApplyPortOverride(name, env, port, &shown).status());
  Result<Address> coordinator = HostPort(host, port.port);
  if (!coordinator.ok()) {
    return Bad(name, from,
               "gives the coordinator host " + Quote(host) + ", which " +
                   coordinator.status().message());
  }
  std::string variables = from.source;
  if (!port.variable.empty()) variables += ", " + port.variable;
  d.job_addresses = DetectedValue{coordinator->ToString(), variables, shown};

  // Each worker runs one process: name them when the job is this slice alone.
  if (!multislice) {
    for (const std::string& worker : slice.workers) d.process_host_runs.emplace_back(worker, 1);
    d.process_hosts_source = name + " (" + slice.workers_value.source + ")";
  }
  return std::optional<Detection>(std::move(d));
}

}  // namespace kdist
