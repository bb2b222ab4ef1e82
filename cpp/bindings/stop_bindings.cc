#include "stop_bindings.h"

#include <atomic>
#include <csignal>
#include <chrono>
#include <climits>
#include <string>
#include <vector>

#include "base/clock.h"
#include "casters.h"
#include "config/cluster_spec.h"
#include "errors.h"
#include "stop/signal_relay.h"
#include "stop/stop_signals.h"

namespace nb = nanobind;

namespace kdist::bindings {
namespace {

// The board should_stop asks: the one kdist._together.stop activated (the job's, or
// this process's own outside a job). Python keeps it alive while it is set.
std::atomic<StopBoardPy*> g_active_board{nullptr};

// What makes this process's own board outside any job (kdist._together.stop's
// ensure_active, registered by set_board_maker). Borrowed, as the active board
// is: the module that registers it keeps it alive.
std::atomic<PyObject*> g_board_maker{nullptr};

// How long should_stop waits for the job to agree on the stop step, at most.
constexpr std::chrono::seconds kAgreementBound(60);

[[noreturn]] void RaiseNamed(const char* exception_name, const std::string& message) {
  nb::object errors = nb::module_::import_("kdist._errors");
  PyErr_SetString(errors.attr(exception_name).ptr(), message.c_str());
  throw nb::python_error();
}

[[noreturn]] void RaiseNotAStep(nb::handle step) {
  const std::string received = nb::cast<std::string>(nb::repr(step));
  const std::string type = nb::cast<std::string>(step.type().attr("__name__"));
  RaiseNamed("ArgumentTypeError",
             "should_stop: step must be an int (the step's number, the same in every "
             "process). Received: " + received + " of type " + type);
}

StopBoardPy* ActiveBoard() {
  StopBoardPy* board = g_active_board.load(std::memory_order_acquire);
  if (board != nullptr) return board;
  // Outside any job: this process's own board, made on first use.
  PyObject* maker = g_board_maker.load(std::memory_order_acquire);
  if (maker == nullptr) {
    RaiseNamed("KdistError", "should_stop: no stop board is active and none can be made "
                             "(kdist._together.stop registers the maker; import kdist first)");
  }
  nb::handle{maker}();
  board = g_active_board.load(std::memory_order_acquire);
  if (board == nullptr) RaiseNamed("KdistError", "should_stop: no stop board is active");
  return board;
}

nb::object ShouldStop(nb::handle step) {
  PyObject* value = step.ptr();
  if (!PyLong_Check(value) || PyBool_Check(value)) RaiseNotAStep(step);
  int overflow = 0;
  const long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow != 0) RaiseNotAStep(step);
  StopBoard& board = ActiveBoard()->board;
  StopBoard::Answer answer = board.Report(number);
  if (answer == StopBoard::Answer::kWait) {
    bool decided = false;
    {
      nb::gil_scoped_release release;
      decided = board.WaitForDecision(kAgreementBound);
    }
    if (!decided) {
      RaiseNamed("RendezvousTimeoutError",
                 "should_stop(" + std::to_string(number) +
                     "): the job did not agree on a stop step within 60 s (process 0 asked "
                     "every process for its step; one did not answer)");
    }
    answer = board.Report(number);
  }
  return nb::borrow(answer == StopBoard::Answer::kStop ? Py_True : Py_False);
}

void InstallSignalRelayPy(const ClusterSpec& spec, StopBoardPy& board) {
  RaiseIfError(InstallSignalRelay(spec.stop_signals.value, &board.board));
}

}  // namespace

void BindStop(nb::module_& m) {
  nb::class_<StopBoardPy>(
      m, "StopBoard",
      "This process's steps and the job's stop, shared by should_stop(step), the stop-signal "
      "handler and the liveness channel's thread.")
      .def(nb::init<>())
      .def("beat", [](StopBoardPy& b) { b.board.Beat(); }, "Progress without a step.")
      .def_prop_ro("armed", [](const StopBoardPy& b) { return b.board.armed(); },
                   "Whether should_stop or barrier reported progress yet.")
      .def_prop_ro("step", [](const StopBoardPy& b) { return b.board.step(); },
                   "The last step reported (-1: none).")
      .def_prop_ro("stop_step",
                   [](const StopBoardPy& b) -> std::optional<int64_t> {
                     if (!b.board.decided()) return std::nullopt;
                     return b.board.stop_step();
                   },
                   "The agreed stop step, or None.")
      .def_prop_ro("stopped_status",
                   [](const StopBoardPy& b) -> std::optional<int> {
                     if (!b.board.stopped()) return std::nullopt;
                     const int signal_number = b.board.stop_signal();
                     return 128 + (signal_number != 0 ? signal_number : SIGTERM);
                   },
                   "The status this process leaves with because it stopped at the agreed step "
                   "(128 + the stop signal: 143 for SIGTERM and for a request from code), or "
                   "None while it has not stopped.");
  m.def(
      "set_active_board",
      [](StopBoardPy* board) { g_active_board.store(board, std::memory_order_release); },
      nb::arg("board").none(),
      "The board should_stop asks (None: none; the next call makes this process's own). The "
      "caller keeps it alive while it is set.");
  m.def("should_stop", &ShouldStop, nb::arg("step"),
        nb::sig("def should_stop(step: int) -> bool"),
        "The core of kdist.should_stop (kdist._together.stop, whose docstring is the public "
        "one): whether the job stops at `step`, in a few atomic operations on the active "
        "board; kdist.ArgumentTypeError when `step` is not an int.");
  m.def(
      "set_board_maker",
      [](nb::callable maker) { g_board_maker.store(maker.ptr(), std::memory_order_release); },
      nb::arg("maker"), nb::sig("def set_board_maker(maker: typing.Callable[[], None]) -> None"),
      "What should_stop calls, outside any job, to make and activate this process's own board "
      "(kdist._together.stop registers ensure_active). The caller keeps it alive.");
  m.def("remember_program_handlers", &RememberProgramHandlers, nb::arg("signals"),
        "Before JAX's initialize: the handlers in place now for `signals` are the program's own, "
        "called (after XLA's) by kdist's stop-signal handler.");
  m.def("install_signal_relay", &InstallSignalRelayPy, nb::arg("spec"), nb::arg("board"),
        "Installs kdist's handler for `spec`'s stop signals: it tells `board`, then calls the "
        "handlers that were there (XLA's, the program's own). The caller keeps `board` alive "
        "until uninstall_signal_relay.");
  m.def("stack_signal", &StackSignal,
        "The signal that makes Python's faulthandler write this process's stacks for the "
        "stall watchdog (SIGRTMAX - 1).");
  m.def("uninstall_signal_relay", &UninstallSignalRelay,
        "Puts back the handlers install_signal_relay replaced.");
}

}  // namespace kdist::bindings
