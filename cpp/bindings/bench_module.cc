// kdist._core_bench: the load generators (cpp/load/), for benchmarks/rollcall.py,
// channel.py and nodes_scale.py and the scale tests: thousands of simulated processes
// against a real process 0, or simulated machines' agents against a real rendezvous.
// Not part of the package's surface: `import kdist` never imports it. It imports
// kdist._core, which binds the ClusterSpec it takes.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "channel_load.h"
#include "config/cluster_spec.h"
#include "errors.h"
#include "node_load.h"
#include "roll_call/roll_call_options.h"
#include "roll_call/consistency.h"
#include "roll_call_load.h"

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

// The channel's load generator with its own clock, each scenario run without the GIL.
class ChannelLoadPy {
 public:
  ChannelLoadPy(const std::string& hub_ip, uint16_t port, const std::string& nonce,
                int64_t first_id, int64_t count, size_t max_connecting, double timeout) {
    ChannelLoadOptions options;
    options.hub = bindings::ValueOrRaise(EndpointFromLiteral(hub_ip, port));
    options.nonce = nonce;
    options.first_id = first_id;
    options.count = count;
    options.max_connecting = max_connecting;
    options.timeout = SecondsToNanos(timeout);
    load_ = bindings::ValueOrRaise(ChannelLoad::Create(std::move(options), clock_));
  }
  template <typename F>
  ChannelScenarioReport Play(F&& scenario) {
    Result<ChannelScenarioReport> report = Internal("not run");
    {
      nb::gil_scoped_release release;
      report = scenario(*load_);
    }
    return bindings::ValueOrRaise(std::move(report));
  }
  int64_t BytesWhileIdle(double seconds) {
    Result<int64_t> bytes = Internal("not run");
    {
      nb::gil_scoped_release release;
      bytes = load_->BytesWhileIdle(SecondsToNanos(seconds));
    }
    return bindings::ValueOrRaise(std::move(bytes));
  }

 private:
  RealClock clock_;
  std::unique_ptr<ChannelLoad> load_;
};

// The nodes' load generator with its own clock, each scenario run without the GIL.
class NodeLoadPy {
 public:
  NodeLoadPy(const std::string& rendezvous_ip, uint16_t port, const std::string& token,
             const std::string& job_id, int64_t min_nodes, int64_t max_nodes,
             int64_t processes_per_node,
             const std::vector<std::pair<std::string, std::string>>& environment,
             int64_t count, size_t max_connecting, double timeout) {
    NodeLoadOptions options;
    options.rendezvous = bindings::ValueOrRaise(EndpointFromLiteral(rendezvous_ip, port));
    options.token = token;
    options.job_id = job_id;
    options.min_nodes = min_nodes;
    options.max_nodes = max_nodes;
    options.processes_per_node = processes_per_node;
    Fingerprint fingerprint;
    for (const auto& [name, value] : environment) fingerprint.push_back({name, value, false});
    bindings::RaiseIfError(ValidateFingerprint(fingerprint));
    options.environment = EncodeFingerprint(fingerprint);
    options.count = count;
    options.max_connecting = max_connecting;
    options.timeout = SecondsToNanos(timeout);
    load_ = bindings::ValueOrRaise(NodeLoad::Create(std::move(options), clock_));
  }
  template <typename F>
  NodeScenarioReport Play(F&& scenario) {
    Result<NodeScenarioReport> report = Internal("not run");
    {
      nb::gil_scoped_release release;
      report = scenario(*load_);
    }
    return bindings::ValueOrRaise(std::move(report));
  }
  int64_t running() const { return load_->running(); }

 private:
  RealClock clock_;
  std::unique_ptr<NodeLoad> load_;
};

}  // namespace
}  // namespace kdist

NB_MODULE(_core_bench, m) {
  using namespace kdist;
  nb::module_::import_("kdist._core");  // binds ClusterSpec
  m.doc() = "The load generators, for kdist's benchmarks and scale tests only.";

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

  nb::class_<ChannelScenarioReport>(m, "ChannelScenarioReport",
                                    "What the simulated processes were told in one scenario.")
      .def_ro("seconds", &ChannelScenarioReport::seconds,
              "From the scenario's start to the last simulated process told its outcome.")
      .def_ro("expected", &ChannelScenarioReport::expected, "Processes that should be told.")
      .def_ro("told", &ChannelScenarioReport::told, "Processes told the outcome.")
      .def_ro("told_twice", &ChannelScenarioReport::told_twice, "Told it more than once.")
      .def_ro("other", &ChannelScenarioReport::other, "Frames not the scenario's.")
      .def_ro("lowest", &ChannelScenarioReport::lowest, "The lowest value told.")
      .def_ro("highest", &ChannelScenarioReport::highest, "The highest value told.")
      .def_ro("first_other", &ChannelScenarioReport::first_other);

  nb::class_<ChannelLoadPy>(m, "ChannelLoad",
                            "Simulated processes on process 0's liveness hub (cpp/load/"
                            "channel_load.h). Each scenario releases the GIL.")
      .def(nb::init<const std::string&, uint16_t, const std::string&, int64_t, int64_t, size_t,
                    double>(),
           nb::arg("hub_ip"), nb::arg("port"), nb::arg("nonce"), nb::kw_only(),
           nb::arg("first_id") = 1, nb::arg("count"), nb::arg("max_connecting") = 256,
           nb::arg("timeout") = 60.0)
      .def("join", [](ChannelLoadPy& l) { return l.Play([](ChannelLoad& c) { return c.Join(); }); })
      .def("stop",
           [](ChannelLoadPy& l, int64_t requester, int64_t base_step) {
             return l.Play([&](ChannelLoad& c) { return c.Stop(requester, base_step); });
           },
           nb::arg("requester"), nb::arg("base_step"))
      .def("barrier",
           [](ChannelLoadPy& l, int64_t index, const std::string& name) {
             return l.Play([&](ChannelLoad& c) { return c.Barrier(index, name); });
           },
           nb::arg("index"), nb::arg("name"))
      .def("stall",
           [](ChannelLoadPy& l, int64_t stuck, int64_t base_step) {
             return l.Play([&](ChannelLoad& c) { return c.Stall(stuck, base_step); });
           },
           nb::arg("stuck"), nb::arg("base_step"))
      .def("failure",
           [](ChannelLoadPy& l, int64_t victim) {
             return l.Play([&](ChannelLoad& c) { return c.Failure(victim); });
           },
           nb::arg("victim"))
      .def("finish",
           [](ChannelLoadPy& l) { return l.Play([](ChannelLoad& c) { return c.Finish(); }); })
      .def("bytes_while_idle", &ChannelLoadPy::BytesWhileIdle, nb::arg("seconds"),
           "Frame bytes the simulated processes received over `seconds` of no events.");

  nb::class_<NodeScenarioReport>(m, "NodeScenarioReport",
                                 "What the simulated agents were told in one scenario, checked "
                                 "against each other (cpp/load/node_load.h).")
      .def_ro("seconds", &NodeScenarioReport::seconds,
              "From the scenario's start to the last simulated agent told its outcome.")
      .def_ro("after_last_hello", &NodeScenarioReport::after_last_hello,
              "join and grow: from the last hello written to the last agent told.")
      .def_ro("expected", &NodeScenarioReport::expected, "Agents that should be told.")
      .def_ro("told", &NodeScenarioReport::told, "Agents told the outcome.")
      .def_ro("told_twice", &NodeScenarioReport::told_twice, "Told it more than once.")
      .def_ro("wrong", &NodeScenarioReport::wrong,
              "Answers that were not the scenario's or disagree with the others.")
      .def_ro("first_wrong", &NodeScenarioReport::first_wrong)
      .def_ro("attempt", &NodeScenarioReport::attempt, "The attempt every roster or stop named.")
      .def_ro("node_count", &NodeScenarioReport::node_count,
              "The node count every roster named (its ranks each held once).")
      .def_ro("exit_status", &NodeScenarioReport::exit_status, "The status every end named.")
      .def_ro("ended", &NodeScenarioReport::ended, "Agents told to end.");

  nb::class_<NodeLoadPy>(m, "NodeLoad",
                         "Simulated machines' agents on a nodes' rendezvous (cpp/load/"
                         "node_load.h). Each scenario releases the GIL.")
      .def(nb::init<const std::string&, uint16_t, const std::string&, const std::string&, int64_t,
                    int64_t, int64_t, const std::vector<std::pair<std::string, std::string>>&,
                    int64_t, size_t, double>(),
           nb::arg("rendezvous_ip"), nb::arg("port"), nb::kw_only(), nb::arg("token"),
           nb::arg("job_id"), nb::arg("min_nodes"), nb::arg("max_nodes"),
           nb::arg("processes_per_node"), nb::arg("environment"), nb::arg("count"),
           nb::arg("max_connecting") = 256, nb::arg("timeout") = 60.0)
      .def("join", [](NodeLoadPy& l) { return l.Play([](NodeLoad& n) { return n.Join(); }); },
           "Agents 0 .. count - 1 join; each is told its roster.")
      .def("lose",
           [](NodeLoadPy& l, int64_t index) {
             return l.Play([&](NodeLoad& n) { return n.Lose(index); });
           },
           nb::arg("index"),
           "Agent `index`'s connection closes, the others report their processes ended; "
           "each survivor is told the next roster.")
      .def("drain",
           [](NodeLoadPy& l, int64_t index) {
             return l.Play([&](NodeLoad& n) { return n.Drain(index); });
           },
           nb::arg("index"), "Agent `index` is drained; every running agent is told the stop.")
      .def("stopped",
           [](NodeLoadPy& l) { return l.Play([](NodeLoad& n) { return n.Stopped(); }); },
           "Every running agent reports its stop; the next roster (the drained: the end, 143).")
      .def("grow", [](NodeLoadPy& l) { return l.Play([](NodeLoad& n) { return n.Grow(); }); },
           "The next agent joins the running job; every agent is told the next roster.")
      .def("finish",
           [](NodeLoadPy& l) { return l.Play([](NodeLoad& n) { return n.Finish(); }); },
           "Every running agent reports success; each is told the end, status 0.")
      .def_prop_ro("running", &NodeLoadPy::running, "Agents running an attempt.");

  m.def("run_roll_call_load", &RunLoadPy, nb::arg("spec"), nb::arg("coordinator_ip"),
        nb::arg("port"), nb::kw_only(), nb::arg("first_id") = 1, nb::arg("count"),
        nb::arg("processes_per_host") = 8, nb::arg("max_connecting") = 256,
        nb::arg("timeout") = 60.0, nb::arg("seed") = 1,
        "Plays processes first_id .. first_id + count - 1 of the job `spec` describes (each "
        "with the hello a real process would send, on host sim-NNNN, `processes_per_host` per "
        "host) against process 0 at coordinator_ip:port, until each has a verdict. Raises "
        "kdist.RendezvousTimeoutError at the timeout. Releases the GIL.");
}
