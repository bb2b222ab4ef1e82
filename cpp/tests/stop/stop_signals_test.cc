#include "stop/stop_signals.h"

#include <csignal>
#include <string>
#include <vector>

#include "testing/status_matchers.h"

namespace kdist {
namespace {

TEST(StopSignals, NamesWithOrWithoutSigInAnyCase) {
  EXPECT_EQ(*ParseStopSignals("SIGTERM"), std::vector<int>({SIGTERM}));
  EXPECT_EQ(*ParseStopSignals(" sigterm , USR1 "), std::vector<int>({SIGTERM, SIGUSR1}));
  EXPECT_EQ(*ParseStopSignals("SIGUSR2,SIGTERM"), std::vector<int>({SIGUSR2, SIGTERM}));
}

TEST(StopSignals, EachSignalOnce) {
  EXPECT_EQ(*ParseStopSignals("SIGTERM,TERM,sigterm"), std::vector<int>({SIGTERM}));
}

TEST(StopSignals, NoneAndOffTurnTheFeatureOff) {
  EXPECT_TRUE(ParseStopSignals("none")->empty());
  EXPECT_TRUE(ParseStopSignals(" OFF ")->empty());
}

TEST(StopSignals, UnknownEmptyAndUncatchableEntriesAreRefused) {
  KDIST_EXPECT_ERROR(ParseStopSignals(""), StatusCode::kInvalidArgument, "is empty");
  KDIST_EXPECT_ERROR(ParseStopSignals("SIGTERM,,SIGUSR1"), StatusCode::kInvalidArgument,
                     "entry 2 of 3 is empty");
  KDIST_EXPECT_ERROR(ParseStopSignals("SIGTERM,SIGFOO"), StatusCode::kInvalidArgument,
                     "entry \"SIGFOO\" is not a stop signal kdist knows; expected names among "
                     "SIGTERM, SIGINT");
  KDIST_EXPECT_ERROR(ParseStopSignals("SIGKILL"), StatusCode::kInvalidArgument,
                     "\"SIGKILL\" cannot be caught by any process");
  KDIST_EXPECT_ERROR(ParseStopSignals("15"), StatusCode::kInvalidArgument,
                     "\"15\" is not a stop signal");
  KDIST_EXPECT_ERROR(ParseStopSignals("SIGSEGV"), StatusCode::kInvalidArgument,
                     "is not a stop signal");
}

TEST(StopSignals, FormatsAsTheSettingIsWritten) {
  EXPECT_EQ(FormatStopSignals({SIGTERM, SIGUSR1}), std::string("SIGTERM,SIGUSR1"));
  EXPECT_EQ(FormatStopSignals({}), std::string("none"));
  EXPECT_EQ(SignalName(SIGUSR2), std::string("SIGUSR2"));
  EXPECT_EQ(SignalName(SIGRTMIN + 1), "signal " + std::to_string(SIGRTMIN + 1));
}

}  // namespace
}  // namespace kdist
