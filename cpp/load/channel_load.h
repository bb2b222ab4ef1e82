// A load generator for the liveness channel (liveness/liveness_hub.h): thousands of
// simulated processes in one thread, each a real TCP connection to process
// 0's hub that joins with the nonce from "go" and then plays, when told, the
// events of a job: a stop request answered by every process, a barrier, a
// stall round, a failure (a connection closed without a finish), the finish.
// Every frame is cpp/core's (liveness/liveness_wire.h); one epoll loop serves all.
//
// Each scenario returns when every simulated process still connected was told
// its outcome (or at the timeout), with what each was told summed up, so that
// a test can check the answer as well as the time.
//
// Not part of the kdist library: it is linked only into the benchmark
// extension (kdist._core_bench) and the C++ tests.
#ifndef KDIST_LOAD_CHANNEL_LOAD_H_
#define KDIST_LOAD_CHANNEL_LOAD_H_

#include <cstdint>
#include <memory>
#include <string>

#include "base/clock.h"
#include "base/status.h"
#include "net/socket.h"

namespace kdist {

struct ChannelLoadOptions {
  Endpoint hub;       // process 0's liveness hub
  std::string nonce;  // from "go"
  int64_t first_id = 1;
  int64_t count = 0;  // processes first_id .. first_id + count - 1
  std::string host_prefix = "sim-";
  size_t max_connecting = 256;  // connects and joins in flight at once
  Nanos timeout = std::chrono::seconds(60);  // for each scenario
};

// What one scenario saw. `seconds`: from the scenario's first frame (or
// close) to the last simulated process told; `told`: how many were told the
// outcome; `told_twice`: told it more than once; `other`: frames that were
// not the scenario's (each a wrong answer); `lowest` / `highest`: the range
// of the value each was told (the stop step, the process named, the
// barrier's code), so that lowest == highest means all agree.
struct ChannelScenarioReport {
  double seconds = 0;
  int64_t expected = 0;  // simulated processes that should be told
  int64_t told = 0;
  int64_t told_twice = 0;
  int64_t other = 0;
  int64_t lowest = 0;
  int64_t highest = 0;
  std::string first_other;  // the first unexpected frame, described
};

class ChannelLoad {
 public:
  // Raises the file-descriptor limit for `count` connections; connects
  // nothing yet.
  static Result<std::unique_ptr<ChannelLoad>> Create(ChannelLoadOptions options, Clock& clock);
  ~ChannelLoad();
  ChannelLoad(const ChannelLoad&) = delete;
  ChannelLoad& operator=(const ChannelLoad&) = delete;

  // Every simulated process connects and joins, and once admitted says it asks
  // should_stop (kArmed, as a training loop does); told = admitted. `seconds`:
  // from the first connect to the last admission.
  Result<ChannelScenarioReport> Join();
  // Process `requester` asks to stop; each answers the hub's query with step
  // `base_step + (id % 7)`; told = received kStopAt (value: its step).
  Result<ChannelScenarioReport> Stop(int64_t requester, int64_t base_step);
  // Every simulated process arrives at barrier `index` named `name` (process 0
  // arrives on its own); told = received kBarrierDone (value: its code).
  // `seconds`: from the last arrival written to the last release.
  Result<ChannelScenarioReport> Barrier(int64_t index, const std::string& name);
  // Process `stuck` reports a stall; every process answers the progress query
  // with step `base_step` (the stuck one with one less); told = received
  // kJobStalled (value: the process it names).
  Result<ChannelScenarioReport> Stall(int64_t stuck, int64_t base_step);
  // Process `victim` closes its connection without a finish; told = every
  // other received kDied (value: the process it names).
  Result<ChannelScenarioReport> Failure(int64_t victim);
  // Every simulated process finishes (through JAX's barrier); told = received
  // kAllDone (value: its barrier flag). `seconds`: from the last finish
  // written to the last kAllDone.
  Result<ChannelScenarioReport> Finish();
  // Waits `quiet` and returns how many bytes arrived on all the simulated
  // processes' sockets meanwhile (TCP keepalive carries none).
  Result<int64_t> BytesWhileIdle(Nanos quiet);

  struct Simulated;

 private:
  ChannelLoad(ChannelLoadOptions options, Clock& clock);
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kdist

#endif  // KDIST_LOAD_CHANNEL_LOAD_H_
