#include "roll_call/consistency.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "base/process_list.h"
#include "base/text.h"
#include "roll_call/own_id_arguments.h"

namespace kdist {
namespace {

constexpr std::string_view kNotSent = "(not sent)";
// Enough of each message for people; a longer table is cut, counted.
constexpr size_t kMaxLineChars = 900;

void PutU16(std::string& out, size_t value) {
  out += static_cast<char>((value >> 8) & 0xff);
  out += static_cast<char>(value & 0xff);
}

// "process 1 on host node-1", "processes 0, 2-3 on hosts node-[0,2-3]": one
// group, whatever the hosts (the table separates values with "; ").
std::string Holders(const std::vector<int64_t>& ids,
                    const std::function<std::string(int64_t)>& host_of) {
  std::vector<std::string> hosts;
  hosts.reserve(ids.size());
  for (int64_t id : ids) {
    if (std::string host = host_of(id); !host.empty()) hosts.push_back(std::move(host));
  }
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  std::string out = (ids.size() == 1 ? "process " : "processes ") + FormatIdList(ids, 300);
  if (!hosts.empty()) {
    out += (hosts.size() == 1 ? " on host " : " on hosts ") + FormatHostList(hosts, 300);
  }
  return out;
}

}  // namespace

Status ValidateFingerprint(const Fingerprint& fingerprint) {
  if (fingerprint.size() > kMaxFingerprintEntries) {
    return InvalidArgument("the environment fingerprint has " + std::to_string(fingerprint.size()) +
                           " entries; at most " + std::to_string(kMaxFingerprintEntries));
  }
  for (const FingerprintEntry& e : fingerprint) {
    if (e.name.empty() || e.name.size() > kMaxFingerprintName) {
      return InvalidArgument("fingerprint entry name " + Quote(e.name) + " is empty or longer than " +
                             std::to_string(kMaxFingerprintName) + " bytes");
    }
    if (e.value.size() > kMaxFingerprintValue) {
      return InvalidArgument("fingerprint entry " + Quote(e.name) + " has a value of " +
                             std::to_string(e.value.size()) + " bytes; at most " +
                             std::to_string(kMaxFingerprintValue));
    }
  }
  return Status::Ok();
}

std::string EncodeFingerprint(const Fingerprint& fingerprint) {
  std::string out;
  for (const FingerprintEntry& e : fingerprint) {
    out += static_cast<char>(std::min(e.name.size(), kMaxFingerprintName));
    out.append(e.name, 0, kMaxFingerprintName);
    const size_t size = std::min(e.value.size(), kMaxFingerprintValue);
    PutU16(out, size);
    out.append(e.value, 0, size);
  }
  return out;
}

Result<Fingerprint> DecodeFingerprint(std::string_view bytes) {
  Fingerprint out;
  size_t at = 0;
  while (at < bytes.size()) {
    if (out.size() == kMaxFingerprintEntries) {
      return InvalidArgument("the environment fingerprint has more than " +
                             std::to_string(kMaxFingerprintEntries) + " entries");
    }
    const size_t name_size = static_cast<uint8_t>(bytes[at++]);
    if (name_size == 0 || name_size > kMaxFingerprintName || bytes.size() - at < name_size + 2) {
      return InvalidArgument("the environment fingerprint is malformed at byte " +
                             std::to_string(at - 1));
    }
    FingerprintEntry entry;
    entry.name = std::string(bytes.substr(at, name_size));
    at += name_size;
    const size_t value_size = (static_cast<size_t>(static_cast<uint8_t>(bytes[at])) << 8) |
                              static_cast<uint8_t>(bytes[at + 1]);
    at += 2;
    if (value_size > kMaxFingerprintValue || bytes.size() - at < value_size) {
      return InvalidArgument("the environment fingerprint's entry " + Quote(entry.name) +
                             " is malformed");
    }
    entry.value = std::string(bytes.substr(at, value_size));
    at += value_size;
    for (const FingerprintEntry& seen : out) {
      if (seen.name == entry.name) {
        return InvalidArgument("the environment fingerprint names " + Quote(entry.name) + " twice");
      }
    }
    out.push_back(std::move(entry));
  }
  return out;
}

ConsistencyCheck::ConsistencyCheck(Fingerprint own, ConsistencyPolicy policy)
    : own_(std::move(own)), policy_(policy), others_(own_.size()) {}

std::vector<std::string> ConsistencyCheck::Compared() const {
  std::vector<std::string> names;
  if (policy_ == ConsistencyPolicy::kOff) return names;
  for (const FingerprintEntry& e : own_) names.push_back(e.name);
  return names;
}

std::string ConsistencyCheck::Line(size_t entry,
                                   const std::function<std::string(int64_t)>& host_of) const {
  const auto& differing = others_[entry];
  // Process 0's value: process 0 and every recorded process not listed as differing.
  std::vector<int64_t> same{0};
  {
    std::vector<int64_t> other_ids;
    for (const auto& [value, ids] : differing) other_ids.insert(other_ids.end(), ids.begin(), ids.end());
    std::sort(other_ids.begin(), other_ids.end());
    for (int64_t id : recorded_) {
      if (!std::binary_search(other_ids.begin(), other_ids.end(), id)) same.push_back(id);
    }
  }
  std::string line = own_[entry].name + ": " + Quote(own_[entry].value, 120) + " in " +
                     Holders(same, host_of);
  for (const auto& [value, ids] : differing) {
    line += "; " + (value == kNotSent ? std::string(kNotSent) : Quote(value, 120)) + " in " +
            Holders(ids, host_of);
    if (line.size() > kMaxLineChars) break;
  }
  return line;
}

Status ConsistencyCheck::Add(int64_t id, const Fingerprint& theirs,
                             const std::function<std::string(int64_t)>& host_of) {
  if (policy_ == ConsistencyPolicy::kOff) return Status::Ok();
  recorded_.push_back(id);
  std::vector<size_t> fatal;
  for (size_t i = 0; i < own_.size(); ++i) {
    const FingerprintEntry* match = nullptr;
    for (const FingerprintEntry& e : theirs) {
      if (e.name == own_[i].name) {
        match = &e;
        break;
      }
    }
    const std::string value = match ? match->value : std::string(kNotSent);
    if (value == own_[i].value) continue;
    if (own_[i].name == kArgumentsEntry && DifferOnlyByOwnIds(own_[i].value, 0, value, id)) {
      continue;  // each process's own id in its arguments: how a job's processes differ
    }
    others_[i][value].push_back(id);
    if (own_[i].must_match || policy_ == ConsistencyPolicy::kStrict) fatal.push_back(i);
  }
  if (fatal.empty()) return Status::Ok();
  std::string table;
  bool needs_match = false;
  bool tls = false;  // the TLS of JAX's service differs: another remedy
  bool other = false;
  for (size_t i : fatal) {
    if (!table.empty()) table += "\n  ";
    table += Line(i, host_of);
    needs_match = needs_match || own_[i].must_match;
    if (own_[i].name == kTlsEntry) {
      tls = true;
    } else if (own_[i].must_match) {
      other = true;
    }
  }
  std::string remedy;
  if (other || (needs_match && !tls)) {
    remedy = "Install the same jax and jaxlib, and give every process the same kind and number "
             "of devices, on every host";
  }
  if (tls) {
    remedy += std::string(remedy.empty() ? "" : "; ") +
              "Give every process the same TLS for JAX's coordination service: the same "
              "KDIST_TLS, the job's token (KDIST_ROLL_CALL_TOKEN) and jax_mtls_* settings "
              "everywhere, and the cryptography package (kdist[tls]) on every host";
  }
  if (!needs_match) {
    remedy = "Make the hosts' environments match, or set KDIST_CONSISTENCY=warn to start "
             "with a warning";
  }
  return FailedPrecondition(
      std::string("the processes cannot work together") +
      (needs_match ? "" : " under KDIST_CONSISTENCY=strict") + ":\n  " + table + "\n" +
      remedy + "; `kdist doctor` on each host shows its fingerprint");
}

void ConsistencyCheck::Remove(int64_t id) {
  const auto it = std::find(recorded_.begin(), recorded_.end(), id);
  if (it == recorded_.end()) return;
  recorded_.erase(it);
  for (auto& by_value : others_) {
    for (auto value = by_value.begin(); value != by_value.end();) {
      auto& ids = value->second;
      ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
      value = ids.empty() ? by_value.erase(value) : std::next(value);
    }
  }
}

std::string ConsistencyCheck::Differences(
    const std::function<std::string(int64_t)>& host_of) const {
  std::string out;
  for (size_t i = 0; i < own_.size(); ++i) {
    if (others_[i].empty()) continue;
    if (!out.empty()) out += "\n";
    out += Line(i, host_of);
  }
  return out;
}

}  // namespace kdist
