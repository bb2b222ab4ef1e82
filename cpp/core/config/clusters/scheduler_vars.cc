#include "config/clusters/scheduler_vars.h"

#include <algorithm>

#include "base/scalars.h"
#include "base/text.h"

namespace kdist {

std::string Shown(std::string_view name, std::string_view value) {
  return std::string(name) + "=" + Quote(value);
}

DetectedValue Copy(std::string_view name, const std::string& value) {
  return {value, std::string(name), Shown(name, value)};
}

std::string Listed(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " and " : ", ";
    out += items[i];
  }
  return out;
}

std::string Prefix(std::string_view detector) {
  return "scheduler detection (" + std::string(detector) + "): ";
}

Status Malformed(std::string_view detector, std::string_view name, std::string_view value,
                 std::string_view reason) {
  return InvalidArgument(Prefix(detector) + Shown(name, value) + " " + std::string(reason));
}

Status Incomplete(std::string_view detector, const Environment& env,
                  const std::vector<std::string_view>& wanted, std::string_view advice) {
  std::vector<std::string> present, missing;
  for (std::string_view name : wanted) {
    if (const std::string* value = Lookup(env, name)) {
      present.push_back(Shown(name, *value));
    } else {
      missing.push_back(std::string(name));
    }
  }
  return InvalidArgument(Prefix(detector) + Listed(present) +
                         (present.size() == 1 ? " is" : " are") + " set but " + Listed(missing) +
                         (missing.size() == 1 ? " is not. " : " are not. ") +
                         std::string(advice) + std::string(kExplicitWay));
}

bool HasAll(const Environment& env, const std::vector<std::string_view>& names) {
  return std::all_of(names.begin(), names.end(),
                     [&](std::string_view name) { return Lookup(env, name) != nullptr; });
}

Result<bool> ApplyPortOverride(std::string_view detector, const Environment& env,
                               PortChoice& port, std::string* shown) {
  for (std::string_view name : {kEnvCoordinatorPort, kEnvJaxCoordinatorPort}) {
    const std::string* value = Lookup(env, name);
    if (value == nullptr) continue;
    Result<uint16_t> parsed = ParsePort(*value);
    if (!parsed.ok()) return Malformed(detector, name, *value, parsed.status().message());
    port = PortChoice{*parsed, std::string(name)};
    if (shown != nullptr) *shown += ", " + Shown(name, std::to_string(*parsed));
    return true;
  }
  return false;
}

Result<Address> HostPort(std::string_view host, uint16_t port) {
  const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) host = host.substr(1, host.size() - 2);
  KDIST_ASSIGN_OR_RETURN(const HostKind kind, ParseHost(host));
  if (bracketed && kind != HostKind::kIPv6) {
    return InvalidArgument("has brackets around a host that is not an IPv6 address");
  }
  return Address{std::string(host), port, kind};
}

}  // namespace kdist
