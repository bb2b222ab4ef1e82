// The book's whole state in JSON (nlohmann-json, as config/clusters/tf_config.cc reads
// TF_CONFIG), and restored from it: everything the book decides from, its ledger
// included. Times are offsets from the book's origin, in nanoseconds; the connections
// are not saved (a restored book's nodes are detached: rendezvous_takeover.cc), nor its
// agents' nonces. Text that is not UTF-8 is saved with U+FFFD in place of the bad bytes.
#include "rendezvous/rendezvous_state.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "base/hmac_sha256.h"
#include "base/scalars.h"
#include "base/text.h"

namespace kdist {
namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kStateVersion = 1;
constexpr std::string_view kSealMagic = "kdist-book 1 ";
constexpr std::string_view kNoTokenKey = "kdist rendezvous book (no token)";
constexpr int64_t kMaxGapMillis = 3600 * 1000;  // a restore counts at most an hour since the save

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

Result<std::string> BytesOfHex(std::string_view hex, std::string_view what) {
  if (hex.size() % 2 != 0) return InvalidArgument(std::string(what) + " is not hex");
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int high = HexDigit(hex[i]);
    const int low = HexDigit(hex[i + 1]);
    if (high < 0 || low < 0) return InvalidArgument(std::string(what) + " is not hex");
    out.push_back(static_cast<char>(high * 16 + low));
  }
  return out;
}

std::string MacOf(std::string_view times, std::string_view state, std::string_view token) {
  std::string message(times);
  message += '\n';
  message += state;
  return HexText(DigestBytes(ComputeHmacSha256(token.empty() ? kNoTokenKey : token, message)));
}

// Reads one object's members, each checked, naming the member in every error.
class Members {
 public:
  Members(const Json& object, std::string where) : object_(object), where_(std::move(where)) {}

  Status Check() const {
    if (object_.is_object()) return Status::Ok();
    return InvalidArgument("the book's state: " + where_ + " is not an object");
  }
  const Json* Find(const char* key) const {
    if (!object_.is_object()) return nullptr;
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }
  Status Int(const char* key, int64_t& out) const {
    const Json* value = Find(key);
    if (value == nullptr || !value->is_number_integer() ||
        (value->is_number_unsigned() &&
         value->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
      return Missing(key, "an integer");
    }
    out = value->get<int64_t>();
    return Status::Ok();
  }
  Status Time(const char* key, Nanos origin, Nanos& out) const {
    int64_t offset = 0;
    KDIST_RETURN_IF_ERROR(Int(key, offset));
    out = origin + Nanos(offset);
    return Status::Ok();
  }
  Status Double(const char* key, double& out) const {
    const Json* value = Find(key);
    if (value == nullptr || !value->is_number()) return Missing(key, "a number");
    out = value->get<double>();
    return Status::Ok();
  }
  Status Bool(const char* key, bool& out) const {
    const Json* value = Find(key);
    if (value == nullptr || !value->is_boolean()) return Missing(key, "true or false");
    out = value->get<bool>();
    return Status::Ok();
  }
  Status String(const char* key, std::string& out) const {
    const Json* value = Find(key);
    if (value == nullptr || !value->is_string()) return Missing(key, "a string");
    out = value->get_ref<const std::string&>();
    return Status::Ok();
  }
  Status Array(const char* key, const Json*& out) const {
    out = Find(key);
    if (out == nullptr || !out->is_array()) return Missing(key, "an array");
    return Status::Ok();
  }
  std::string Where(const char* key) const { return where_ + "." + key; }

 private:
  Status Missing(const char* key, const char* expected) const {
    return InvalidArgument("the book's state: " + Where(key) + " is missing or not " + expected);
  }
  const Json& object_;
  std::string where_;
};

int64_t OffsetNanos(Nanos at, Nanos origin) { return (at - origin).count(); }

Json FailureJson(const JobFailure& f) {
  return Json{{"kind", static_cast<int64_t>(f.kind)}, {"process_id", f.process_id},
              {"node", f.node},         {"host", f.host},
              {"pid", f.pid},           {"exit_status", f.exit_status},
              {"ended_how", f.ended_how}, {"what", f.what},
              {"step", f.step}};
}

Status ReadFailure(const Json& json, const std::string& where, JobFailure& f) {
  const Members m(json, where);
  KDIST_RETURN_IF_ERROR(m.Check());
  int64_t kind = 0;
  KDIST_RETURN_IF_ERROR(m.Int("kind", kind));
  if (kind < 0 || kind > static_cast<int64_t>(FailureKind::kNodeEnded)) {
    return InvalidArgument("the book's state: " + m.Where("kind") + " is " + std::to_string(kind));
  }
  f.kind = static_cast<FailureKind>(kind);
  KDIST_RETURN_IF_ERROR(m.Int("process_id", f.process_id));
  KDIST_RETURN_IF_ERROR(m.String("node", f.node));
  KDIST_RETURN_IF_ERROR(m.String("host", f.host));
  KDIST_RETURN_IF_ERROR(m.Int("pid", f.pid));
  KDIST_RETURN_IF_ERROR(m.Int("exit_status", f.exit_status));
  KDIST_RETURN_IF_ERROR(m.String("ended_how", f.ended_how));
  KDIST_RETURN_IF_ERROR(m.String("what", f.what));
  return m.Int("step", f.step);
}

Json ReplyJson(const NodeReply& r) {
  return Json{{"kind", static_cast<int64_t>(r.kind)},
              {"code", static_cast<int64_t>(r.code)},
              {"message", r.message},
              {"attempt", r.attempt},
              {"processes_per_node", r.processes_per_node},
              {"coordinator_host", r.coordinator_host},
              {"coordinator_port", r.coordinator_port},
              {"node_count", r.node_count},
              {"previous_processes", r.previous_processes},
              {"first_failure", r.first_failure},
              {"ended", r.ended},
              {"exit_status", r.exit_status}};
}

Status ReadReply(const Json& json, const std::string& where, NodeReply& r) {
  const Members m(json, where);
  KDIST_RETURN_IF_ERROR(m.Check());
  int64_t kind = 0, code = 0;
  KDIST_RETURN_IF_ERROR(m.Int("kind", kind));
  KDIST_RETURN_IF_ERROR(m.Int("code", code));
  if (kind < static_cast<int64_t>(NodeReplyKind::kWaiting) ||
      kind > static_cast<int64_t>(NodeReplyKind::kStop) || code < 0 ||
      code > static_cast<int64_t>(StatusCode::kInternal)) {
    return InvalidArgument("the book's state: " + where + " has kind " + std::to_string(kind) +
                           " and code " + std::to_string(code));
  }
  r.kind = static_cast<NodeReplyKind>(kind);
  r.code = static_cast<StatusCode>(code);
  KDIST_RETURN_IF_ERROR(m.String("message", r.message));
  KDIST_RETURN_IF_ERROR(m.Int("attempt", r.attempt));
  KDIST_RETURN_IF_ERROR(m.Int("processes_per_node", r.processes_per_node));
  KDIST_RETURN_IF_ERROR(m.String("coordinator_host", r.coordinator_host));
  KDIST_RETURN_IF_ERROR(m.Int("coordinator_port", r.coordinator_port));
  KDIST_RETURN_IF_ERROR(m.Int("previous_processes", r.previous_processes));
  KDIST_RETURN_IF_ERROR(m.String("first_failure", r.first_failure));
  KDIST_RETURN_IF_ERROR(m.String("ended", r.ended));
  KDIST_RETURN_IF_ERROR(m.Int("exit_status", r.exit_status));
  KDIST_RETURN_IF_ERROR(m.Int("node_count", r.node_count));
  if (r.node_count < 0) {
    return InvalidArgument("the book's state: " + m.Where("node_count") + " is negative");
  }
  return Status::Ok();
}

Json RowJson(const AttemptRow& row) {
  return Json{{"attempt", row.attempt},
              {"port", row.port},
              {"nodes", row.nodes},
              {"processes", row.processes},
              {"started_seconds", row.started_seconds},
              {"ended_seconds", row.ended_seconds},
              {"started_unix_millis", row.started_unix_millis},
              {"ended_unix_millis", row.ended_unix_millis},
              {"ended", row.ended},
              {"exit_status", row.exit_status},
              {"counted", row.counted},
              {"first_step", row.first_step},
              {"first_step_seconds", row.first_step_seconds},
              {"step", row.step},
              {"step_seconds", row.step_seconds},
              {"waited_seconds", row.waited_seconds}};
}

Status ReadRow(const Json& json, const std::string& where, AttemptRow& row) {
  const Members m(json, where);
  KDIST_RETURN_IF_ERROR(m.Check());
  KDIST_RETURN_IF_ERROR(m.Int("attempt", row.attempt));
  KDIST_RETURN_IF_ERROR(m.Int("port", row.port));
  KDIST_RETURN_IF_ERROR(m.Int("processes", row.processes));
  KDIST_RETURN_IF_ERROR(m.Double("started_seconds", row.started_seconds));
  KDIST_RETURN_IF_ERROR(m.Double("ended_seconds", row.ended_seconds));
  KDIST_RETURN_IF_ERROR(m.Int("started_unix_millis", row.started_unix_millis));
  KDIST_RETURN_IF_ERROR(m.Int("ended_unix_millis", row.ended_unix_millis));
  KDIST_RETURN_IF_ERROR(m.String("ended", row.ended));
  KDIST_RETURN_IF_ERROR(m.Int("exit_status", row.exit_status));
  KDIST_RETURN_IF_ERROR(m.Bool("counted", row.counted));
  // The steps and the wait (goodput, job/goodput.h): absent from a state saved before them.
  if (m.Find("step") != nullptr) {
    KDIST_RETURN_IF_ERROR(m.Int("first_step", row.first_step));
    KDIST_RETURN_IF_ERROR(m.Double("first_step_seconds", row.first_step_seconds));
    KDIST_RETURN_IF_ERROR(m.Int("step", row.step));
    KDIST_RETURN_IF_ERROR(m.Double("step_seconds", row.step_seconds));
    KDIST_RETURN_IF_ERROR(m.Double("waited_seconds", row.waited_seconds));
  }
  const Json* nodes = nullptr;
  KDIST_RETURN_IF_ERROR(m.Array("nodes", nodes));
  for (const Json& name : *nodes) {
    if (!name.is_string()) {
      return InvalidArgument("the book's state: " + m.Where("nodes") + " holds a non-string");
    }
    row.nodes.push_back(name.get<std::string>());
  }
  return Status::Ok();
}

Json LedgerJson(const LedgerState& ledger, Nanos origin) {
  Json rows = Json::array();
  for (const AttemptRow& row : ledger.rows) rows.push_back(RowJson(row));
  Json reforms = Json::array();
  for (const auto& [at, why] : ledger.reforms) reforms.push_back(Json::array({OffsetNanos(at, origin), why}));
  return Json{{"start", OffsetNanos(ledger.start, origin)},
              {"rows", std::move(rows)},
              {"counted_restarts", ledger.counted_restarts},
              {"previous", FailureJson(ledger.previous)},
              {"reforms", std::move(reforms)},
              {"gathering", ledger.gathering},
              {"gathering_since", OffsetNanos(ledger.gathering_since, origin)},
              {"over", ledger.over},
              {"over_at", OffsetNanos(ledger.over_at, origin)}};
}

Status ReadLedger(const Json& json, Nanos origin, LedgerState& ledger) {
  const Members m(json, "ledger");
  KDIST_RETURN_IF_ERROR(m.Check());
  KDIST_RETURN_IF_ERROR(m.Time("start", origin, ledger.start));
  KDIST_RETURN_IF_ERROR(m.Int("counted_restarts", ledger.counted_restarts));
  const Json* previous = m.Find("previous");
  if (previous == nullptr) return InvalidArgument("the book's state: ledger.previous is missing");
  KDIST_RETURN_IF_ERROR(ReadFailure(*previous, "ledger.previous", ledger.previous));
  const Json* rows = nullptr;
  KDIST_RETURN_IF_ERROR(m.Array("rows", rows));
  for (size_t i = 0; i < rows->size(); ++i) {
    AttemptRow row;
    KDIST_RETURN_IF_ERROR(ReadRow((*rows)[i], "ledger.rows[" + std::to_string(i) + "]", row));
    ledger.rows.push_back(std::move(row));
  }
  const Json* reforms = nullptr;
  KDIST_RETURN_IF_ERROR(m.Array("reforms", reforms));
  for (const Json& reform : *reforms) {
    if (!reform.is_array() || reform.size() != 2 || !reform[0].is_number_integer() ||
        !reform[1].is_string()) {
      return InvalidArgument("the book's state: ledger.reforms holds something other than "
                             "[offset, why]");
    }
    ledger.reforms.emplace_back(origin + Nanos(reform[0].get<int64_t>()),
                                reform[1].get<std::string>());
  }
  if (m.Find("gathering") != nullptr) {  // absent from a state saved before goodput
    KDIST_RETURN_IF_ERROR(m.Bool("gathering", ledger.gathering));
    KDIST_RETURN_IF_ERROR(m.Time("gathering_since", origin, ledger.gathering_since));
    KDIST_RETURN_IF_ERROR(m.Bool("over", ledger.over));
    KDIST_RETURN_IF_ERROR(m.Time("over_at", origin, ledger.over_at));
  }
  return Status::Ok();
}

}  // namespace

std::string RendezvousBook::EncodeState() const {
  const auto node_json = [this](const Node& n) {
    return Json{{"id", n.id},
                {"name", n.hello.node_name},
                {"host", n.hello.host},
                {"pid", n.hello.pid},
                {"environment", HexText(n.hello.environment)},
                {"coordinator_port", n.hello.coordinator_port},
                {"peer_host", n.peer_host},
                {"local_host", n.local_host},
                {"on_rendezvous_machine", n.on_rendezvous_machine},
                {"next_port", n.next_port},
                {"reported", n.reported},
                {"lost", n.lost},
                {"lost_since", OffsetNanos(n.lost_since, origin_)},
                {"draining", n.draining},
                {"joined_at", OffsetNanos(n.joined_at, origin_)},
                {"admitted_at", OffsetNanos(n.admitted_at, origin_)}};
  };
  Json nodes = Json::array(), joining = Json::array(), lost = Json::array();
  for (const Node& n : nodes_) nodes.push_back(node_json(n));
  for (const Node& n : joining_) joining.push_back(node_json(n));
  for (const LostNode& l : lost_) {
    lost.push_back(Json{{"text", l.text}, {"attempt", l.attempt}, {"since", OffsetNanos(l.since, origin_)}});
  }
  Json last_rank = Json::object();
  for (const auto& [name, rank] : last_rank_) last_rank[name] = rank;
  Json state{{"version", kStateVersion},
             {"job_id", options_.job_id},
             {"min_nodes", options_.min_nodes},
             {"max_nodes", options_.max_nodes},
             {"processes_per_node", options_.processes_per_node},
             {"run_id", options_.run_id},
             {"wall_start_unix_millis", options_.ledger.wall_start_unix_millis},
             {"phase", static_cast<int64_t>(phase_)},
             {"attempt", attempt_},
             {"exit_status", exit_status_},
             {"next_id", next_id_},
             {"growing", growing_},
             {"regather_first_id", regather_first_id_},
             {"start", OffsetNanos(start_, origin_)},
             {"last_join", OffsetNanos(last_join_, origin_)},
             {"nodes", std::move(nodes)},
             {"joining", std::move(joining)},
             {"last_rank", std::move(last_rank)},
             {"consistency_reference_id", consistency_reference_id_},
             {"consistency_reference", HexText(consistency_reference_)},
             {"consistency_notes", consistency_notes_},
             {"first_failure", FailureJson(first_failure_)},
             {"first_failure_named", first_failure_named_},
             {"progressed", progressed_},
             {"lost", std::move(lost)},
             {"roster", ReplyJson(roster_)},
             {"end", ReplyJson(end_)},
             {"ledger", LedgerJson(ledger_.State(), origin_)}};
  return state.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<RendezvousBook> RendezvousBook::Restore(RendezvousOptions options, std::string_view text,
                                               Nanos saved_offset, Nanos now) {
  const Json state = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (state.is_discarded()) return InvalidArgument("the book's state is not JSON");
  const Members m(state, "state");
  KDIST_RETURN_IF_ERROR(m.Check());
  int64_t version = 0;
  KDIST_RETURN_IF_ERROR(m.Int("version", version));
  if (version != kStateVersion) {
    return FailedPrecondition("the book's state is of version " + std::to_string(version) +
                              "; this kdist reads version " + std::to_string(kStateVersion) +
                              "; run one kdist version on every machine of a job");
  }
  std::string job_id;
  int64_t min_nodes = 0, max_nodes = 0, processes_per_node = 0;
  KDIST_RETURN_IF_ERROR(m.String("job_id", job_id));
  KDIST_RETURN_IF_ERROR(m.Int("min_nodes", min_nodes));
  KDIST_RETURN_IF_ERROR(m.Int("max_nodes", max_nodes));
  KDIST_RETURN_IF_ERROR(m.Int("processes_per_node", processes_per_node));
  if (job_id != options.job_id || min_nodes != options.min_nodes ||
      max_nodes != options.max_nodes ||
      (options.processes_per_node != 0 && processes_per_node != 0 &&
       processes_per_node != options.processes_per_node)) {
    return FailedPrecondition(
        "the book's state is job id " + Quote(job_id) + " with --nodes " +
        std::to_string(min_nodes) + ":" + std::to_string(max_nodes) + " and -n " +
        std::to_string(processes_per_node) + "; this agent's is job id " + Quote(options.job_id) +
        " with --nodes " + std::to_string(options.min_nodes) + ":" +
        std::to_string(options.max_nodes) + " and -n " +
        std::to_string(options.processes_per_node) + "; start every agent with the same ones");
  }
  if (options.processes_per_node == 0) options.processes_per_node = processes_per_node;
  // The job's run and its start stay the first holder's (the backups' lease names the run).
  KDIST_RETURN_IF_ERROR(m.String("run_id", options.run_id));
  KDIST_RETURN_IF_ERROR(m.Int("wall_start_unix_millis", options.ledger.wall_start_unix_millis));
  const Nanos origin = now - saved_offset;  // the last save was `now` here
  RendezvousBook book(std::move(options), origin);
  book.now_ = now;
  int64_t phase = 0;
  KDIST_RETURN_IF_ERROR(m.Int("phase", phase));
  if (phase < 0 || phase > static_cast<int64_t>(Phase::kEnded)) {
    return InvalidArgument("the book's state: state.phase is " + std::to_string(phase));
  }
  book.phase_ = static_cast<Phase>(phase);
  KDIST_RETURN_IF_ERROR(m.Int("attempt", book.attempt_));
  KDIST_RETURN_IF_ERROR(m.Int("exit_status", book.exit_status_));
  KDIST_RETURN_IF_ERROR(m.Int("next_id", book.next_id_));
  KDIST_RETURN_IF_ERROR(m.Bool("growing", book.growing_));
  KDIST_RETURN_IF_ERROR(m.Int("regather_first_id", book.regather_first_id_));
  KDIST_RETURN_IF_ERROR(m.Time("start", origin, book.start_));
  KDIST_RETURN_IF_ERROR(m.Time("last_join", origin, book.last_join_));
  KDIST_RETURN_IF_ERROR(m.Int("consistency_reference_id", book.consistency_reference_id_));
  std::string reference_hex;
  KDIST_RETURN_IF_ERROR(m.String("consistency_reference", reference_hex));
  KDIST_ASSIGN_OR_RETURN(book.consistency_reference_,
                         BytesOfHex(reference_hex, "the book's state: state.consistency_reference"));
  KDIST_RETURN_IF_ERROR(m.String("consistency_notes", book.consistency_notes_));
  KDIST_RETURN_IF_ERROR(m.Bool("first_failure_named", book.first_failure_named_));
  KDIST_RETURN_IF_ERROR(m.Bool("progressed", book.progressed_));
  for (const auto& [key, out] : {std::pair<const char*, NodeReply*>{"roster", &book.roster_},
                                 std::pair<const char*, NodeReply*>{"end", &book.end_}}) {
    const Json* reply = m.Find(key);
    if (reply == nullptr) return InvalidArgument(std::string("the book's state: state.") + key + " is missing");
    KDIST_RETURN_IF_ERROR(ReadReply(*reply, std::string("state.") + key, *out));
  }
  const Json* failure = m.Find("first_failure");
  if (failure == nullptr) return InvalidArgument("the book's state: state.first_failure is missing");
  KDIST_RETURN_IF_ERROR(ReadFailure(*failure, "state.first_failure", book.first_failure_));

  const auto read_node = [&](const Json& json, const std::string& where, Node& n) -> Status {
    const Members nm(json, where);
    KDIST_RETURN_IF_ERROR(nm.Check());
    KDIST_RETURN_IF_ERROR(nm.Int("id", n.id));
    KDIST_RETURN_IF_ERROR(nm.String("name", n.hello.node_name));
    KDIST_RETURN_IF_ERROR(nm.String("host", n.hello.host));
    KDIST_RETURN_IF_ERROR(nm.Int("pid", n.hello.pid));
    std::string environment;
    KDIST_RETURN_IF_ERROR(nm.String("environment", environment));
    KDIST_ASSIGN_OR_RETURN(n.hello.environment, BytesOfHex(environment, "the book's state: " + where + ".environment"));
    KDIST_RETURN_IF_ERROR(nm.Int("coordinator_port", n.hello.coordinator_port));
    KDIST_RETURN_IF_ERROR(nm.String("peer_host", n.peer_host));
    KDIST_RETURN_IF_ERROR(nm.String("local_host", n.local_host));
    KDIST_RETURN_IF_ERROR(nm.Bool("on_rendezvous_machine", n.on_rendezvous_machine));
    KDIST_RETURN_IF_ERROR(nm.Int("next_port", n.next_port));
    KDIST_RETURN_IF_ERROR(nm.Bool("reported", n.reported));
    KDIST_RETURN_IF_ERROR(nm.Bool("lost", n.lost));
    KDIST_RETURN_IF_ERROR(nm.Time("lost_since", origin, n.lost_since));
    KDIST_RETURN_IF_ERROR(nm.Bool("draining", n.draining));
    KDIST_RETURN_IF_ERROR(nm.Time("joined_at", origin, n.joined_at));
    if (nm.Find("admitted_at") != nullptr) {  // absent from a state saved before it
      KDIST_RETURN_IF_ERROR(nm.Time("admitted_at", origin, n.admitted_at));
    }
    if (n.id < 0) return InvalidArgument("the book's state: " + where + ".id is negative");
    n.hello.job_id = book.options_.job_id;
    n.hello.processes_per_node = book.options_.processes_per_node;
    n.hello.min_nodes = book.options_.min_nodes;
    n.hello.max_nodes = book.options_.max_nodes;
    n.connection = kDetachedConnection + static_cast<uint64_t>(n.id);
    n.detached_since = now;
    return Status::Ok();
  };
  for (const auto& [key, out] : {std::pair<const char*, std::vector<Node>*>{"nodes", &book.nodes_},
                                 std::pair<const char*, std::vector<Node>*>{"joining", &book.joining_}}) {
    const Json* nodes = nullptr;
    KDIST_RETURN_IF_ERROR(m.Array(key, nodes));
    for (size_t i = 0; i < nodes->size(); ++i) {
      Node n;
      KDIST_RETURN_IF_ERROR(read_node((*nodes)[i], std::string("state.") + key + "[" + std::to_string(i) + "]", n));
      out->push_back(std::move(n));
    }
  }
  // The book's indexes (places_, name_holders_, unreported_), as the original kept them.
  book.Reindex();
  for (const std::vector<Node>* nodes : {&book.nodes_, &book.joining_}) {
    for (const Node& node : *nodes) {
      if (!node.lost) book.name_holders_[node.hello.node_name] = node.connection;
    }
  }
  if (book.phase_ == Phase::kRunning) {
    book.unreported_ = static_cast<int64_t>(std::count_if(
        book.nodes_.begin(), book.nodes_.end(), [](const Node& n) { return !n.reported; }));
  }
  book.detached_ = !book.nodes_.empty() || !book.joining_.empty();
  const Json* lost = nullptr;
  KDIST_RETURN_IF_ERROR(m.Array("lost", lost));
  for (size_t i = 0; i < lost->size(); ++i) {
    const Members lm((*lost)[i], "state.lost[" + std::to_string(i) + "]");
    KDIST_RETURN_IF_ERROR(lm.Check());
    LostNode l;
    KDIST_RETURN_IF_ERROR(lm.String("text", l.text));
    KDIST_RETURN_IF_ERROR(lm.Int("attempt", l.attempt));
    KDIST_RETURN_IF_ERROR(lm.Time("since", origin, l.since));
    book.lost_.push_back(std::move(l));
  }
  const Json* last_rank = m.Find("last_rank");
  if (last_rank == nullptr || !last_rank->is_object()) {
    return InvalidArgument("the book's state: state.last_rank is missing or not an object");
  }
  for (auto it = last_rank->begin(); it != last_rank->end(); ++it) {
    if (!it->is_number_integer()) {
      return InvalidArgument("the book's state: state.last_rank holds a non-integer");
    }
    book.last_rank_[it.key()] = it->get<int64_t>();
  }
  const Json* ledger = m.Find("ledger");
  if (ledger == nullptr) return InvalidArgument("the book's state: state.ledger is missing");
  LedgerState ledger_state;
  KDIST_RETURN_IF_ERROR(ReadLedger(*ledger, origin, ledger_state));
  book.ledger_ = AttemptLedger(book.options_.ledger, std::move(ledger_state));
  // The environment comparison, rebuilt as the original built it: the reference node's
  // fingerprint, then every other node's still in the job.
  if (!book.consistency_reference_.empty()) {
    KDIST_ASSIGN_OR_RETURN(Fingerprint reference, DecodeFingerprint(book.consistency_reference_));
    for (FingerprintEntry& entry : reference) {
      entry.must_match = std::find(book.options_.must_match.begin(), book.options_.must_match.end(),
                                   entry.name) != book.options_.must_match.end();
    }
    book.consistency_.emplace(std::move(reference), book.options_.consistency);
    std::vector<const Node*> others;
    for (const std::vector<Node>* nodes : {&book.nodes_, &book.joining_}) {
      for (const Node& node : *nodes) {
        if (node.id != book.consistency_reference_id_) others.push_back(&node);
      }
    }
    std::sort(others.begin(), others.end(), [](const Node* a, const Node* b) { return a->id < b->id; });
    const auto named = [&](int64_t id) {
      for (const Node* node : others) {
        if (node->id == id) return "node " + node->hello.node_name;
      }
      return std::string("node ?");
    };
    for (const Node* node : others) {
      KDIST_ASSIGN_OR_RETURN(const Fingerprint theirs, DecodeFingerprint(node->hello.environment));
      Status added = book.consistency_->Add(node->id, theirs, named);
      if (!added.ok()) {
        return InvalidArgument("the book's state: node " + node->hello.node_name +
                               "'s environment does not compare as when it was admitted: " +
                               added.message());
      }
    }
  }
  return book;
}

std::string SealBookState(std::string_view state, Nanos saved_offset, std::string_view token,
                          int64_t saved_wall_millis) {
  const std::string times =
      std::to_string(saved_offset.count()) + " " + std::to_string(saved_wall_millis);
  return std::string(kSealMagic) + times + " " + MacOf(times, state, token) + "\n" +
         std::string(state);
}

Result<SavedBookState> OpenBookState(std::string_view sealed, std::string_view token) {
  const size_t line_end = sealed.find('\n');
  if (sealed.substr(0, kSealMagic.size()) != kSealMagic || line_end == std::string_view::npos) {
    return InvalidArgument("the job's book in the store does not begin with \"" +
                           std::string(kSealMagic) + "\": it is not kdist's, or another version's");
  }
  const std::string_view header = sealed.substr(kSealMagic.size(), line_end - kSealMagic.size());
  const size_t first = header.find(' ');
  const size_t second = first == std::string_view::npos ? first : header.find(' ', first + 1);
  if (second == std::string_view::npos) {
    return InvalidArgument("the job's book in the store has a malformed first line");
  }
  const std::string_view times = header.substr(0, second);
  const std::string_view mac = header.substr(second + 1);
  Result<int64_t> offset = ParseInteger(header.substr(0, first));
  Result<int64_t> wall = ParseInteger(header.substr(first + 1, second - first - 1));
  if (!offset.ok() || !wall.ok()) {
    return InvalidArgument("the job's book in the store has a malformed time");
  }
  SavedBookState saved;
  saved.state = std::string(sealed.substr(line_end + 1));
  if (!ConstantTimeEquals(MacOf(times, saved.state, token), mac)) {
    return FailedPrecondition(
        "the job's book in the store does not verify under this agent's token: it was "
        "written by an agent with another token (give every agent of the job the same "
        "KDIST_ROLL_CALL_TOKEN or --token-file), or by another hand");
  }
  saved.saved_offset = Nanos(*offset);
  saved.saved_wall_millis = *wall;
  return saved;
}

std::string SaveBook(const RendezvousBook& book, Nanos now, std::string_view token,
                     int64_t wall_millis) {
  return SealBookState(book.EncodeState(), book.OffsetOf(now), token, wall_millis);
}

Result<RendezvousBook> RestoreBook(RendezvousOptions options, std::string_view sealed, Nanos now,
                                   int64_t wall_millis) {
  const std::string token = options.token;
  KDIST_ASSIGN_OR_RETURN(SavedBookState saved, OpenBookState(sealed, token));
  // The time since the last save, by the wall clocks of the two machines.
  int64_t gap_millis = 0;
  if (wall_millis > 0 && saved.saved_wall_millis > 0) {
    gap_millis = std::clamp<int64_t>(wall_millis - saved.saved_wall_millis, 0, kMaxGapMillis);
  }
  return RendezvousBook::Restore(std::move(options), saved.state,
                                 saved.saved_offset + std::chrono::milliseconds(gap_millis), now);
}

}  // namespace kdist
