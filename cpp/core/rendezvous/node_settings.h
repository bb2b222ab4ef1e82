// The settings of a machine's agent (`kdist launch --nodes`) and of a rendezvous that
// trains nothing (`kdist rendezvous serve`), resolved once, each with its source, like
// the processes' ClusterSpec: from the command line, then the environment (a detected
// Slurm allocation included), then the default. What the book, the server and the agent
// are built with comes from here (BookOptionsFor, ServerOptionsFor, AgentOptionsFor),
// and the unreachable window is the processes' own (ResolveJobSettings), so every part
// of a job loses a silent host after the same time.
#ifndef KDIST_RENDEZVOUS_NODE_SETTINGS_H_
#define KDIST_RENDEZVOUS_NODE_SETTINGS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/environment.h"
#include "base/status.h"
#include "config/cluster_spec.h"
#include "net/address.h"
#include "rendezvous/etcd_address.h"
#include "rendezvous/rendezvous_agent.h"
#include "rendezvous/rendezvous_book.h"
#include "rendezvous/rendezvous_server.h"

namespace kdist {

inline constexpr std::chrono::seconds kDefaultLastCall{30};
inline constexpr std::chrono::seconds kDefaultJoinTimeout{300};
inline constexpr std::chrono::seconds kDefaultScaleUpAfter{30};
// Off loopback a token shorter than this is refused: anyone who reaches the rendezvous
// could guess it.
inline constexpr size_t kMinTokenBytes = 16;

// What the command line was given (nullopt: not given), and what the machine is.
struct NodeRequest {
  // --rendezvous HOST:PORT, "auto" (Slurm's first host) or etcd://... (rendezvous/
  // etcd_address.h); for `kdist rendezvous serve`, the address it binds.
  std::string rendezvous;
  bool serve_only = false;  // `kdist rendezvous serve`: this machine trains nothing
  std::string host_name;    // this machine's host name
  std::optional<std::string> job_id;
  std::optional<std::string> node_name;
  std::optional<std::string> token;  // --token-file's contents (the file checked by the caller)
  std::string token_source;          // "--token-file F"
  int64_t min_nodes = 1;
  int64_t max_nodes = 1;
  int64_t processes_per_node = 0;  // -n; 0 for serve (the first admitted agent's)
  std::optional<double> last_call;     // seconds
  std::optional<double> join_timeout;  // seconds
  int64_t max_restarts = 0;
  std::optional<std::string> scale_up_after;  // seconds, or "never"
  std::optional<std::string> max_reforms;     // --max-reforms (config/thrash_guard.h)
  std::optional<std::string> reform_window;   // --reform-window, seconds
};

// Where the job's book is kept.
enum class RendezvousStore {
  kEmbedded,  // HOST:PORT, auto: served by the agent whose machine owns the address, or by
              // `kdist rendezvous serve`
  kEtcd,      // etcd://...: served by the agent that holds the job's election key in etcd,
              // its state kept there (rendezvous/rendezvous_state.h)
};

// The resolved settings. The token's value is never printed.
struct NodeSettings {
  // "host:port" as the agents reach it (after auto), or "etcd://..." (EtcdPlace::ToString).
  Sourced<std::string> rendezvous;
  RendezvousStore store = RendezvousStore::kEmbedded;
  EtcdPlace etcd;                   // kEtcd: the endpoints and the prefix
  std::string ip;                   // kEmbedded: the rendezvous host's address (an IP literal)
  uint16_t port = 0;
  // Only this machine reaches the rendezvous: its ip is a loopback address (kEtcd: every
  // endpoint's).
  bool loopback = false;
  Sourced<std::string> token;       // "" only on loopback
  Sourced<std::string> job_id;
  Sourced<std::string> node_name;   // "" for serve
  Sourced<Nanos> unreachable_timeout;
  // kEtcd: the TTL of every agent's lease in etcd, whole seconds (EtcdLeaseSeconds).
  int64_t etcd_lease_seconds = 0;
  Sourced<std::optional<Nanos>> scale_up_after;  // nullopt: never
  int64_t min_nodes = 1;
  int64_t max_nodes = 1;
  int64_t processes_per_node = 0;
  Sourced<Nanos> last_call;
  Sourced<Nanos> join_timeout;
  int64_t max_restarts = 0;
  Sourced<int64_t> max_reforms;     // the thrash guard (config/thrash_guard.h)
  Sourced<Nanos> reform_window;

  // Every setting's source, by name ("unreachable_timeout": "KDIST_UNREACHABLE_TIMEOUT").
  std::map<std::string, std::string> Sources() const;
};

// The IP addresses a host name resolves to (an IP literal gives itself); the agent passes
// a bounded system lookup, tests a table.
using HostLookup = std::function<Result<std::vector<std::string>>(const std::string& host)>;

// kInvalidArgument naming the setting, its value and source, and the fix: a malformed
// address, `auto` outside Slurm, a bad KDIST_UNREACHABLE_TIMEOUT (as the processes would
// name it), a missing or short token off loopback, etcd:// without a job id (neither
// --job-id nor a Slurm allocation's) or for `kdist rendezvous serve`; kUnavailable when the
// host does not resolve (etcd's endpoints are not looked up here: the agent reaches them).
Result<NodeSettings> ResolveNodeSettings(const NodeRequest& request, const Environment& env,
                                         const HostLookup& lookup);

// The roll call's token of one attempt of the job (KDIST_ROLL_CALL_TOKEN of its processes):
// HMAC-SHA-256 of the job id and the attempt under the job's token (under a fixed key
// without one, on loopback), in hex. A process left over from another attempt is refused
// at the roll call, and the job's token itself never reaches the processes.
std::string AttemptToken(const NodeSettings& settings, int64_t attempt);

// The TTL of an agent's lease in etcd for the unreachable window: etcd forgets a silent
// machine's keys (its node, the job's election key when it holds the book) after as much
// silence as ends an embedded rendezvous's connection to it (KeepaliveFor's
// user_timeout, net/keepalive.h), so that losing the book's machine costs what losing any
// machine costs; at least 2 s, the shortest lease etcd grants at its default timing.
int64_t EtcdLeaseSeconds(Nanos unreachable_timeout);

RendezvousOptions BookOptionsFor(const NodeSettings& settings);
RendezvousServerOptions ServerOptionsFor(const NodeSettings& settings);
Result<RendezvousAgentOptions> AgentOptionsFor(const NodeSettings& settings);

}  // namespace kdist

#endif  // KDIST_RENDEZVOUS_NODE_SETTINGS_H_
