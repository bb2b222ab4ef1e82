#include "rendezvous_bindings.h"

#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "casters.h"
#include "errors.h"
#include "net/address.h"
#include "net/local_address.h"
#include "net/socket.h"
#include "rendezvous/node_settings.h"
#include "rendezvous/rendezvous_agent.h"
#include "rendezvous/rendezvous_book.h"
#include "rendezvous/rendezvous_server.h"
#include "roll_call/consistency.h"

namespace nb = nanobind;

namespace kdist::bindings {
namespace {

using EnvironmentEntries = std::vector<std::tuple<std::string, std::string, bool>>;

// The core's lines, printed as written (stderr, whole lines, from any thread).
// The core's lines printed as written, with `prefix` (stderr, whole lines, any thread).
std::function<void(const std::string&)> Printer(std::string prefix) {
  return [prefix = std::move(prefix)](const std::string& line) {
    std::string text = prefix + line + "\n";
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
  };
}

using LogCallback = nb::typed<nb::callable, void(std::string)>;

// The core's lines handed to a Python callable (the agent's log: one prefix, agent.log),
// from any thread: the GIL taken for the call; an exception in it is printed, not raised.
std::function<void(const std::string&)> ToPython(std::optional<LogCallback> log,
                                                  std::string prefix) {
  if (!log.has_value()) return Printer(std::move(prefix));
  // Released with the GIL taken: the last copy may go on a thread without it (a server's
  // or agent's owner lets the GIL go while it stops the thread and destroys them).
  std::shared_ptr<nb::object> callable(new nb::object(std::move(*log)), [](nb::object* held) {
    if (!Py_IsInitialized()) {
      (void)held->release();  // the interpreter is gone: nothing to decrement
      delete held;
      return;
    }
    nb::gil_scoped_acquire acquire;
    delete held;
  });
  return [callable](const std::string& line) {
    if (!Py_IsInitialized()) return;
    nb::gil_scoped_acquire acquire;
    try {
      (*callable)(line);
    } catch (nb::python_error& error) {
      error.discard_as_unraisable("kdist's rendezvous log");
    }
  };
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

class PyServer {
 public:
  PyServer(RendezvousServerOptions options, std::function<void(const std::string&)> log)
      : server_(std::make_unique<RendezvousServer>(std::move(options), clock_, std::move(log))) {}
  // The server's thread may be in `persist` (waiting for the GIL): it is stopped without
  // the GIL, then the callable is released with it.
  ~PyServer() {
    {
      nb::gil_scoped_release release;
      server_.reset();
    }
    persist_.reset();
  }
  RealClock clock_;
  nb::object persist_;  // keeps alive what the server's `persist` calls
  std::unique_ptr<RendezvousServer> server_;
};

// The server's `persist`, over a Python callable (sealed: bytes) -> None when kept, else
// why not (str): called on the server's thread, with the GIL taken there.
RendezvousServer::Persist PersistOver(PyObject* callable) {
  return [callable](const std::string& sealed) -> Status {
    nb::gil_scoped_acquire gil;
    try {
      nb::object why = nb::borrow<nb::callable>(callable)(nb::bytes(sealed.data(), sealed.size()));
      if (why.is_none()) return Status::Ok();
      return Unavailable(nb::cast<std::string>(nb::str(why)));
    } catch (nb::python_error& error) {
      std::string what = error.what();
      error.discard_as_unraisable("kdist: the nodes' rendezvous's persist");
      return Unavailable("its store raised " + what);
    }
  };
}

// An agent's options toward the holder of an etcd job's book at `address` (IP:PORT, as it
// published it), connecting for at most `connect_timeout` seconds.
RendezvousAgentOptions HolderAgentOptions(const NodeSettings& settings, const std::string& address,
                                          std::optional<double> connect_timeout) {
  const Address parsed = ValueOrRaise(ParseAddress(address));
  RendezvousAgentOptions o;
  o.rendezvous = ValueOrRaise(EndpointFromLiteral(parsed.host, parsed.port));
  o.where = address + " (the holder of " + settings.rendezvous.value + ")";
  o.token = settings.token.value;
  o.join_timeout = connect_timeout.has_value() ? SecondsToNanos(*connect_timeout)
                                               : settings.join_timeout.value;
  o.unreachable_timeout = settings.unreachable_timeout.value;
  return o;
}

class PyAgent {
 public:
  PyAgent(RendezvousAgentOptions options, NodeSettings settings,
          std::function<void(const std::string&)> log)
      : agent_(std::make_unique<RendezvousAgent>(std::move(options), clock_, std::move(log))),
        settings_(std::move(settings)) {}
  RealClock clock_;
  std::unique_ptr<RendezvousAgent> agent_;
  NodeSettings settings_;
};

// How long the agent waits for its rendezvous's host name to resolve.
constexpr double kLookupSeconds = 10.0;

NodeSettings ResolveNodeSettingsPy(const NodeRequest& request,
                                   const std::map<std::string, std::string>& environment) {
  Result<NodeSettings> settings = Internal("unset");
  {
    nb::gil_scoped_release release;
    RealClock clock;
    const HostLookup lookup = [&clock](const std::string& host) {
      return HostAddresses(host, SecondsToNanos(kLookupSeconds), clock);
    };
    settings = ResolveNodeSettings(request, Environment(environment.begin(), environment.end()),
                                   lookup);
  }
  RaiseIfError(settings.status(), "ConfigError");
  return std::move(settings).value();
}

std::optional<double> OptionalSeconds(const std::optional<Nanos>& value) {
  if (!value.has_value()) return std::nullopt;
  return NanosToSeconds(*value);
}

void BindSettings(nb::module_& m) {
  nb::class_<NodeRequest>(m, "NodeRequest",
                          "What `kdist launch --nodes` or `kdist rendezvous serve` was given; "
                          "None: not given (resolve_node_settings fills it in).")
      .def(nb::init<>())
      .def_rw("rendezvous", &NodeRequest::rendezvous, "HOST:PORT or 'auto'; serve: its bind address.")
      .def_rw("serve_only", &NodeRequest::serve_only)
      .def_rw("host_name", &NodeRequest::host_name, "This machine's host name.")
      .def_rw("job_id", &NodeRequest::job_id)
      .def_rw("node_name", &NodeRequest::node_name)
      .def_rw("token", &NodeRequest::token, "--token-file's contents.")
      .def_rw("token_source", &NodeRequest::token_source)
      .def_rw("min_nodes", &NodeRequest::min_nodes)
      .def_rw("max_nodes", &NodeRequest::max_nodes)
      .def_rw("processes_per_node", &NodeRequest::processes_per_node)
      .def_rw("last_call", &NodeRequest::last_call)
      .def_rw("join_timeout", &NodeRequest::join_timeout)
      .def_rw("max_restarts", &NodeRequest::max_restarts)
      .def_rw("scale_up_after", &NodeRequest::scale_up_after, "Seconds as text, or 'never'.")
      .def_rw("max_reforms", &NodeRequest::max_reforms, "--max-reforms's text.")
      .def_rw("reform_window", &NodeRequest::reform_window, "--reform-window's text (seconds).");

  nb::class_<NodeSettings>(m, "NodeSettings",
                           "A machine's agent's settings, resolved once; each keeps its source "
                           "in `sources`. The token is never shown.")
      .def_prop_ro("rendezvous", [](const NodeSettings& s) { return s.rendezvous.value; })
      .def_prop_ro(
          "store",
          [](const NodeSettings& s) {
            return std::string(s.store == RendezvousStore::kEtcd ? "etcd" : "embedded");
          },
          "Where the job's book is kept: 'embedded' (HOST:PORT, auto) or 'etcd' (etcd://).")
      .def_prop_ro(
          "etcd_endpoints",
          [](const NodeSettings& s) {
            std::vector<std::string> urls;
            for (const EtcdEndpoint& e : s.etcd.endpoints) urls.push_back(e.Url());
            return urls;
          },
          "etcd: every endpoint's URL ('http://10.0.0.1:2379', 'https://...'); else [].")
      .def_prop_ro("etcd_prefix", [](const NodeSettings& s) { return s.etcd.prefix; },
                   "etcd: where the jobs' keys live (PREFIX/JOB_ID/...).")
      .def_ro("etcd_lease_seconds", &NodeSettings::etcd_lease_seconds,
              "etcd: the TTL of every agent's lease, whole seconds: the silence after which "
              "etcd forgets a machine's keys (EtcdLeaseSeconds); else 0.")
      .def_ro("ip", &NodeSettings::ip)
      .def_ro("port", &NodeSettings::port)
      .def_ro("loopback", &NodeSettings::loopback,
              "Only agents on this machine can reach the rendezvous.")
      .def_prop_ro("has_token", [](const NodeSettings& s) { return !s.token.value.empty(); })
      .def_prop_ro("job_id", [](const NodeSettings& s) { return s.job_id.value; })
      .def_prop_ro("node_name", [](const NodeSettings& s) { return s.node_name.value; })
      .def_prop_ro("unreachable_timeout",
                   [](const NodeSettings& s) { return NanosToSeconds(s.unreachable_timeout.value); })
      .def_prop_ro("scale_up_after",
                   [](const NodeSettings& s) { return OptionalSeconds(s.scale_up_after.value); },
                   "Seconds; None: never.")
      .def_ro("min_nodes", &NodeSettings::min_nodes)
      .def_ro("max_nodes", &NodeSettings::max_nodes)
      .def_ro("processes_per_node", &NodeSettings::processes_per_node)
      .def_prop_ro("last_call", [](const NodeSettings& s) { return NanosToSeconds(s.last_call.value); })
      .def_prop_ro("join_timeout",
                   [](const NodeSettings& s) { return NanosToSeconds(s.join_timeout.value); })
      .def_ro("max_restarts", &NodeSettings::max_restarts)
      .def_prop_ro("max_reforms", [](const NodeSettings& s) { return s.max_reforms.value; },
                   "The thrash guard: more than this many re-forms without progress within "
                   "reform_window end the job.")
      .def_prop_ro("reform_window",
                   [](const NodeSettings& s) { return NanosToSeconds(s.reform_window.value); },
                   "Seconds.")
      .def_prop_ro("sources", &NodeSettings::Sources)
      .def("attempt_token", &AttemptToken, nb::arg("attempt"),
           "The roll call's token of that attempt's processes (never the job's token).");
  m.def("resolve_node_settings", &ResolveNodeSettingsPy, nb::arg("request"),
        nb::arg("environment"),
        "Resolves and checks a machine's agent's settings (the rendezvous's host looked up "
        "within 10 s, GIL released); ConfigError naming the setting, its source and the fix.");
}

const char* KindName(NodeReplyKind kind) {
  switch (kind) {
    case NodeReplyKind::kWaiting: return "waiting";
    case NodeReplyKind::kAdmitted: return "admitted";
    case NodeReplyKind::kRefused: return "refused";
    case NodeReplyKind::kRoster: return "roster";
    case NodeReplyKind::kEnd: return "end";
    case NodeReplyKind::kStop: return "stop";
    case NodeReplyKind::kStatus: return "status";
  }
  return "unknown";
}

}  // namespace

void BindRendezvous(nb::module_& m) {
  m.attr("EXIT_NOT_ENOUGH_NODES") = kExitNotEnoughNodes;
  m.attr("EXIT_LOST_RENDEZVOUS") = kExitLostRendezvous;
  m.attr("EXIT_DRAINED") = kExitDrained;
  BindSettings(m);

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
      .def_ro("node_count", &NodeReply::node_count,
              "How many nodes run the attempt (ranks 0 .. node_count - 1).")
      .def_ro("first_failure", &NodeReply::first_failure)
      .def_ro("ended", &NodeReply::ended,
              "After a re-form: how the last attempt ended (no failure), else ''.")
      .def_ro("previous_processes", &NodeReply::previous_processes,
              "The previous attempt's process count; 0 in the first.")
      .def_ro("run_id", &NodeReply::run_id, "The job's run: the same in every attempt.")
      .def_ro("exit_status", &NodeReply::exit_status)
      .def_ro("status", &NodeReply::status, "A status answer: the job's state as JSON.");

  nb::class_<PyServer>(m, "RendezvousServer",
                       "The nodes' rendezvous: admits agents, forms each attempt, ends the job. "
                       "Its lines go to stderr.")
      .def(
          "__init__",
          [](PyServer* self, const NodeSettings& settings, std::optional<LogCallback> log,
             bool log_progress) {
            RendezvousServerOptions options = ServerOptionsFor(settings);
            options.log_progress = log_progress;
            new (self) PyServer(std::move(options), ToPython(std::move(log), "kdist rendezvous: "));
          },
          nb::arg("settings"), nb::arg("log") = nb::none(), nb::arg("log_progress") = true,
          "The rendezvous of `settings`; its lines go to `log` (a callable taking one line, "
          "called from its thread) or, without one, to stderr as `kdist rendezvous: <line>`; "
          "`log_progress`: whether the waiting line goes there too (an agent prints the one "
          "it is sent).")
      .def(
          "listen",
          [](PyServer& s, const NodeSettings& settings) {
            RaiseIfError(s.server_->Listen(ValueOrRaise(EndpointFromLiteral(settings.ip, settings.port))));
          },
          nb::arg("settings"),
          "Binds the settings' rendezvous address: PortInUseError when taken; KdistError "
          "(EADDRNOTAVAIL) when the address is not this machine's.")
      .def(
          "listen_at",
          [](PyServer& s, const std::string& ip, uint16_t port) {
            RaiseIfError(s.server_->Listen(ValueOrRaise(EndpointFromLiteral(ip, port))));
          },
          nb::arg("ip"), nb::arg("port"),
          "Binds ip:port (0: any free port): the holder of an etcd job's book listens on its "
          "own address.")
      .def(
          "persist_with",
          [](PyServer& s, nb::callable persist) {
            s.persist_ = persist;
            s.server_->PersistWith(PersistOver(s.persist_.ptr()));
          },
          nb::arg("persist"),
          nb::sig("def persist_with(self, persist: typing.Callable[[bytes], str | None]) -> None"),
          "Before start: persist(sealed: bytes) -> None, or why it could not (str), is called "
          "with the book's state after each change, before its messages are delivered; a "
          "refusal fences the server (it delivers nothing more and ends).")
      .def(
          "restore",
          [](PyServer& s, nb::bytes sealed) {
            return ValueOrRaise(
                s.server_->Restore(std::string_view(sealed.c_str(), sealed.size())));
          },
          nb::arg("sealed"),
          "Before start: the book goes on from a sealed state; returns its nodes' names, "
          "detached until their agents come back. RendezvousError when it does not verify "
          "under the job's token or is another job's; ConfigError when malformed.")
      .def(
          "node_gone", [](PyServer& s, const std::string& name) { s.server_->NodeGone(name); },
          nb::arg("name"), "Node `name`'s agent is gone (its key in etcd expired).")
      .def_prop_ro("fenced", [](const PyServer& s) { return s.server_->fenced(); },
                   "A refused persist fenced this server.")
      .def_prop_ro("job_ended", [](const PyServer& s) { return s.server_->job_ended(); },
                   "The job ended here: its book decided the end (not a stop, not a fence).")
      .def_prop_ro("port", [](const PyServer& s) { return s.server_->port(); })
      .def("start", [](PyServer& s) { RaiseIfError(s.server_->Start()); })
      .def(
          "wait", [](PyServer& s, double timeout) { return s.server_->Wait(SecondsToNanos(timeout)); },
          nb::arg("timeout"), nb::call_guard<nb::gil_scoped_release>(),
          "Waits at most `timeout` seconds for the job to end; True when it has.")
      .def("stop", [](PyServer& s) { s.server_->Stop(); },
           nb::call_guard<nb::gil_scoped_release>())
      .def(
          "abandon", [](PyServer& s, const std::string& why) { s.server_->Abandon(why); },
          nb::arg("why"),
          "This machine leaves: while the job gathers, every agent is told (69, naming `why`) "
          "and the rendezvous ends; once it formed, nothing.")
      .def_prop_ro("formed", [](const PyServer& s) { return s.server_->formed(); },
                   "Whether the job's first attempt started.")
      .def_prop_ro("run_id", [](const PyServer& s) { return s.server_->run_id(); })
      .def_prop_ro("exit_status", [](const PyServer& s) { return s.server_->exit_status(); })
      .def_prop_ro("attempt_table", [](const PyServer& s) { return s.server_->AttemptTable(); })
      .def(
          "status_json",
          [](PyServer& s, double timeout) { return s.server_->StatusJson(SecondsToNanos(timeout)); },
          nb::arg("timeout") = 2.0, nb::call_guard<nb::gil_scoped_release>(),
          "The book's state as JSON, schema 1 (`kdist status`, /metrics), from the server's "
          "thread within `timeout` seconds.")
      .def(
          "linger_after_end",
          [](PyServer& s, double seconds) { s.server_->LingerAfterEnd(SecondsToNanos(seconds)); },
          nb::arg("seconds"),
          "Before start: after the job ended, go on answering `kdist status` this long.")
      .def_prop_ro("attempts", [](const PyServer& s) { return s.server_->Attempts(); },
                   "After the end: every attempt, in order.");

  nb::class_<PyAgent>(m, "RendezvousAgent", "This machine's side of the nodes' rendezvous.")
      .def(
          "__init__",
          [](PyAgent* self, const NodeSettings& settings, std::optional<LogCallback> log,
             std::optional<std::string> address, std::optional<double> connect_timeout) {
            RendezvousAgentOptions options = address.has_value()
                                                 ? HolderAgentOptions(settings, *address, connect_timeout)
                                                 : ValueOrRaise(AgentOptionsFor(settings));
            new (self) PyAgent(std::move(options), settings, ToPython(std::move(log), "kdist agent: "));
          },
          nb::arg("settings"), nb::arg("log") = nb::none(), nb::arg("address") = nb::none(),
          nb::arg("connect_timeout") = nb::none(),
          "This machine's side of the rendezvous of `settings`; its lines go to `log` (or to "
          "stderr as `kdist agent: <line>`). address: the holder of an etcd job's book "
          "(IP:PORT), reached within connect_timeout seconds (default: the join timeout).")
      .def(
          "ask_stop",
          [](PyAgent& a, const std::string& host, int64_t pid) {
            NodeHello hello;
            hello.job_id = a.settings_.job_id.value;
            hello.node_name = "kdist-stop";
            hello.host = host;
            hello.pid = pid;
            hello.purpose = NodePurpose::kStop;
            hello.environment = EncodeFingerprint({});
            Result<NodeReply> answer = Internal("unset");
            {
              nb::gil_scoped_release release;
              answer = a.agent_->Ask(std::move(hello));
            }
            RaiseAgentError(answer.status());
            return answer->message;
          },
          nb::arg("host"), nb::arg("pid"),
          "`kdist stop`: asks the job's rendezvous to stop the job at one agreed step (every "
          "agent then leaves with 143); its answer. RendezvousTimeoutError, "
          "CoordinatorUnreachableError or RendezvousError when it cannot.")
      .def(
          "ask_status",
          [](PyAgent& a, const std::string& host, int64_t pid) {
            NodeHello hello;
            hello.job_id = a.settings_.job_id.value;
            hello.node_name = "kdist-status";
            hello.host = host;
            hello.pid = pid;
            hello.purpose = NodePurpose::kStatus;
            hello.environment = EncodeFingerprint({});
            Result<NodeReply> answer = Internal("unset");
            {
              nb::gil_scoped_release release;
              answer = a.agent_->Ask(std::move(hello));
            }
            RaiseAgentError(answer.status());
            if (answer->kind != NodeReplyKind::kStatus) {
              RaiseAgentError(FailedPrecondition(
                  "the nodes' rendezvous answered a status request with a " +
                  std::string(KindName(answer->kind)) + " reply: " + answer->message));
            }
            return answer->status;
          },
          nb::arg("host"), nb::arg("pid"),
          "`kdist status`: the job's state as JSON (schema 1) from its rendezvous. "
          "RendezvousTimeoutError, CoordinatorUnreachableError or RendezvousError when it "
          "cannot.")
      .def(
          "join",
          [](PyAgent& a, const std::string& host, int64_t pid, int64_t coordinator_port,
             const EnvironmentEntries& environment, bool rejoin) {
            const NodeSettings& s = a.settings_;
            NodeHello hello;
            if (rejoin) hello.purpose = NodePurpose::kRejoin;
            hello.job_id = s.job_id.value;
            hello.node_name = s.node_name.value;
            hello.host = host;
            hello.pid = pid;
            hello.processes_per_node = s.processes_per_node;
            hello.min_nodes = s.min_nodes;
            hello.max_nodes = s.max_nodes;
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
          nb::arg("host"), nb::arg("pid"), nb::arg("coordinator_port"), nb::arg("environment"),
          nb::arg("rejoin") = false,
          "Connects (retrying to the join timeout), proves the token and is admitted; "
          "RendezvousTimeoutError, CoordinatorUnreachableError or RendezvousError otherwise. "
          "rejoin: this agent comes back to a restored book (etcd) as the node it was.")
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
          [](PyAgent& a, int64_t attempt, int64_t exit_status,
             const std::optional<JobFailure>& failure, int64_t coordinator_port, bool drain,
             bool progressed, bool steps_only, int64_t first_step, int64_t first_step_unix_millis,
             int64_t step, int64_t step_unix_millis) {
            NodeReport r;
            r.drain = drain;
            r.progressed = progressed;
            r.steps_only = steps_only;
            r.first_step = first_step < 0 ? -1 : first_step;
            r.first_step_unix_millis = first_step < 0 ? 0 : first_step_unix_millis;
            r.step = step < 0 ? -1 : step;
            r.step_unix_millis = step < 0 ? 0 : step_unix_millis;
            r.attempt = attempt;
            r.exit_status = exit_status;
            if (failure.has_value()) r.failure = *failure;
            r.coordinator_port = coordinator_port;
            Status status;
            {
              nb::gil_scoped_release release;
              status = a.agent_->SendReport(std::move(r));
            }
            RaiseAgentError(status);
          },
          nb::arg("attempt"), nb::arg("exit_status"), nb::arg("failure"),
          nb::arg("coordinator_port"), nb::arg("drain") = false, nb::arg("progressed") = false,
          nb::arg("steps_only") = false, nb::arg("first_step") = -1,
          nb::arg("first_step_unix_millis") = 0, nb::arg("step") = -1,
          nb::arg("step_unix_millis") = 0,
          "(steps: the first and newest step its processes reported, with their Unix "
          "millisecond times, -1: none; steps_only=True: a step notice while it runs.) "
          "How `attempt` ended here (`progressed`: its processes saved a backup or stepped "
          "past their first step); with drain=True, a drain notice instead: this machine "
          "leaves, the rendezvous stops the attempt at one agreed step.")
      .def_prop_ro("local_address", [](const PyAgent& a) { return a.agent_->local_address(); })
      .def("close", [](PyAgent& a) { a.agent_->Close(); });
}

}  // namespace kdist::bindings
