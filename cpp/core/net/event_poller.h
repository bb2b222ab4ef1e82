// Readiness of many sockets at once, by epoll: the cost of a wait grows with
// the sockets that are ready, not with the sockets that are open, so process 0
// can hold a connection from each of 16,384 processes.
//
// Level-triggered: a socket stays ready until it is drained, so a caller that
// stops reading early (a bounded read per round) is woken again. Each socket is
// registered under a key of the caller's (the listener's and the connections'
// ids), and asks for writability only while it has bytes queued.
#ifndef KDIST_NET_EVENT_POLLER_H_
#define KDIST_NET_EVENT_POLLER_H_

#include <cstdint>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "net/socket.h"

namespace kdist {

class EventPoller {
 public:
  struct Event {
    uint64_t key = 0;
    bool readable = false;  // data, EOF, a pending connection, or an error to read
    bool writable = false;
  };

  // kInternal when the kernel refuses an epoll instance (out of descriptors).
  static Result<EventPoller> Create();

  // Registers `fd` under `key`; it is watched for reading, and for writing when
  // `want_write`. kInternal names the errno (EMFILE, ENOMEM, ...).
  Status Add(int fd, uint64_t key, bool want_write);
  // Changes whether `fd` (registered under `key`) is watched for writing.
  Status WatchWrite(int fd, uint64_t key, bool want_write);
  // Stops watching `fd`. Call before closing it.
  void Remove(int fd);

  // Waits at most `timeout` (rounded up to whole milliseconds, capped at 60 s)
  // and returns the ready sockets, at most kMaxEvents per call; none on
  // timeout or EINTR. kInternal when epoll_wait fails.
  Result<std::vector<Event>> Wait(Nanos timeout);

  static constexpr int kMaxEvents = 1024;

 private:
  explicit EventPoller(Fd epoll) : epoll_(std::move(epoll)) {}
  Fd epoll_;
};

}  // namespace kdist

#endif  // KDIST_NET_EVENT_POLLER_H_
