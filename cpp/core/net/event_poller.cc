#include "net/event_poller.h"

#include <sys/epoll.h>

#include <cerrno>

namespace kdist {
namespace {

epoll_event Interest(uint64_t key, bool want_write) {
  epoll_event event{};
  event.events = EPOLLIN | EPOLLRDHUP | (want_write ? EPOLLOUT : 0u);
  event.data.u64 = key;
  return event;
}

}  // namespace

Result<EventPoller> EventPoller::Create() {
  const int fd = epoll_create1(EPOLL_CLOEXEC);
  if (fd < 0) return Internal("epoll_create1 failed: " + ErrorText(errno));
  return EventPoller(Fd(fd));
}

Status EventPoller::Add(int fd, uint64_t key, bool want_write) {
  epoll_event event = Interest(key, want_write);
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event) != 0) {
    return Internal("epoll_ctl(ADD) failed: " + ErrorText(errno));
  }
  return Status::Ok();
}

Status EventPoller::WatchWrite(int fd, uint64_t key, bool want_write) {
  epoll_event event = Interest(key, want_write);
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &event) != 0) {
    return Internal("epoll_ctl(MOD) failed: " + ErrorText(errno));
  }
  return Status::Ok();
}

void EventPoller::Remove(int fd) {
  epoll_event unused{};
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, &unused);  // gone already: nothing to do
}

Result<std::vector<EventPoller::Event>> EventPoller::Wait(Nanos timeout) {
  int64_t ms = 0;
  if (timeout.count() > 0) ms = (timeout.count() + 999999) / 1000000;
  if (ms > 60000) ms = 60000;
  epoll_event ready[kMaxEvents];
  const int n = epoll_wait(epoll_.get(), ready, kMaxEvents, static_cast<int>(ms));
  std::vector<Event> events;
  if (n < 0) {
    if (errno == EINTR) return events;
    return Internal("epoll_wait failed: " + ErrorText(errno));
  }
  events.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const uint32_t flags = ready[i].events;
    Event event;
    event.key = ready[i].data.u64;
    event.readable = (flags & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
    event.writable = (flags & EPOLLOUT) != 0;
    events.push_back(event);
  }
  return events;
}

}  // namespace kdist
