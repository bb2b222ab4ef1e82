#include "rendezvous_bindings.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "errors.h"
#include "net/socket.h"
#include "rendezvous/rendezvous_agent.h"
#include "rendezvous/rendezvous_auto.h"
#include "rendezvous/rendezvous_book.h"
#include "rendezvous/rendezvous_server.h"
#include "roll_call/consistency.h"

namespace nb = nanobind;

namespace kdist::bindings {
namespace {

using EnvironmentEntries = std::vector<std::tuple<std::string, std::string, bool>>;

// The core's lines, printed as written (stderr, whole lines, from any thread).
void PrintLine(const std::string& line) {
  std::string text = line + "\n";
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
}

// The exception for an agent's failed status: a wait that ran out is
// RendezvousTimeoutError, a lost rendezvous CoordinatorUnreachableError, a
// refusal RendezvousError.
void RaiseAgentError(const Status& status) {
  switch (status.code()) {
    case StatusCode::kDeadlineExceeded: RaiseIfError(status, "RendezvousTimeoutError"); break;
    case StatusCode::kUnavailable: RaiseIfError(status, "CoordinatorUnreachableError"); break;
    case StatusCode::kInvalidArgument:
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition: RaiseIfError(status, "RendezvousError"); break;
    default: RaiseIfError(status); break;
  }
}

Endpoint EndpointOrRaise(const std::string& ip, int64_t port) {
  if (port < 0 || port > 65535) {
    RaiseIfError(InvalidArgument("rendezvous port " + std::to_string(port) +
                                 ": expected 0-65535"));
  }
  return ValueOrRaise(EndpointFromLiteral(ip, static_cast<uint16_t>(port)));
}

class PyServer {
 public:
  PyServer(RendezvousServerOptions options)
      : server_(std::make_unique<RendezvousServer>(std::move(options), clock_, PrintLine)) {}
  RealClock clock_;
  std::unique_ptr<RendezvousServer> server_;
};

class PyAgent {
 public:
  PyAgent(RendezvousAgentOptions options)
      : agent_(std::make_unique<RendezvousAgent>(std::move(options), clock_, PrintLine)) {}
  RealClock clock_;
  std::unique_ptr<RendezvousAgent> agent_;
};

const char* KindName(NodeReplyKind kind) {
  switch (kind) {
    case NodeReplyKind::kWaiting: return "waiting";
    case NodeReplyKind::kAdmitted: return "admitted";
    case NodeReplyKind::kRefused: return "refused";
    case NodeReplyKind::kRoster: return "roster";
    case NodeReplyKind::kEnd: return "end";
    case NodeReplyKind::kStop: return "stop";
  }
  return "unknown";
}

}  // namespace

void BindRendezvous(nb::module_& m) {
  m.attr("EXIT_NOT_ENOUGH_NODES") = kExitNotEnoughNodes;
  m.attr("EXIT_LOST_RENDEZVOUS") = kExitLostRendezvous;
  m.attr("EXIT_DRAINED") = kExitDrained;
  m.def(
      "auto_rendezvous",
      [](const std::map<std::string, std::string>& environment) {
        Result<Address> address = AutoRendezvous(Environment(environment.begin(), environment.end()));
        RaiseIfError(address.status(), "ConfigError");
        return address->ToString();
      },
      nb::arg("environment"),
      "`--rendezvous auto`: HOST:PORT of the nodes' rendezvous under Slurm (the allocation's "
      "first host, a port from the job id below JAX's); ConfigError saying what to give "
      "otherwise.");

  nb::class_<NodeReply>(m, "NodeReply", "What the nodes' rendezvous told this machine's agent.")
      .def_prop_ro("kind", [](const NodeReply& r) { return std::string(KindName(r.kind)); },
                   "'waiting', 'roster', 'stop' (the attempt stops at one agreed step) or 'end'.")
      .def_prop_ro("code", [](const NodeReply& r) { return std::string(StatusCodeName(r.code)); })
      .def_ro("message", &NodeReply::message)
      .def_ro("attempt", &NodeReply::attempt, "The job-wide attempt, from 0.")
      .def_ro("node_rank", &NodeReply::node_rank)
      .def_ro("processes_per_node", &NodeReply::processes_per_node)
      .def_ro("coordinator_host", &NodeReply::coordinator_host, "Node 0's IP.")
      .def_ro("coordinator_port", &NodeReply::coordinator_port)
      .def_prop_ro(
          "nodes",
          [](const NodeReply& r) {
            std::vector<std::pair<std::string, std::string>> out;
            for (const RosterNode& n : r.nodes) out.emplace_back(n.name, n.address);
            return out;
          },
          "(name, address) of every node, by rank.")
      .def_ro("first_failure", &NodeReply::first_failure)
      .def_ro("previous_processes", &NodeReply::previous_processes,
              "The previous attempt's process count; 0 in the first.")
      .def_ro("exit_status", &NodeReply::exit_status);

  nb::class_<AttemptRow>(m, "AttemptRow",
                                "One attempt of a `kdist launch --nodes` job, as its "
                                "rendezvous saw it.")
      .def_ro("attempt", &AttemptRow::attempt)
      .def_ro("nodes", &AttemptRow::nodes, "The node names, by rank.")
      .def_ro("processes", &AttemptRow::processes)
      .def_ro("started_seconds", &AttemptRow::started_seconds,
              "Since the rendezvous started.")
      .def_ro("ended_seconds", &AttemptRow::ended_seconds, "-1 while it runs.")
      .def_ro("ended", &AttemptRow::ended,
              "'finished', 'failed: ...', 'node lost: ...', 'drained: ...', 'grown: ...'.")
      .def_ro("exit_status", &AttemptRow::exit_status)
      .def_ro("counted", &AttemptRow::counted, "Against --max-restarts.");

  nb::class_<PyServer>(m, "RendezvousServer",
                       "The nodes' rendezvous: admits agents, forms each attempt, ends the job. "
                       "Its lines go to stderr.")
      .def(
          "__init__",
          [](PyServer* self, const std::string& job_id, int64_t min_nodes, int64_t max_nodes,
             int64_t processes_per_node, double last_call, double join_timeout,
             int64_t max_restarts, const std::string& token, double progress_every,
             double unreachable_timeout, double scale_up_after) {
            RendezvousServerOptions o;
            o.book.job_id = job_id;
            o.book.min_nodes = min_nodes;
            o.book.max_nodes = max_nodes;
            o.book.processes_per_node = processes_per_node;
            o.book.last_call = SecondsToNanos(last_call);
            o.book.join_timeout = SecondsToNanos(join_timeout);
            o.book.max_restarts = max_restarts;
            o.book.token = token;
            o.progress_every = SecondsToNanos(progress_every);
            o.unreachable_timeout = SecondsToNanos(unreachable_timeout);
            if (scale_up_after < 0) {
              o.book.scale_up_after = std::nullopt;  // never
            } else {
              o.book.scale_up_after = SecondsToNanos(scale_up_after);
            }
            new (self) PyServer(std::move(o));
          },
          nb::arg("job_id"), nb::arg("min_nodes"), nb::arg("max_nodes"),
          nb::arg("processes_per_node"), nb::arg("last_call"), nb::arg("join_timeout"),
          nb::arg("max_restarts"), nb::arg("token"), nb::arg("progress_every") = 5.0,
          nb::arg("unreachable_timeout") = 20.0, nb::arg("scale_up_after") = 30.0)
      .def(
          "listen",
          [](PyServer& s, const std::string& ip, int64_t port) {
            RaiseIfError(s.server_->Listen(EndpointOrRaise(ip, port)));
          },
          nb::arg("ip"), nb::arg("port"),
          "Binds ip:port: PortInUseError when taken; KdistError (EADDRNOTAVAIL) when the "
          "address is not this machine's.")
      .def_prop_ro("port", [](const PyServer& s) { return s.server_->port(); })
      .def("start", [](PyServer& s) { RaiseIfError(s.server_->Start()); })
      .def(
          "wait", [](PyServer& s, double timeout) { return s.server_->Wait(SecondsToNanos(timeout)); },
          nb::arg("timeout"), nb::call_guard<nb::gil_scoped_release>(),
          "Waits at most `timeout` seconds for the job to end; True when it has.")
      .def("stop", [](PyServer& s) { s.server_->Stop(); },
           nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("exit_status", [](const PyServer& s) { return s.server_->exit_status(); })
      .def_prop_ro("attempt_table", [](const PyServer& s) { return s.server_->AttemptTable(); })
      .def_prop_ro("attempts", [](const PyServer& s) { return s.server_->Attempts(); },
                   "After the end: every attempt, in order.");

  nb::class_<PyAgent>(m, "RendezvousAgent", "This machine's side of the nodes' rendezvous.")
      .def(
          "__init__",
          [](PyAgent* self, const std::string& ip, int64_t port, const std::string& where,
             const std::string& token, double join_timeout, double unreachable_timeout) {
            RendezvousAgentOptions o;
            o.rendezvous = EndpointOrRaise(ip, port);
            o.where = where;
            o.token = token;
            o.join_timeout = SecondsToNanos(join_timeout);
            o.unreachable_timeout = SecondsToNanos(unreachable_timeout);
            new (self) PyAgent(std::move(o));
          },
          nb::arg("ip"), nb::arg("port"), nb::arg("where"), nb::arg("token"),
          nb::arg("join_timeout"), nb::arg("unreachable_timeout") = 20.0)
      .def(
          "join",
          [](PyAgent& a, const std::string& job_id, const std::string& node_name,
             const std::string& host, int64_t pid, int64_t processes_per_node, int64_t min_nodes,
             int64_t max_nodes, int64_t coordinator_port, const EnvironmentEntries& environment) {
            NodeHello hello;
            hello.job_id = job_id;
            hello.node_name = node_name;
            hello.host = host;
            hello.pid = pid;
            hello.processes_per_node = processes_per_node;
            hello.min_nodes = min_nodes;
            hello.max_nodes = max_nodes;
            hello.coordinator_port = coordinator_port;
            Fingerprint fingerprint;
            for (const auto& [name, value, must_match] : environment) {
              fingerprint.push_back({name, value, must_match});
            }
            RaiseIfError(ValidateFingerprint(fingerprint));
            hello.environment = EncodeFingerprint(fingerprint);
            Status status;
            {
              nb::gil_scoped_release release;
              status = a.agent_->Join(std::move(hello));
            }
            RaiseAgentError(status);
          },
          nb::arg("job_id"), nb::arg("node_name"), nb::arg("host"), nb::arg("pid"),
          nb::arg("processes_per_node"), nb::arg("min_nodes"), nb::arg("max_nodes"),
          nb::arg("coordinator_port"), nb::arg("environment"),
          "Connects (retrying to the join timeout), proves the token and is admitted; "
          "RendezvousTimeoutError, CoordinatorUnreachableError or RendezvousError otherwise.")
      .def(
          "next",
          [](PyAgent& a, double timeout) {
            Result<NodeReply> reply = Internal("unset");
            {
              nb::gil_scoped_release release;
              reply = a.agent_->Next(SecondsToNanos(timeout));
            }
            RaiseAgentError(reply.status());
            return std::move(reply).value();
          },
          nb::arg("timeout"),
          "The next reply; RendezvousTimeoutError when none came in `timeout` seconds, "
          "CoordinatorUnreachableError when the rendezvous is lost.")
      .def(
          "report",
          [](PyAgent& a, int64_t attempt, int64_t exit_status, const std::string& failure,
             int64_t coordinator_port, bool drain) {
            NodeReport r;
            r.drain = drain;
            r.attempt = attempt;
            r.exit_status = exit_status;
            r.failure = failure;
            r.coordinator_port = coordinator_port;
            Status status;
            {
              nb::gil_scoped_release release;
              status = a.agent_->SendReport(std::move(r));
            }
            RaiseAgentError(status);
          },
          nb::arg("attempt"), nb::arg("exit_status"), nb::arg("failure"),
          nb::arg("coordinator_port"), nb::arg("drain") = false,
          "How `attempt` ended here; with drain=True, a drain notice instead: this machine "
          "leaves, the rendezvous stops the attempt at one agreed step.")
      .def_prop_ro("local_address", [](const PyAgent& a) { return a.agent_->local_address(); })
      .def("close", [](PyAgent& a) { a.agent_->Close(); });
}

}  // namespace kdist::bindings
