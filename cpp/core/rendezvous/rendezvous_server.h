// The nodes' rendezvous's side: a listener on the rendezvous address and one
// thread that moves bytes between the agents and the book
// (rendezvous/rendezvous_book.h), which decides everything.
//
// Each accepted connection is sent a challenge at once; what it sends before it
// is admitted is bounded: at most kMaxNodeHelloFrameBytes buffered, one hello,
// within `hello_timeout`, and at most `max_unadmitted` such connections at a
// time (more are reset at accept). A connection that does not speak the
// protocol is reset without touching the book. Every reply is signed over the
// agent's nonce when the job has a token.
//
//   RendezvousServer server(options, clock, log);
//   KDIST_RETURN_IF_ERROR(server.Listen(endpoint));   // "checked by binding"
//   KDIST_RETURN_IF_ERROR(server.Start());            // its thread
//   ... server.Wait(timeout) ... / server.Stop();
//
// With a store that keeps the book (`--rendezvous etcd://...`): PersistWith(persist) and,
// on the machine that takes the book over, Restore(sealed) before Start. Then each change
// of the book's state is handed to `persist` (sealed: rendezvous/rendezvous_state.h) on
// the server's thread BEFORE the messages it caused are delivered; when `persist` fails
// (the store refused it: another machine holds the book now, or this one cannot reach a
// majority of the store) the server is fenced: it delivers nothing more, closes every
// connection and ends, its agents seeing the rendezvous lost. NodeGone(name) (any thread):
// the store says that node's agent is gone.
#ifndef KDIST_RENDEZVOUS_RENDEZVOUS_SERVER_H_
#define KDIST_RENDEZVOUS_RENDEZVOUS_SERVER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "base/wire.h"
#include "net/event_poller.h"
#include "net/poll_thread.h"
#include "net/keepalive.h"
#include "net/socket.h"
#include "rendezvous/rendezvous_book.h"

namespace kdist {

struct RendezvousServerOptions {
  RendezvousOptions book;
  Nanos progress_every = std::chrono::seconds(5);  // the waiting line, to the agents
  // Whether the waiting line also goes to the log (`kdist rendezvous serve`: yes; in an
  // agent: no, its own agent prints the line the agents get).
  bool log_progress = true;
  Nanos hello_timeout = std::chrono::seconds(10);  // a connection's time to send its hello
  // Connections accepted and not admitted yet, at most (more are reset at accept); sized to
  // the job by ServerOptionsFor (every agent may connect at once).
  int64_t max_unadmitted = 64;
  Nanos end_flush = std::chrono::seconds(5);  // after the end: time for the last frames to leave
  // After the end: how long it goes on answering `kdist status` (`kdist rendezvous serve
  // --linger`); joins are refused then, as after any end.
  Nanos linger = Nanos(0);
  // An agent's host that vanishes is lost after this long without an answer (keepalive).
  Nanos unreachable_timeout = kDefaultUnreachableTimeout;
};

class RendezvousServer {
 public:
  using Log = std::function<void(const std::string&)>;
  using Persist = std::function<Status(const std::string& sealed)>;

  // `clock` must outlive the server; `log` is called on the server's thread.
  RendezvousServer(RendezvousServerOptions options, Clock& clock, Log log);
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  // Binds `where` (no SO_REUSEPORT). kAlreadyExists when the port is taken,
  // kInvalidArgument / kUnavailable (EADDRNOTAVAIL: the address is not this
  // machine's) as ListenOn says.
  Status Listen(const Endpoint& where);
  uint16_t port() const { return port_; }
  // Starts the thread that serves until the book ends or Stop().
  Status Start();
  // Waits at most `timeout` for the job to end; true when it has.
  bool Wait(Nanos timeout);
  // Ends the thread (the agents see the rendezvous lost); idempotent.
  void Stop();
  // The rendezvous's own machine is leaving (any thread): while the job still gathers,
  // every agent is told, naming `why`, and the server ends; once it formed, nothing.
  void Abandon(std::string why);
  // Whether the job has formed (its first attempt started); any thread.
  bool formed() const { return formed_.load(); }
  // The job's run id (drawn at construction unless the options gave one).
  const std::string& run_id() const { return options_.book.run_id; }

  // Before Start: each change of the book's state goes to `persist` first (above).
  void PersistWith(Persist persist);
  // Before Start: the book goes on from a sealed state (RestoreBook's errors); the names
  // of its nodes, detached until their agents come back.
  Result<std::vector<std::string>> Restore(std::string_view sealed);
  // Any thread: node `name`'s agent is gone (its key in the store expired).
  void NodeGone(std::string name);
  // Whether a failed persist fenced this server.
  bool fenced() const;
  // Whether the job ended here (its book decided the end; not a Stop, not a fence).
  bool job_ended() const;

  // Any thread: the book's state as JSON (RendezvousBook::StatusJson), from the server's
  // thread within `timeout` (else the last one it made; after the end, the final one).
  std::string StatusJson(Nanos timeout);
  // Before Start: how long it answers `kdist status` after the job ended.
  void LingerAfterEnd(Nanos linger) { options_.linger = linger; }

  // After the end: the job's exit status and the attempts' table.
  int64_t exit_status() const;
  std::string AttemptTable() const;
  std::vector<AttemptRow> Attempts() const;

 private:
  struct Connection {
    Fd fd;
    Nonce challenge{};
    FrameAssembler in;
    std::string out;
    bool watching_write = false;  // as the poller was told
    Nanos accepted{0};
    bool admitted = false;
    bool closing = false;  // close once `out` is sent
    int64_t sequence = 0;  // the last reply's
    std::string peer;
    std::string local;
    Nonce agent_nonce{};
    bool knows_agent_nonce = false;
  };

  void Loop();
  void AcceptAll(Nanos now);
  void ReadFrom(uint64_t key, Nanos now);
  void HandleFrame(uint64_t key, const std::string& frame, Nanos now);
  // The book's decision: persisted when its state changed (with a store), then delivered.
  void Decided(const std::vector<NodeMessage>& messages, Nanos now);
  void Fence(const Status& why);
  void TakeGoneNodes(Nanos now);
  void Deliver(const std::vector<NodeMessage>& messages);
  void Flush(uint64_t key);
  void Drop(uint64_t key, Nanos now, bool tell_book);
  // Drops the connections that sent no hello within hello_timeout.
  void DropLate(Nanos now);
  // "attempt 3: 4096 nodes of 8 processes (node 0 a, 1 b, ...), coordinator ...".
  void LogRoster(const NodeReply& roster);

  RendezvousServerOptions options_;
  Clock& clock_;
  Log log_;
  RendezvousBook book_;
  Listener listener_;
  uint16_t port_ = 0;
  std::unique_ptr<EventPoller> poller_;
  PollThread thread_;
  std::map<uint64_t, Connection> connections_;
  uint64_t next_key_ = 2;  // 0: the listener, 1: the wake pipe
  std::atomic<bool> formed_{false};
  std::optional<std::string> abandon_;  // under mutex_: Abandon's reason, for the loop
  Persist persist_;
  std::string persisted_;  // the last state persisted (EncodeState's)
  std::vector<std::string> gone_;  // NodeGone's names, not yet taken (under mutex_)
  bool fenced_ = false;
  int64_t unadmitted_ = 0;  // connections not admitted (yet)
  // Connections as they were accepted (when, key), for the hello timeout.
  std::deque<std::pair<Nanos, uint64_t>> awaiting_hello_;
  mutable std::mutex mutex_;
  std::condition_variable ended_cv_;
  bool ended_ = false;
  bool job_ended_ = false;
  int64_t exit_status_ = 0;
  std::string table_;
  std::vector<AttemptRow> attempts_;
  // StatusJson's requests (under mutex_): asked, answered, and the last answer.
  uint64_t status_asked_ = 0;
  uint64_t status_served_ = 0;
  std::string status_;
  // Answers a pending StatusJson request on the server's thread.
  void ServeStatus(Nanos now);
};

}  // namespace kdist

#endif  // KDIST_RENDEZVOUS_RENDEZVOUS_SERVER_H_
