#include "roll_call/roll_call.h"

#include <algorithm>

#include "base/process_list.h"
#include "base/text.h"
#include "roll_call/roll_call_options.h"

namespace kdist {
namespace {

constexpr size_t kMaxNotes = 5;

// "from KERAS_DISTRIBUTION_NUM_PROCESSES", "from argument".
std::string From(std::string_view source) {
  if (source.empty()) return "";
  return " (from " + SafeText(source) + ")";
}

std::string Ids(int64_t n) { return "[0, " + std::to_string(n) + ")"; }

}  // namespace

std::string DescribeProcess(const Hello& hello) {
  return "process " + std::to_string(hello.process_id) + " (host " + SafeText(hello.host) +
         ", pid " + std::to_string(hello.pid) + ")";
}

RollCall::RollCall(Hello own, Fingerprint fingerprint, ConsistencyPolicy consistency,
                   std::vector<std::string> process_hosts)
    : own_(std::move(own)),
      consistency_(std::move(fingerprint), consistency),
      process_hosts_(std::move(process_hosts)) {}

std::string RollCall::MissingText() const {
  const std::vector<int64_t> missing = MissingIds();
  std::string text = "missing process ids [" + FormatIdList(missing) + "]";
  std::vector<std::string> hosts;
  for (int64_t id : missing) {
    if (id < static_cast<int64_t>(process_hosts_.size()) && !process_hosts_[id].empty()) {
      hosts.push_back(process_hosts_[id]);
    }
  }
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  if (!hosts.empty()) {
    text += (hosts.size() == 1 ? " on host " : " on hosts ") + FormatHostList(hosts);
  }
  return text;
}

std::string RollCall::HostOf(int64_t process_id) const {
  if (process_id == own_.process_id) return own_.host;
  const auto it = members_.find(process_id);
  return it == members_.end() ? std::string() : it->second.hello.host;
}

std::string RollCall::ConsistencyNotes() const {
  return consistency_.Differences([this](int64_t id) { return HostOf(id); });
}

std::string RollCall::Self() const {
  return "process 0 (host " + SafeText(own_.host) + ", pid " + std::to_string(own_.pid) + ")";
}

std::optional<RollCall::Verdict> RollCall::TokenRefusal(const std::string& who,
                                                        const Hello& hello,
                                                        const Arrival& arrival) {
  if (own_.token.empty() && hello.mac.empty()) return std::nullopt;
  const bool proven = !own_.token.empty() && !hello.mac.empty() && !arrival.mac_input.empty() &&
                      MacEqual(FrameMac(own_.token, arrival.nonce, arrival.mac_input), hello.mac);
  if (proven) return std::nullopt;
  std::string why;
  if (own_.token.empty()) {
    why = "it has a KDIST_ROLL_CALL_TOKEN (its hello carries a MAC) but " + Self() +
          " has none set";
  } else if (hello.mac.empty()) {
    why = "it sent no KDIST_ROLL_CALL_TOKEN proof (its hello carries no MAC) but " + Self() +
          " requires one";
  } else {
    why = "its KDIST_ROLL_CALL_TOKEN does not match the one of " + Self() +
          " (its hello's MAC does not verify against the challenge process 0 sent on its "
          "connection)";
  }
  const std::string note = "refused " + who + ": wrong KDIST_ROLL_CALL_TOKEN";
  if (notes_.size() < kMaxNotes) notes_.push_back(note); else ++unnoted_;
  return Verdict{Outcome::kRefused,
                 FailedPrecondition("the roll call refused " + who + ": " + why +
                                    "; set the same KDIST_ROLL_CALL_TOKEN in every process of the "
                                    "job, or in none")};
}

std::optional<RollCall::Verdict> RollCall::SettingDisagreement(const std::string& who,
                                                               const Hello& hello) const {
  if (hello.num_processes != own_.num_processes) {
    return Verdict{Outcome::kFailed,
                   FailedPrecondition(
                       "the processes disagree on num_processes: " + who + " has num_processes=" +
                       std::to_string(hello.num_processes) + From(hello.num_processes_source) +
                       " but " + Self() + " has num_processes=" +
                       std::to_string(own_.num_processes) + From(own_.num_processes_source) +
                       "; start every process of the job with the same num_processes")};
  }
  if (hello.coordinator != own_.coordinator) {
    return Verdict{Outcome::kFailed,
                   FailedPrecondition(
                       "the processes disagree on the coordinator address: " + who + " has " +
                       SafeText(hello.coordinator, "._-:[]%") + From(hello.coordinator_source) +
                       " but " + Self() + " has " + SafeText(own_.coordinator, "._-:[]%") +
                       From(own_.coordinator_source) +
                       "; give every process the same coordinator address (the first of the "
                       "job addresses), written the same way")};
  }
  if (hello.fingerprint != own_.fingerprint) {
    return Verdict{Outcome::kFailed,
                   FailedPrecondition("the processes were configured differently: " + who +
                                      " has configuration fingerprint " +
                                      SafeText(hello.fingerprint) + " but " + Self() + " has " +
                                      SafeText(own_.fingerprint) +
                                      "; check that every process runs the same kdist version "
                                      "with the same job settings (KDIST_HEARTBEAT_TIMEOUT and "
                                      "KDIST_SHUTDOWN_TIMEOUT included)")};
  }
  return std::nullopt;
}

std::optional<RollCall::Verdict> RollCall::IdConflict(uint64_t connection, const std::string& who,
                                                      const Hello& hello) const {
  if (hello.process_id < 0 || hello.process_id >= own_.num_processes) {
    return Verdict{Outcome::kFailed,
                   FailedPrecondition("process id " + std::to_string(hello.process_id) + " of " +
                                      who + " is outside " + Ids(own_.num_processes) +
                                      " for num_processes=" + std::to_string(own_.num_processes) +
                                      "; give every process its own id in that range")};
  }
  const std::string fix = "; give every process its own id in " + Ids(own_.num_processes) +
                          " (process_id= or KERAS_DISTRIBUTION_PROCESS_ID)";
  if (hello.process_id == own_.process_id) {
    return Verdict{Outcome::kFailed,
                   FailedPrecondition("process id " + std::to_string(hello.process_id) +
                                      " is claimed twice: by " + Self() +
                                      ", the coordinator, and by the process on host " +
                                      SafeText(hello.host) + ", pid " +
                                      std::to_string(hello.pid) + fix)};
  }
  const auto present = members_.find(hello.process_id);
  if (present == members_.end() || present->second.connection == connection) return std::nullopt;
  const Hello& first = present->second.hello;
  return Verdict{Outcome::kFailed,
                 FailedPrecondition("process id " + std::to_string(hello.process_id) +
                                    " is claimed twice: by the process on host " +
                                    SafeText(first.host) + ", pid " + std::to_string(first.pid) +
                                    ", and by the process on host " + SafeText(hello.host) +
                                    ", pid " + std::to_string(hello.pid) + fix)};
}

RollCall::Verdict RollCall::Offer(uint64_t connection, const Hello& hello,
                                  const Arrival& arrival) {
  const std::string who = DescribeProcess(hello);
  if (std::optional<Verdict> no = TokenRefusal(who, hello, arrival)) return *no;
  if (std::optional<Verdict> no = SettingDisagreement(who, hello)) return *no;
  if (std::optional<Verdict> no = IdConflict(connection, who, hello)) return *no;
  Result<Fingerprint> environment = DecodeFingerprint(hello.environment);
  if (!environment.ok()) {
    return {Outcome::kRefused,
            InvalidArgument(Self() + " refused the hello of " + who + ": " +
                            environment.status().message() + "; install the same kdist version")};
  }
  // A connection offers one hello; a second one from it replaces the first.
  Leave(connection);
  members_[hello.process_id] = Member{connection, hello};
  by_connection_[connection] = hello.process_id;
  if (Status consistent = consistency_.Add(hello.process_id, *environment,
                                           [this](int64_t id) { return HostOf(id); });
      !consistent.ok()) {
    return {Outcome::kFailed, std::move(consistent)};
  }
  return {Outcome::kJoined, Status::Ok()};
}

std::optional<int64_t> RollCall::Leave(uint64_t connection) {
  const auto it = by_connection_.find(connection);
  if (it == by_connection_.end()) return std::nullopt;
  const int64_t id = it->second;
  by_connection_.erase(it);
  members_.erase(id);
  consistency_.Remove(id);
  return id;
}

std::optional<uint64_t> RollCall::ConnectionOf(int64_t process_id) const {
  const auto it = members_.find(process_id);
  if (it == members_.end()) return std::nullopt;
  return it->second.connection;
}

std::vector<int64_t> RollCall::MissingIds() const {
  std::vector<int64_t> missing;
  for (int64_t id = 0; id < own_.num_processes; ++id) {
    if (id != own_.process_id && members_.find(id) == members_.end()) missing.push_back(id);
  }
  return missing;
}

void RollCall::NoteDropped(const std::string& reason) {
  ++dropped_;
  if (notes_.size() < kMaxNotes) notes_.push_back("dropped a connection: " + reason);
  else ++unnoted_;
}

std::string RollCall::Notes() const {
  if (notes_.empty()) return "";
  std::string out = " Also: " + Join(notes_, "; ");
  if (unnoted_ > 0) out += "; and " + std::to_string(unnoted_) + " more";
  return out + ".";
}

std::string RollCall::ProgressLine(const std::string& times) const {
  std::string line = std::to_string(joined()) + " of " + std::to_string(own_.num_processes) +
                     " processes joined; " + MissingText() + "; " + times;
  if (dropped_ > 0) {
    line += "; dropped " + std::to_string(dropped_) + " connection" + (dropped_ == 1 ? "" : "s") +
            " that did not speak the kdist protocol";
  }
  return line;
}

std::string RollCall::JoinedLine(const std::string& times) const {
  return std::to_string(joined()) + " of " + std::to_string(own_.num_processes) +
         " processes joined; " + times;
}

Status RollCall::TimedOut(const std::string& timeout_text, const std::string& where) const {
  return DeadlineExceeded(
      "the roll call timed out after " + timeout_text + " with " + std::to_string(joined()) +
      " of " + std::to_string(own_.num_processes) + " joined; " + MissingText() + ". " + Self() +
      " waited on " + where +
      " for them; check that those processes were started with their process ids, the same "
      "coordinator address " + SafeText(own_.coordinator, "._-:[]%") +
      " and num_processes, and that they can reach this host on that port (raise timeout= or "
      "KDIST_INIT_TIMEOUT if they start slowly)." + Notes());
}

}  // namespace kdist
