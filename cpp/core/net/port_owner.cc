#include "net/port_owner.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <set>

#include "base/text.h"

namespace kdist {
namespace {

constexpr size_t kMaxProcFileBytes = size_t{64} << 20;

template <typename T>
bool ParseHex(std::string_view text, T& out) {
  if (text.empty()) return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out, 16);
  return ec == std::errc() && ptr == text.data() + text.size();
}

template <typename T>
bool ParseDecimal(std::string_view text, T& out) {
  if (text.empty()) return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out, 10);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// The kernel prints each 32-bit word of the address with %08X as a native
// integer; reading the words back the same way restores the bytes.
bool ParseHexAddress(std::string_view hex, std::string& out) {
  if (hex.size() != 8 && hex.size() != 32) return false;
  unsigned char bytes[16];
  for (size_t word = 0; word < hex.size() / 8; ++word) {
    uint32_t value = 0;
    if (!ParseHex(hex.substr(word * 8, 8), value)) return false;
    std::memcpy(bytes + word * 4, &value, 4);
  }
  char text[INET6_ADDRSTRLEN] = {};
  const int family = hex.size() == 8 ? AF_INET : AF_INET6;
  if (inet_ntop(family, bytes, text, sizeof text) == nullptr) return false;
  out = text;
  return true;
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

std::optional<std::string> ReadSmallFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buffer[65536];
  while (out.size() < kMaxProcFileBytes) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

bool AllDigits(const char* name) {
  if (*name == '\0') return false;
  for (; *name; ++name) {
    if (*name < '0' || *name > '9') return false;
  }
  return true;
}

}  // namespace

std::vector<TcpSocketEntry> ParseProcNetTcp(std::string_view text) {
  std::vector<TcpSocketEntry> entries;
  for (std::string_view line : Split(text, '\n')) {
    const std::vector<std::string_view> f = Fields(line);
    // sl local rem st queues tr retrnsmt uid timeout inode ...
    if (f.size() < 10 || f[0].empty() || f[0].back() != ':') continue;
    const size_t colon = f[1].find(':');
    if (colon == std::string_view::npos) continue;
    TcpSocketEntry entry;
    uint32_t port = 0;
    if (!ParseHexAddress(f[1].substr(0, colon), entry.local_address)) continue;
    if (!ParseHex(f[1].substr(colon + 1), port) || port > 65535) continue;
    entry.local_port = static_cast<uint16_t>(port);
    if (!ParseHex(f[3], entry.state)) continue;
    if (!ParseDecimal(f[7], entry.uid)) continue;
    if (!ParseDecimal(f[9], entry.inode)) continue;
    entries.push_back(entry);
  }
  return entries;
}

std::optional<uint64_t> ParseSocketLink(std::string_view link) {
  constexpr std::string_view kPrefix = "socket:[";
  if (link.size() <= kPrefix.size() + 1 || link.substr(0, kPrefix.size()) != kPrefix ||
      link.back() != ']') {
    return std::nullopt;
  }
  uint64_t inode = 0;
  if (!ParseDecimal(link.substr(kPrefix.size(), link.size() - kPrefix.size() - 1), inode)) {
    return std::nullopt;
  }
  return inode;
}

std::optional<PortOwner> FindPortOwner(uint16_t port, Clock& clock, Nanos budget,
                                       const std::string& proc_root) {
  const Nanos deadline = clock.Now() + budget;
  std::optional<PortOwner> owner;
  std::set<uint64_t> inodes;
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    const std::optional<std::string> text = ReadSmallFile(proc_root + table);
    if (!text) continue;
    for (const TcpSocketEntry& e : ParseProcNetTcp(*text)) {
      if (e.state != kTcpListen || e.local_port != port) continue;
      if (!owner) {
        owner = PortOwner{};
        const bool v6 = e.local_address.find(':') != std::string::npos;
        owner->listening_on = (v6 ? "[" + e.local_address + "]" : e.local_address) + ":" +
                              std::to_string(port);
        owner->uid = e.uid;
      }
      if (e.inode != 0) inodes.insert(e.inode);
    }
  }
  if (!owner || inodes.empty()) return owner;

  DIR* proc = opendir(proc_root.c_str());
  if (proc == nullptr) return owner;
  // Bounded twice: by the budget and by the number of links read.
  int64_t links_left = 1000000;
  while (dirent* entry = readdir(proc)) {
    if (!AllDigits(entry->d_name)) continue;
    if (clock.Now() > deadline || links_left <= 0) break;
    const std::string fd_dir = proc_root + "/" + entry->d_name + "/fd";
    DIR* fds = opendir(fd_dir.c_str());
    if (fds == nullptr) continue;  // another user's process, or gone
    bool found = false;
    while (dirent* fd = readdir(fds)) {
      if (fd->d_name[0] == '.') continue;
      if (--links_left <= 0) break;
      char target[64];
      const ssize_t n = readlink((fd_dir + "/" + fd->d_name).c_str(), target, sizeof target);
      if (n <= 0 || static_cast<size_t>(n) >= sizeof target) continue;
      const std::optional<uint64_t> inode = ParseSocketLink(std::string_view(target, n));
      if (inode && inodes.count(*inode)) {
        found = true;
        break;
      }
    }
    closedir(fds);
    if (found) {
      ParseDecimal(std::string_view(entry->d_name), owner->pid);
      if (auto comm = ReadSmallFile(proc_root + "/" + entry->d_name + "/comm")) {
        owner->command = std::string(Trim(*comm));
      }
      break;
    }
  }
  closedir(proc);
  return owner;
}

std::string DescribePortOwner(const std::optional<PortOwner>& owner) {
  if (!owner) return "";
  if (owner->pid > 0) {
    std::string out = "held by pid " + std::to_string(owner->pid);
    if (!owner->command.empty()) out += " (" + Quote(owner->command, 64) + ")";
    return out + ", listening on " + owner->listening_on;
  }
  return "held by a process of uid " + std::to_string(owner->uid) +
         " that this user cannot inspect, listening on " + owner->listening_on;
}

}  // namespace kdist
