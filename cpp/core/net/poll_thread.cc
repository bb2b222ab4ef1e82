#include "net/poll_thread.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace kdist {

Status PollThread::Start(std::string_view owner, std::function<void()> loop) {
  if (wake_read_.valid() || thread_.joinable()) {
    return FailedPrecondition("the poll thread was started before");
  }
  int fds[2];
  if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    return Internal("cannot create " + std::string(owner) + "'s wake pipe: " + ErrorText(errno));
  }
  wake_read_ = Fd(fds[0]);
  wake_write_ = Fd(fds[1]);
  thread_ = std::thread(std::move(loop));
  return Status::Ok();
}

void PollThread::Wake() {
  if (!wake_write_.valid()) return;
  const char byte = 1;
  [[maybe_unused]] ssize_t n = write(wake_write_.get(), &byte, 1);
}

void PollThread::DrainWake() {
  char buffer[64];
  while (read(wake_read_.get(), buffer, sizeof buffer) > 0) {
  }
}

bool PollThread::Stop() {
  if (stop_.exchange(true)) return false;
  Wake();
  if (thread_.joinable()) thread_.join();
  return true;
}

}  // namespace kdist
