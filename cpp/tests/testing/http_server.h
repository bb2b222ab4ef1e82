// A small HTTP server on loopback for the tests of net/http_get and
// config/clusters/gce_metadata: one thread, one connection at a time; it records
// every request and answers each path as told (or holds the connection without a
// word, for the tests of a server that never answers).
#ifndef KDIST_TESTING_HTTP_SERVER_H_
#define KDIST_TESTING_HTTP_SERVER_H_

#include <poll.h>

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/socket.h"

namespace kdist::testing {

using Replies = std::map<std::string, std::string>;

class HttpServer {
 public:
  // `replies`: path -> the whole reply's bytes; a path not there gets a 404;
  // `silent`: accept and read, but never answer (until the server is destroyed).
  explicit HttpServer(std::map<std::string, std::string> replies, bool silent = false)
      : replies_(std::move(replies)), silent_(silent) {
    Result<Endpoint> any = EndpointFromLiteral("127.0.0.1", 0);
    Result<Listener> listener = ListenOn(*any, 16);
    port_ = listener->port;
    listener_ = std::move(listener->fd);
    thread_ = std::thread([this] { Serve(); });
  }
  ~HttpServer() {
    stop_ = true;
    thread_.join();
  }
  uint16_t port() const { return port_; }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }

  static std::string Ok(const std::string& body) {
    return "HTTP/1.0 200 OK\r\nMetadata-Flavor: Google\r\nContent-Type: text/plain\r\n"
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  }

 private:
  void Serve() {
    std::vector<Fd> held;
    while (!stop_) {
      std::vector<pollfd> fds{{listener_.get(), POLLIN, 0}};
      if (Poll(fds, std::chrono::milliseconds(20)) <= 0) continue;
      Accepted accepted = AcceptOne(listener_.get());
      if (accepted.io.state != IoState::kDone) continue;
      std::string request;
      char buffer[4096];
      while (!stop_ && request.find("\r\n\r\n") == std::string::npos) {
        std::vector<pollfd> in{{accepted.fd.get(), POLLIN, 0}};
        if (Poll(in, std::chrono::milliseconds(20)) <= 0) continue;
        const Io io = ReadSome(accepted.fd.get(), buffer, sizeof buffer);
        if (io.state == IoState::kDone) request.append(buffer, io.bytes);
        if (io.state == IoState::kEof || io.state == IoState::kError) break;
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        requests_.push_back(request);
      }
      if (silent_) {
        held.push_back(std::move(accepted.fd));
        continue;
      }
      const size_t space = request.find(' ');
      const std::string path =
          request.substr(space + 1, request.find(' ', space + 1) - space - 1);
      const auto it = replies_.find(path);
      std::string reply = it != replies_.end()
                              ? it->second
                              : "HTTP/1.0 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found";
      std::string_view left = reply;
      while (!left.empty() && !stop_) {
        const Io io = WriteSome(accepted.fd.get(), left);
        if (io.state == IoState::kDone) left.remove_prefix(io.bytes);
        if (io.state == IoState::kError) break;
      }
    }
  }

  std::map<std::string, std::string> replies_;
  bool silent_;
  uint16_t port_ = 0;
  Fd listener_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

}  // namespace kdist::testing

#endif  // KDIST_TESTING_HTTP_SERVER_H_
