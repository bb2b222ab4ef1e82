#include "net/dns.h"

#include <netdb.h>
#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>

#include "base/deadline.h"
#include "base/text.h"

namespace kdist {
namespace {

struct PendingLookup {
  std::string host;
  std::string service;
  int flags = 0;
  LookupFunction function = nullptr;
  std::mutex mutex;
  std::condition_variable answered;
  bool done = false;
  int code = 0;
  int error = 0;  // errno for EAI_SYSTEM
  std::vector<Endpoint> endpoints;
};

// getaddrinfo into `lookup`; safe to call from any thread.
void RunLookup(PendingLookup& lookup) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  hints.ai_flags = lookup.flags | AI_NUMERICSERV;
  addrinfo* list = nullptr;
  const int code = lookup.function(lookup.host.c_str(), lookup.service.c_str(), &hints, &list);
  const int error = errno;
  std::vector<Endpoint> endpoints;
  if (code == 0) {
    for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
      if (ai->ai_addrlen > sizeof(sockaddr_storage)) continue;
      if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
      Endpoint endpoint;
      std::memcpy(&endpoint.storage, ai->ai_addr, ai->ai_addrlen);
      endpoint.size = ai->ai_addrlen;
      endpoints.push_back(endpoint);
    }
    freeaddrinfo(list);
  }
  std::lock_guard<std::mutex> lock(lookup.mutex);
  lookup.code = code;
  lookup.error = error;
  lookup.endpoints = std::move(endpoints);
  lookup.done = true;
  lookup.answered.notify_all();
}

void* LookupThread(void* arg) {
  pthread_setname_np(pthread_self(), "kdist-resolve");  // visible in /proc/PID/task/*/comm
  // The thread owns one reference for as long as it runs.
  std::unique_ptr<std::shared_ptr<PendingLookup>> owned(
      static_cast<std::shared_ptr<PendingLookup>*>(arg));
  RunLookup(**owned);
  return nullptr;
}

Result<std::vector<Endpoint>> Answer(const Address& address, PendingLookup& lookup) {
  if (lookup.code != 0) {
    const std::string why =
        lookup.code == EAI_SYSTEM ? ErrorText(lookup.error) : std::string(gai_strerror(lookup.code));
    return Unavailable("cannot resolve " + Quote(address.host) + ": " + Lower(why));
  }
  if (lookup.endpoints.empty()) {
    return Unavailable("cannot resolve " + Quote(address.host) + ": no IPv4 or IPv6 address");
  }
  return lookup.endpoints;
}

}  // namespace

Result<std::vector<Endpoint>> ResolveEndpoints(const Address& address, Waiter& waiter,
                                               const std::function<std::string()>& line) {
  return ResolveEndpointsWith(address, waiter, line, &getaddrinfo);
}

Result<std::vector<Endpoint>> ResolveEndpointsWith(const Address& address, Waiter& waiter,
                                                   const std::function<std::string()>& line,
                                                   LookupFunction function) {
  auto lookup = std::make_shared<PendingLookup>();
  lookup->function = function;
  lookup->host = address.host;
  lookup->service = std::to_string(address.port);
  if (address.kind != HostKind::kName) {
    lookup->flags = AI_NUMERICHOST;  // no lookup: answers at once
    RunLookup(*lookup);
    return Answer(address, *lookup);
  }

  // Signals stay with the caller's threads: block them all in the helper.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  auto* reference = new std::shared_ptr<PendingLookup>(lookup);
  pthread_t thread;
  const int created = pthread_create(&thread, nullptr, &LookupThread, reference);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (created != 0) {
    delete reference;
    return Internal("cannot start a thread to resolve " + Quote(address.host) + ": " +
                    ErrorText(created));
  }

  Status stopped;
  bool done = false;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(lookup->mutex);
      const Nanos slice = waiter.Slice(std::chrono::milliseconds(100));
      lookup->answered.wait_for(lock, slice, [&] { return lookup->done; });
      done = lookup->done;
    }
    if (done || waiter.Expired()) break;
    stopped = waiter.Check(line);
    if (!stopped.ok()) break;
  }
  if (!done) {
    pthread_detach(thread);  // it ends when the system resolver gives up
    if (!stopped.ok()) return stopped;
    return DeadlineExceeded("resolving " + Quote(address.host) + " did not finish within " +
                            FormatElapsed(waiter.Elapsed()) +
                            "; the system resolver (see /etc/resolv.conf) is not answering");
  }
  pthread_join(thread, nullptr);
  return Answer(address, *lookup);
}

}  // namespace kdist
