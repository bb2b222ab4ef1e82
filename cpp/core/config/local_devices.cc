#include "config/local_devices.h"

#include <set>

#include "base/scalars.h"
#include "base/text.h"
#include "config/raw_setting.h"

namespace kdist {
namespace {

constexpr std::string_view kExpected =
    "expected \"all\", \"auto\" or comma-separated device ids such as \"0,1\"";

Status MalformedValue(const std::string& detector, const DetectedValue& value,
                      const std::string& reason) {
  return InvalidArgument(value.shown + " (detected: " + detector + "): " + reason);
}

}  // namespace

Result<LocalDeviceSuggestion> SuggestLocalDevices(const std::optional<Detection>& detection,
                                                  const Environment& env) {
  if (!detection) return LocalDeviceSuggestion{std::nullopt, "", "no scheduler was detected"};
  const Detection& d = *detection;
  if (!d.local_rank) {
    return LocalDeviceSuggestion{std::nullopt, "",
                                 d.detector + " does not publish a local rank"};
  }
  Result<int64_t> rank = ParseInteger(d.local_rank->text);
  if (!rank.ok() || *rank < 0) {
    return MalformedValue(d.detector, *d.local_rank,
                          "is not a local rank; expected a non-negative integer");
  }
  if (d.local_size) {
    Result<int64_t> size = ParseInteger(d.local_size->text);
    if (!size.ok() || *size < 1) {
      return MalformedValue(d.detector, *d.local_size,
                            "is not a number of processes; expected a positive integer");
    }
    if (*rank >= *size) {
      return MalformedValue(d.detector, *d.local_rank,
                            "is not below the number of processes on this host, " +
                                d.local_size->shown);
    }
    if (*size == 1) {
      return LocalDeviceSuggestion{
          std::nullopt, "",
          "this is the job's only process on its host (" + d.local_size->shown +
              "): it keeps every device it sees"};
    }
  }
  for (std::string_view name : kVisibilityVariables) {
    if (const std::string* value = Lookup(env, name)) {
      return LocalDeviceSuggestion{
          std::nullopt, "",
          std::string(name) + "=" + Quote(*value) +
              " already limits the devices this process sees"};
    }
  }
  std::string reason = "one device per process, chosen by local rank (" + d.local_rank->shown;
  if (d.local_size) reason += " of " + d.local_size->shown;
  reason += ")";
  return LocalDeviceSuggestion{std::vector<int64_t>{*rank},
                               d.detector + " (" + d.local_rank->variables + ")", reason};
}

Result<LocalDeviceSetting> ParseLocalDeviceSetting(std::string_view text) {
  const std::string mode = Lower(Trim(text));
  if (mode == "all") return LocalDeviceSetting{LocalDeviceSetting::Kind::kAll, {}};
  if (mode == "auto") return LocalDeviceSetting{LocalDeviceSetting::Kind::kAuto, {}};
  if (Trim(text).empty()) return InvalidArgument("is empty; " + std::string(kExpected));
  LocalDeviceSetting setting{LocalDeviceSetting::Kind::kList, {}};
  std::set<int64_t> seen;
  for (std::string_view item : Split(text, ',')) {
    Result<int64_t> id = ParseInteger(item);
    if (!id.ok() || *id < 0) {
      return InvalidArgument("has " + Quote(Trim(item)) +
                             ", which is not a device id (a non-negative integer); " +
                             std::string(kExpected));
    }
    if (!seen.insert(*id).second) {
      return InvalidArgument("lists device " + std::to_string(*id) + " twice");
    }
    if (setting.ids.size() == kMaxLocalDeviceIds) {
      return InvalidArgument("lists more than " + std::to_string(kMaxLocalDeviceIds) +
                             " devices");
    }
    setting.ids.push_back(*id);
  }
  return setting;
}

Status ResolveLocalDevices(const Environment& env, const std::optional<Detection>& detection,
                           ClusterSpec& spec) {
  std::optional<Raw> raw = Pick(std::nullopt, "", env, kEnvLocalDeviceIds);
  const std::optional<Raw> jax_raw = Pick(std::nullopt, "", env, kEnvJaxLocalDeviceIds);
  std::optional<LocalDeviceSetting> setting;
  if (raw) {
    Result<LocalDeviceSetting> parsed = ParseLocalDeviceSetting(raw->text);
    if (!parsed.ok()) return Invalid(*raw, parsed.status().message());
    setting = *parsed;
  }
  if (jax_raw) {
    Result<LocalDeviceSetting> parsed = ParseLocalDeviceSetting(jax_raw->text);
    const std::string expected =
        "expected device ids separated by commas, such as \"0,1\" (JAX's format)";
    if (!parsed.ok()) return Invalid(*jax_raw, parsed.status().message() + "; " + expected);
    if (parsed->kind != LocalDeviceSetting::Kind::kList) {
      return Invalid(*jax_raw, expected + "; \"all\" and \"auto\" are values of " +
                                   std::string(kEnvLocalDeviceIds));
    }
    // JAX reads its variable whenever no ids are passed, so kdist's "all" or
    // "auto" could not win over it: refuse the contradiction.
    if (setting && setting->kind != LocalDeviceSetting::Kind::kList) {
      return InvalidArgument(
          Describe(*raw) + " contradicts " + Describe(*jax_raw) +
          ", which JAX applies whenever no device ids are passed; unset " +
          std::string(kEnvJaxLocalDeviceIds) + ", or give the ids in " +
          std::string(kEnvLocalDeviceIds));
    }
    if (!setting) {
      raw = jax_raw;
      setting = *parsed;
    }
  }
  const bool apply_suggestion = setting && setting->kind == LocalDeviceSetting::Kind::kAuto;

  Result<LocalDeviceSuggestion> suggestion = SuggestLocalDevices(detection, env);
  if (!suggestion.ok()) {
    // Only fatal when asked to apply it.
    if (apply_suggestion) return suggestion.status();
    suggestion = LocalDeviceSuggestion{std::nullopt, "", suggestion.status().message()};
  }
  spec.suggested_local_device_ids = suggestion->ids;
  spec.local_devices_reason = suggestion->reason;

  const bool distributed = spec.coordinator().has_value();
  spec.local_device_ids = {std::nullopt, "default"};
  if (!setting) return Status::Ok();
  spec.local_device_ids.source = raw->source;
  if (setting->kind == LocalDeviceSetting::Kind::kList) {
    if (!distributed) {
      return Invalid(*raw,
                     "local device ids apply to a job started through jax.distributed (one "
                     "with a coordinator address); for a single process, limit its devices "
                     "with CUDA_VISIBLE_DEVICES instead");
    }
    spec.local_device_ids.value = setting->ids;
  } else if (apply_suggestion && distributed && suggestion->ids) {
    spec.local_device_ids = {suggestion->ids, suggestion->source};
    spec.local_devices_suggestion_applied = true;
  }
  return Status::Ok();
}

}  // namespace kdist
