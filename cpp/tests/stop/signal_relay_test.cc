#include "stop/signal_relay.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

std::atomic<int> g_found_calls{0};
std::atomic<int> g_program_calls{0};
void FoundHandler(int) { g_found_calls++; }
void ProgramHandler(int) { g_program_calls++; }

struct SavedAction {
  explicit SavedAction(int signal_number) : signal_number(signal_number) {
    sigaction(signal_number, nullptr, &saved);
  }
  ~SavedAction() { sigaction(signal_number, &saved, nullptr); }
  int signal_number;
  struct sigaction saved;
};

TEST(SignalRelay, TellsTheBoardAndCallsTheHandlersBeforeIt) {
  SavedAction restore(SIGUSR2);
  g_found_calls = g_program_calls = 0;
  signal(SIGUSR2, ProgramHandler);  // the program's own, before JAX
  RememberProgramHandlers({SIGUSR2});
  signal(SIGUSR2, FoundHandler);    // what JAX's initialize put in its place
  StopBoard board;
  KDIST_ASSERT_OK(InstallSignalRelay({SIGUSR2}, &board));
  raise(SIGUSR2);
  EXPECT_EQ(board.TakeSignal(), SIGUSR2);
  EXPECT_EQ(g_found_calls.load(), 1);
  EXPECT_EQ(g_program_calls.load(), 1);
  UninstallSignalRelay();
  raise(SIGUSR2);  // the handler found at install time is back
  EXPECT_EQ(g_found_calls.load(), 2);
  EXPECT_EQ(board.TakeSignal(), 0);
}

TEST(SignalRelay, TheDefaultActionIsNotCalledAndAHandlerOnlyOnce) {
  SavedAction restore(SIGUSR2);
  g_found_calls = g_program_calls = 0;
  signal(SIGUSR2, FoundHandler);
  RememberProgramHandlers({SIGUSR2});  // the same handler as the one found
  StopBoard board;
  KDIST_ASSERT_OK(InstallSignalRelay({SIGUSR2}, &board));
  raise(SIGUSR2);
  EXPECT_EQ(g_found_calls.load(), 1);
  UninstallSignalRelay();

  signal(SIGUSR2, SIG_DFL);  // nothing to chain: the process must survive the signal
  RememberProgramHandlers({});
  KDIST_ASSERT_OK(InstallSignalRelay({SIGUSR2}, &board));
  raise(SIGUSR2);
  EXPECT_EQ(board.TakeSignal(), SIGUSR2);
  UninstallSignalRelay();
}

TEST(SignalRelay, OneInstallationAtATime) {
  SavedAction restore(SIGUSR2);
  StopBoard board;
  KDIST_ASSERT_OK(InstallSignalRelay({SIGUSR2}, &board));
  KDIST_EXPECT_ERROR(InstallSignalRelay({SIGUSR2}, &board), StatusCode::kFailedPrecondition,
                     "installed already");
  UninstallSignalRelay();
  KDIST_EXPECT_OK(InstallSignalRelay({SIGUSR2}, &board));
  UninstallSignalRelay();
}

}  // namespace
}  // namespace kdist
