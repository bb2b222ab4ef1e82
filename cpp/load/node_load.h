// A load generator for the nodes' rendezvous (rendezvous/rendezvous_server.h): thousands
// of simulated machines' agents in one thread, each a real TCP connection to the
// rendezvous that opens as kdist's agent does (opening, challenge, a hello signed with
// the job's token over it, its environment fingerprint), checks every reply as the
// agent does (signed over its own nonce, numbered in order), and plays, when told, the
// events of a job across machines: forming, a machine lost, a drain, a machine added,
// the end. Every frame is cpp/core's (rendezvous/rendezvous_wire.h); one epoll loop
// serves all, connecting from many loopback addresses (loopback_connect.h).
//
// Each scenario returns when every simulated agent that should be told was told (or at
// the timeout), with what each was told checked against the others: one roster per
// attempt per agent, every roster of the attempt naming the same attempt, node count and
// coordinator, the ranks 0 .. count-1 each held once (so process ids are contiguous: rank
// r runs r*n .. r*n+n-1), one stop per agent naming the attempt it runs, one end with the
// expected status. Anything else is counted as wrong and the first one described.
//
// Not part of the kdist library: it is linked only into the benchmark extension
// (kdist._core_bench) and the C++ tests.
#ifndef KDIST_LOAD_NODE_LOAD_H_
#define KDIST_LOAD_NODE_LOAD_H_

#include <cstdint>
#include <memory>
#include <string>

#include "base/clock.h"
#include "base/status.h"
#include "net/socket.h"

namespace kdist {

struct NodeLoadOptions {
  Endpoint rendezvous;
  std::string token;  // the job's token ("" when the rendezvous has none)
  std::string job_id;
  int64_t min_nodes = 1;
  int64_t max_nodes = 1;
  int64_t processes_per_node = 8;
  std::string environment;  // EncodeFingerprint() that every simulated agent sends
  // Agents 0 .. count - 1 join the job; Grow adds the next ones. Agent i is node
  // "<name_prefix><i, 5 digits>" on host "<name_prefix>host-<i>".
  int64_t count = 0;
  std::string name_prefix = "sim-";
  size_t max_connecting = 256;  // connects and hellos in flight at once
  Nanos timeout = std::chrono::seconds(60);  // for each scenario
};

// What one scenario saw. `seconds`: from the scenario's first connect, close or frame to
// the last agent told; `told`: agents told the outcome (a roster, a stop or an end);
// `wrong`: anything that was not the scenario's answer or disagrees with the others (a
// refusal, a second roster, a rank held twice, another attempt, a frame that does not
// verify, a connection closed), the first described in `first_wrong`.
struct NodeScenarioReport {
  double seconds = 0;
  // Join and Grow: from the last hello written to the last agent told.
  double after_last_hello = 0;
  int64_t expected = 0;  // agents that should be told
  int64_t told = 0;
  int64_t told_twice = 0;
  int64_t wrong = 0;
  std::string first_wrong;
  int64_t attempt = -1;     // the attempt every roster or stop named
  int64_t node_count = 0;   // the node count every roster named (rosters)
  int64_t exit_status = 0;  // the status every end named (ends)
  int64_t ended = 0;        // agents told to end (a drained one, with Stopped; all with Finish)
};

class NodeLoad {
 public:
  // Raises the file-descriptor limit for the connections; connects nothing yet.
  static Result<std::unique_ptr<NodeLoad>> Create(NodeLoadOptions options, Clock& clock);
  ~NodeLoad();
  NodeLoad(const NodeLoad&) = delete;
  NodeLoad& operator=(const NodeLoad&) = delete;

  // Agents 0 .. count - 1 connect, say hello and are admitted; the job forms (MAX joined,
  // or MIN and the last call); told = received its roster.
  Result<NodeScenarioReport> Join();
  // Agent `index`'s machine is lost: its connection closes, and every other running agent
  // reports its processes ended (status 1) at once, as the liveness channel ends them;
  // told = received the next attempt's roster, without it.
  Result<NodeScenarioReport> Lose(int64_t index);
  // Agent `index` sends a drain notice (its agent received SIGTERM); told = every running
  // agent received the stop of the attempt at one agreed step.
  Result<NodeScenarioReport> Drain(int64_t index);
  // After a stop: every running agent reports its processes stopped (status 143); told =
  // the next roster, or, for a drained agent, its end with 143 (`ended`).
  Result<NodeScenarioReport> Stopped();
  // The next agent joins the running job; every running agent, told to stop, reports at
  // once (status 143); told = every agent, the new one too, received the next roster.
  // (The rendezvous's --scale-up-after is part of the time: 0 s in the benchmark.)
  Result<NodeScenarioReport> Grow();
  // Every running agent reports its processes passed; told = the end, status 0.
  Result<NodeScenarioReport> Finish();

  // Agents running an attempt (told a roster, neither lost nor ended).
  int64_t running() const;

  struct Agent;

 private:
  NodeLoad();
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kdist

#endif  // KDIST_LOAD_NODE_LOAD_H_
