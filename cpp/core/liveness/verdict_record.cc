#include "liveness/verdict_record.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "base/text.h"

namespace kdist {
namespace {

// The length of the UTF-8 sequence starting at `text[i]`, or 0 when it is not
// a valid one.
size_t Utf8Length(const std::string& text, size_t i) {
  const unsigned char c = static_cast<unsigned char>(text[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(text[i + k]) >> 6) != 0x2) return 0;
  }
  return n;
}

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
      ++i;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
      out += buffer;
      ++i;
    } else if (const size_t n = Utf8Length(text, i)) {
      out.append(text, i, n);
      i += n;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
  return out + "\"";
}

}  // namespace

const char* VerdictEventName(VerdictEvent event) {
  switch (event) {
    case VerdictEvent::kFailed: return "failed";
    case VerdictEvent::kPeerFailed: return "peer_failed";
    case VerdictEvent::kDied: return "died";
    case VerdictEvent::kUnreachable: return "unreachable";
    case VerdictEvent::kStopNow: return "stop_now";
    case VerdictEvent::kStopAt: return "stop_at";
    case VerdictEvent::kStalled: return "stalled";
  }
  return "unknown";
}

std::optional<VerdictEvent> VerdictEventOf(LiveKind kind) {
  switch (kind) {
    case LiveKind::kFailed: return VerdictEvent::kPeerFailed;
    case LiveKind::kDied: return VerdictEvent::kDied;
    case LiveKind::kUnreachable: return VerdictEvent::kUnreachable;
    case LiveKind::kStopNow: return VerdictEvent::kStopNow;
    case LiveKind::kStopAt: return VerdictEvent::kStopAt;
    case LiveKind::kJobStalled: return VerdictEvent::kStalled;
    default: return std::nullopt;
  }
}

std::string EncodeVerdictRecord(const VerdictRecord& r) {
  return "{\"event\": " + JsonString(VerdictEventName(r.event)) + ", \"process_id\": " +
         std::to_string(r.process_id) + ", \"host\": " + JsonString(r.host) +
         ", \"pid\": " + std::to_string(r.pid) + ", \"message\": " + JsonString(r.message) +
         ", \"step\": " + std::to_string(r.step) + ", \"exit_status\": " +
         std::to_string(r.exit_status) + ", \"reporter\": " + std::to_string(r.reporter) +
         ", \"line\": " + JsonString(r.line) + "}";
}

Status AppendVerdictRecord(const std::string& path, const VerdictRecord& record) {
  if (path.empty()) return Status::Ok();
  const std::string line = EncodeVerdictRecord(record) + "\n";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Unavailable("cannot open " + path + ": " + ErrorText(errno));
  const ssize_t n = write(fd, line.data(), line.size());
  const int error = errno;
  close(fd);
  if (n != static_cast<ssize_t>(line.size())) {
    return Unavailable("cannot write " + path + ": " + ErrorText(error));
  }
  return Status::Ok();
}

}  // namespace kdist
