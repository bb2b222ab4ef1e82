// kdist._core_bench: the roll call's load generator (cpp/load/), for
// benchmarks/rollcall.py and the scale tests: thousands of simulated processes
// against a real process 0. Not part of the package's surface: `import kdist`
// never imports it. It imports kdist._core, which binds the ClusterSpec it takes.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <chrono>
#include <string>

#include "clock.h"
#include "cluster_spec.h"
#include "errors.h"
#include "roll_call_load.h"
#include "roll_call_options.h"

namespace nb = nanobind;

namespace kdist {
namespace {

RollCallLoadReport RunLoadPy(const ClusterSpec& spec, const std::string& coordinator_ip,
                             uint16_t port, int64_t first_id, int64_t count,
                             int64_t processes_per_host, size_t max_connecting, double timeout,
                             uint64_t seed) {
  RollCallLoad load;
  load.coordinator = bindings::ValueOrRaise(EndpointFromLiteral(coordinator_ip, port));
  load.hello = MakeHello(spec, Identity{"bench", "sim", 0});
  load.first_id = first_id;
  load.count = count;
  load.processes_per_host = processes_per_host;
  load.max_connecting = max_connecting;
  load.timeout = SecondsToNanos(timeout);
  load.seed = seed;
  Result<RollCallLoadReport> report = Internal("not run");
  {
    nb::gil_scoped_release release;
    RealClock clock;
    report = RunRollCallLoad(load, clock);
  }
  return bindings::ValueOrRaise(std::move(report));
}

double Seconds(Nanos n) { return NanosToSeconds(n); }

}  // namespace
}  // namespace kdist

NB_MODULE(_core_bench, m) {
  using namespace kdist;
  nb::module_::import_("kdist._core");  // binds ClusterSpec
  m.doc() = "The roll call's load generator, for kdist's benchmarks and scale tests only.";

  nb::class_<RollCallLoadReport>(m, "RollCallLoadReport",
                                 "What the simulated processes saw; times in seconds from the "
                                 "start of the run.")
      .def_ro("went", &RollCallLoadReport::went, "Simulated processes that received \"go\".")
      .def_ro("rejected", &RollCallLoadReport::rejected, "Those that received a rejection.")
      .def_ro("failed", &RollCallLoadReport::failed,
              "Those whose connection failed or closed without a verdict.")
      .def_ro("first_rejection", &RollCallLoadReport::first_rejection)
      .def_ro("first_failure", &RollCallLoadReport::first_failure)
      .def_ro("refused_connects", &RollCallLoadReport::refused_connects,
              "Connects refused before process 0 listened (each retried on kdist's schedule).")
      .def_prop_ro("first_refused", [](const RollCallLoadReport& r) { return Seconds(r.first_refused); })
      .def_prop_ro("last_refused", [](const RollCallLoadReport& r) { return Seconds(r.last_refused); })
      .def_prop_ro("all_hellos_sent",
                   [](const RollCallLoadReport& r) { return Seconds(r.all_hellos_sent); },
                   "When the last hello was written.")
      .def_prop_ro("last_verdict", [](const RollCallLoadReport& r) { return Seconds(r.last_verdict); },
                   "When the last verdict was read.");

  m.def("run_roll_call_load", &RunLoadPy, nb::arg("spec"), nb::arg("coordinator_ip"),
        nb::arg("port"), nb::kw_only(), nb::arg("first_id") = 1, nb::arg("count"),
        nb::arg("processes_per_host") = 8, nb::arg("max_connecting") = 256,
        nb::arg("timeout") = 60.0, nb::arg("seed") = 1,
        "Plays processes first_id .. first_id + count - 1 of the job `spec` describes (each "
        "with the hello a real process would send, on host sim-NNNN, `processes_per_host` per "
        "host) against process 0 at coordinator_ip:port, until each has a verdict. Raises "
        "kdist.RendezvousTimeoutError at the timeout. Releases the GIL.");
}
