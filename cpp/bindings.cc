// The one file that knows about Python: converts the core's results into
// Python objects and its Status codes into kdist's exceptions.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cluster_spec.h"
#include "device_cache.h"
#include "environment.h"
#include "resolve.h"
#include "status.h"

namespace nb = nanobind;

namespace kdist {
namespace {

// The kdist exception class for a Status code (defined in kdist/_errors.py,
// imported only when a failure has to be raised).
const char* ExceptionName(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument: return "ConfigError";
    case StatusCode::kAlreadyExists: return "PortInUseError";
    case StatusCode::kUnavailable: return "CoordinatorUnreachableError";
    case StatusCode::kDeadlineExceeded: return "RendezvousTimeoutError";
    case StatusCode::kFailedPrecondition: return "RendezvousError";
    case StatusCode::kNotFound:
    case StatusCode::kInternal:
    case StatusCode::kOk: break;
  }
  return "KdistError";
}

// Raises the kdist exception for a failed `status`; does nothing when ok.
void RaiseIfError(const Status& status) {
  if (status.ok()) return;
  nb::object errors = nb::module_::import_("kdist._errors");
  nb::object type = errors.attr(ExceptionName(status.code()));
  PyErr_SetString(type.ptr(), status.message().c_str());
  throw nb::python_error();
}

template <typename T>
T ValueOrRaise(Result<T> result) {
  RaiseIfError(result.status());
  return std::move(result).value();
}

std::vector<std::string> AddressStrings(const std::vector<Address>& addresses) {
  std::vector<std::string> out;
  out.reserve(addresses.size());
  for (const Address& address : addresses) out.push_back(address.ToString());
  return out;
}

std::map<std::string, std::string> Sources(const ClusterSpec& spec) {
  return {{"job_addresses", spec.job_addresses.source.empty() ? "not set" : spec.job_addresses.source},
          {"num_processes", spec.num_processes.source},
          {"process_id", spec.process_id.source},
          {"timeout", spec.timeout_seconds.source},
          {"preflight", spec.preflight.source},
          {"cluster_detection", spec.cluster_detection.source}};
}

std::string Repr(const ClusterSpec& spec) {
  std::string addresses;
  for (const std::string& a : AddressStrings(spec.job_addresses.value)) {
    addresses += (addresses.empty() ? "'" : ", '") + a + "'";
  }
  char timeout[32];
  std::snprintf(timeout, sizeof timeout, "%g", spec.timeout_seconds.value);
  return "ClusterSpec(job_addresses=[" + addresses +
         "], num_processes=" + std::to_string(spec.num_processes.value) +
         ", process_id=" + std::to_string(spec.process_id.value) + ", timeout=" + timeout +
         ", preflight=" + (spec.preflight.value ? "True" : "False") + ", cluster_detection='" +
         spec.cluster_detection.value + "')";
}

}  // namespace
}  // namespace kdist

NB_MODULE(_core, m) {
  using namespace kdist;
  m.doc() = "kdist's compiled core: configuration resolution and the device cache.";

  nb::class_<ClusterSpec>(m, "ClusterSpec",
                          "The resolved configuration of this process; each value keeps its "
                          "source in `sources`.")
      .def_prop_ro("job_addresses",
                   [](const ClusterSpec& s) { return AddressStrings(s.job_addresses.value); },
                   "Every job address as host:port (IPv6 in brackets); the first is the "
                   "coordinator. Empty for a single process without a coordinator.")
      .def_prop_ro("coordinator_address",
                   [](const ClusterSpec& s) -> std::optional<std::string> {
                     if (auto c = s.coordinator()) return c->ToString();
                     return std::nullopt;
                   },
                   "The coordinator's host:port, or None.")
      .def_prop_ro("num_processes", [](const ClusterSpec& s) { return s.num_processes.value; })
      .def_prop_ro("process_id", [](const ClusterSpec& s) { return s.process_id.value; })
      .def_prop_ro("timeout", [](const ClusterSpec& s) { return s.timeout_seconds.value; },
                   "Deadline of initialize() in seconds.")
      .def_prop_ro("preflight", [](const ClusterSpec& s) { return s.preflight.value; })
      .def_prop_ro("cluster_detection",
                   [](const ClusterSpec& s) { return s.cluster_detection.value; })
      .def_prop_ro("sources", &Sources,
                   "Where each value came from: 'argument', an environment variable's name, "
                   "'job_addresses' (counted from the list) or 'default'.")
      .def_prop_ro("fingerprint", &ClusterSpec::Fingerprint,
                   "Digest of the settings every process of the job must share.")
      .def("same_job_and_process", &ClusterSpec::SameJobAndProcess, nb::arg("other"),
           "Whether `other` has the same addresses, process count and process id.")
      .def("__repr__", &Repr);

  m.def(
      "resolve",
      [](std::optional<std::string> job_addresses, std::optional<std::string> num_processes,
         std::optional<std::string> process_id, std::optional<std::string> timeout,
         std::optional<std::string> cluster_detection, std::optional<std::string> preflight,
         const std::map<std::string, std::string>& environment) {
        Request request{std::move(job_addresses), std::move(num_processes),
                        std::move(process_id),    std::move(timeout),
                        std::move(cluster_detection), std::move(preflight)};
        Environment env(environment.begin(), environment.end());
        return ValueOrRaise(Resolve(request, env));
      },
      nb::arg("job_addresses").none(), nb::arg("num_processes").none(),
      nb::arg("process_id").none(), nb::arg("timeout").none(),
      nb::arg("cluster_detection").none(), nb::arg("preflight").none(), nb::arg("environment"),
      "Resolves initialize()'s settings (as text) against an environment snapshot; raises "
      "kdist.ConfigError naming the bad value and its source.");

  m.def("cluster_detection_modes", &ClusterDetectionModes,
        "The values cluster_detection accepts.");

  nb::class_<DeviceCache>(m, "DeviceCache", "Device lists per device type, until invalidated.")
      .def(nb::init<>())
      .def("get", &DeviceCache::Get, nb::arg("device_type"),
           "A new list of the cached device strings, or None.")
      .def("count", &DeviceCache::Count, nb::arg("device_type"),
           "The length of the cached list, or None.")
      .def_prop_ro("generation", &DeviceCache::generation)
      .def("put", &DeviceCache::Put, nb::arg("device_type"), nb::arg("generation"),
           nb::arg("devices"), "Stores the list unless invalidated since `generation`.")
      .def("invalidate", &DeviceCache::Invalidate);
}
