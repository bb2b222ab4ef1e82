// The signals that ask a job to stop (KDIST_STOP_SIGNALS, initialize(stop_signals=)):
// a comma list of names such as "SIGTERM,SIGUSR1", or "none".
//
// A stop signal is not fatal under kdist: it becomes a stop request for the
// whole job (liveness channel), which programs that call should_stop(step)
// see at one agreed step, and which ends the others together at once.
#ifndef KDIST_STOP_STOP_SIGNALS_H_
#define KDIST_STOP_STOP_SIGNALS_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kdist {

// What the setting defaults to: SIGTERM, what Slurm, Kubernetes and kdist
// launch send to stop a job.
inline constexpr std::string_view kDefaultStopSignals = "SIGTERM";

// The names a stop signal may have, in the order messages list them: the
// signals that schedulers send to stop or warn a job and that a process can
// catch (SIGKILL and SIGSTOP cannot be; faults such as SIGSEGV are not stops).
const std::vector<std::string>& StopSignalNames();

// "SIGTERM,SIGUSR1" -> their numbers, in the order given, each once; "none"
// (or "off") -> empty. Names are case-insensitive, with or without "SIG".
// kInvalidArgument names the entry and lists the accepted names.
Result<std::vector<int>> ParseStopSignals(std::string_view text);

// "SIGTERM" for 15; "signal 40" for a number without a name here.
std::string SignalName(int signal_number);

// The setting as text: "SIGTERM,SIGUSR1", or "none".
std::string FormatStopSignals(const std::vector<int>& signals);

// The signal that makes Python's faulthandler write this process's stacks (every
// thread) to its stderr, for the stall watchdog: a real-time signal nothing else
// in kdist uses (SIGRTMAX - 1).
int StackSignal();

}  // namespace kdist

#endif  // KDIST_STOP_STOP_SIGNALS_H_
