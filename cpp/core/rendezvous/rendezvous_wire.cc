#include "rendezvous/rendezvous_wire.h"

#include <utility>

#include "base/frame_mac.h"
#include "base/wire_tags.h"

namespace kdist {
namespace {

// The rendezvous's own field tags (those it shares with both other channels:
// base/wire_tags.h). The MAC is base/frame_mac.h's, so that FrameMacInput cuts it
// out of any of these frames.
enum RendezvousTag : uint8_t {
  kTagSequence = 2,
  kTagJobId = 3,
  kTagNodeName = 4,
  kTagProcessesPerNode = 5,
  kTagMinNodes = 6,
  kTagMaxNodes = 7,
  kTagMac = kTagFrameMac,
  kTagCode = 11,
  kTagCoordinatorPort = 13,
  kTagEnvironment = 14,
  kTagNonce = 15,
  kTagKind = 16,
  kTagAttempt = 17,
  kTagNodeRank = 18,
  kTagCoordinatorHost = 19,
  // 20 was the roster's whole node list (retired: a roster carries kTagNodeCount).
  kTagFirstFailure = 21,
  kTagExitStatus = 22,
  kTagFailureWhat = 23,
  kTagDrain = 24,
  kTagPreviousProcesses = 25,
  // A report's JobFailure (job/job_failure.h), besides its `what` (tag 23).
  kTagFailureKind = 26,
  kTagFailureProcess = 27,
  kTagFailureNode = 28,
  kTagFailureHost = 29,
  kTagFailurePid = 30,
  kTagFailureStatus = 31,
  kTagFailureHow = 32,
  kTagFailureStep = 33,
  kTagPurpose = 34,
  kTagRunId = 35,
  kTagEnded = 36,
  kTagProgressed = 37,
  kTagNodeCount = 40,
  kTagFirstStep = 41,
  kTagFirstStepMillis = 42,
  kTagStep = 43,
  kTagStepMillis = 44,
  kTagStepsOnly = 45,
  kTagStatus = 46,
};

constexpr size_t kMaxRunIdBytes = 64;

constexpr TagSet kHelloTags = {kTagSequence, kTagJobId, kTagNodeName, kTagHost, kTagPid,
                               kTagProcessesPerNode, kTagMinNodes, kTagMaxNodes,
                               kTagCoordinatorPort, kTagEnvironment, kTagNonce, kTagPurpose,
                               kTagMac};
constexpr TagSet kReplyTags = {kTagSequence, kTagKind, kTagCode, kTagMessage, kTagAttempt,
                               kTagNodeRank, kTagProcessesPerNode, kTagCoordinatorHost,
                               kTagCoordinatorPort, kTagNodeCount, kTagFirstFailure,
                               kTagExitStatus, kTagPreviousProcesses, kTagRunId, kTagEnded,
                               kTagStatus, kTagMac};
constexpr TagSet kReportTags = {kTagSequence,      kTagAttempt,        kTagExitStatus,
                                kTagCoordinatorPort, kTagDrain,        kTagMac,
                                kTagFailureKind,   kTagFailureProcess, kTagFailureNode,
                                kTagFailureHost,   kTagFailurePid,     kTagFailureStatus,
                                kTagFailureHow,    kTagFailureWhat,    kTagFailureStep,
                                kTagProgressed, kTagFirstStep, kTagFirstStepMillis, kTagStep,
                                kTagStepMillis, kTagStepsOnly};

constexpr std::string_view kChannel = "nodes' rendezvous";

std::string_view NonceBytes(const Nonce& nonce) {
  return {reinterpret_cast<const char*>(nonce.data()), nonce.size()};
}

Status ReadFailureKind(const Field& f, FailureKind& out) {
  int64_t kind = 0;
  KDIST_RETURN_IF_ERROR(ReadInteger(f, "failure kind", kind));
  if (kind < static_cast<int64_t>(FailureKind::kNone) ||
      kind > static_cast<int64_t>(FailureKind::kNodeEnded)) {
    return InvalidArgument("field failure kind is " + std::to_string(kind) + "; expected 0-4");
  }
  out = static_cast<FailureKind>(kind);
  return Status::Ok();
}

Status ReadMac(const Field& f, std::string& out) {
  if (f.value.size() != kMacBytes) {
    return InvalidArgument("field mac is " + std::to_string(f.value.size()) + " bytes; expected " +
                           std::to_string(kMacBytes));
  }
  out.assign(f.value);
  return Status::Ok();
}

Status ReadPort(const Field& f, const char* name, int64_t& out) {
  KDIST_RETURN_IF_ERROR(ReadInteger(f, name, out));
  if (out < 0 || out > 65535) {
    return InvalidArgument(std::string("field ") + name + " is " + std::to_string(out) +
                           ", outside 0-65535");
  }
  return Status::Ok();
}

Status Require(const TagSet& seen, std::initializer_list<std::pair<uint8_t, const char*>> fields,
               const char* frame) {
  for (const auto& [tag, name] : fields) {
    if (!seen.Has(tag)) return InvalidArgument(std::string("the ") + frame + " has no " + name + " field");
  }
  return Status::Ok();
}

// The MAC of `frame` (encoded without one) under `token` over `nonce`.
std::string MacOf(const std::string& frame, std::string_view token, const Nonce& nonce) {
  return FrameMac(token, nonce, frame);
}

}  // namespace

std::string EncodeNodeHello(const NodeHello& hello) {
  FieldWriter w;
  w.Integer(kTagSequence, hello.sequence);
  w.String(kTagJobId, hello.job_id, kMaxJobIdBytes);
  w.String(kTagNodeName, hello.node_name, kMaxNodeNameBytes);
  w.String(kTagHost, hello.host, kMaxHostBytes);
  w.Integer(kTagPid, hello.pid);
  w.Integer(kTagProcessesPerNode, hello.processes_per_node);
  w.Integer(kTagMinNodes, hello.min_nodes);
  w.Integer(kTagMaxNodes, hello.max_nodes);
  w.Integer(kTagCoordinatorPort, hello.coordinator_port);
  w.String(kTagEnvironment, hello.environment, kMaxNodeEnvironmentBytes);
  w.String(kTagNonce, NonceBytes(hello.nonce), kNonceBytes);
  if (hello.purpose != NodePurpose::kJoin) w.Integer(kTagPurpose, static_cast<int64_t>(hello.purpose));
  if (!hello.mac.empty()) w.String(kTagMac, hello.mac, kMacBytes);
  return w.Frame(kFrameNodeHello);
}

std::string EncodeNodeReply(const NodeReply& reply) {
  FieldWriter w;
  w.Integer(kTagSequence, reply.sequence);
  w.Integer(kTagKind, static_cast<int64_t>(reply.kind));
  w.Integer(kTagCode, static_cast<int64_t>(reply.code));
  w.String(kTagMessage, reply.message, kMaxMessageBytes);
  if (reply.kind == NodeReplyKind::kRoster) {
    w.Integer(kTagAttempt, reply.attempt);
    w.Integer(kTagNodeRank, reply.node_rank);
    w.Integer(kTagProcessesPerNode, reply.processes_per_node);
    w.String(kTagCoordinatorHost, reply.coordinator_host, kMaxHostBytes);
    w.Integer(kTagCoordinatorPort, reply.coordinator_port);
    w.Integer(kTagNodeCount, reply.node_count);
    if (reply.previous_processes > 0) w.Integer(kTagPreviousProcesses, reply.previous_processes);
    if (!reply.run_id.empty()) w.String(kTagRunId, reply.run_id, kMaxRunIdBytes);
  }
  if (reply.kind == NodeReplyKind::kRoster || reply.kind == NodeReplyKind::kEnd) {
    if (!reply.first_failure.empty()) {
      w.String(kTagFirstFailure, reply.first_failure, kMaxMessageBytes);
    }
  }
  if ((reply.kind == NodeReplyKind::kRoster || reply.kind == NodeReplyKind::kWaiting) &&
      !reply.ended.empty()) {
    w.String(kTagEnded, reply.ended, kMaxMessageBytes);
  }
  if (reply.kind == NodeReplyKind::kEnd) {
    w.Integer(kTagAttempt, reply.attempt);
    w.Integer(kTagExitStatus, reply.exit_status);
  }
  if (reply.kind == NodeReplyKind::kStop) w.Integer(kTagAttempt, reply.attempt);
  if (reply.kind == NodeReplyKind::kStatus) w.String(kTagStatus, reply.status, kMaxStatusBytes);
  if (!reply.mac.empty()) w.String(kTagMac, reply.mac, kMacBytes);
  return w.Frame(kFrameNodeReply);
}

std::string EncodeNodeReport(const NodeReport& report) {
  FieldWriter w;
  w.Integer(kTagSequence, report.sequence);
  w.Integer(kTagAttempt, report.attempt);
  w.Integer(kTagExitStatus, report.exit_status);
  if (report.failure.failed()) {
    const JobFailure& f = report.failure;
    w.Integer(kTagFailureKind, static_cast<int64_t>(f.kind));
    w.Integer(kTagFailureProcess, f.process_id);
    w.String(kTagFailureNode, f.node, kMaxNodeNameBytes);
    w.String(kTagFailureHost, f.host, kMaxHostBytes);
    w.Integer(kTagFailurePid, f.pid);
    w.Integer(kTagFailureStatus, f.exit_status);
    w.String(kTagFailureHow, f.ended_how, kMaxNodeNameBytes);
    w.String(kTagFailureWhat, f.what, kMaxMessageBytes);
    w.Integer(kTagFailureStep, f.step);
  }
  w.Integer(kTagCoordinatorPort, report.coordinator_port);
  if (report.drain) w.Integer(kTagDrain, 1);
  if (report.progressed) w.Integer(kTagProgressed, 1);
  if (report.steps_only) w.Integer(kTagStepsOnly, 1);
  if (report.first_step >= 0) {
    w.Integer(kTagFirstStep, report.first_step);
    w.Integer(kTagFirstStepMillis, report.first_step_unix_millis);
  }
  if (report.step >= 0) {
    w.Integer(kTagStep, report.step);
    w.Integer(kTagStepMillis, report.step_unix_millis);
  }
  if (!report.mac.empty()) w.String(kTagMac, report.mac, kMacBytes);
  return w.Frame(kFrameNodeReport);
}

std::string EncodeSignedNodeHello(NodeHello hello, std::string_view token, const Nonce& nonce) {
  hello.mac.clear();
  if (!token.empty()) hello.mac = MacOf(EncodeNodeHello(hello), token, nonce);
  return EncodeNodeHello(hello);
}

std::string EncodeSignedNodeReply(NodeReply reply, std::string_view token, const Nonce& nonce) {
  reply.mac.clear();
  if (!token.empty()) reply.mac = MacOf(EncodeNodeReply(reply), token, nonce);
  return EncodeNodeReply(reply);
}

std::string EncodeSignedNodeReport(NodeReport report, std::string_view token, const Nonce& nonce) {
  report.mac.clear();
  if (!token.empty()) report.mac = MacOf(EncodeNodeReport(report), token, nonce);
  return EncodeNodeReport(report);
}

bool NodeFrameVerifies(std::string_view frame, std::string_view mac, std::string_view token,
                       const Nonce& nonce) {
  if (token.empty() || mac.empty()) return token.empty() && mac.empty();
  Result<std::string> input = FrameMacInput(frame);
  if (!input.ok()) return false;
  return MacEqual(FrameMac(token, nonce, *input), mac);
}

Result<NodeHello> DecodeNodeHello(std::string_view frame) {
  KDIST_ASSIGN_OR_RETURN(const std::string_view payload,
                         FramePayload(frame, kFrameNodeHello, kChannel));
  NodeHello hello;
  KDIST_ASSIGN_OR_RETURN(const TagSet seen, ReadFields(payload, kHelloTags, [&](const Field& f) {
    switch (f.tag) {
      case kTagSequence: return ReadInteger(f, "sequence", hello.sequence);
      case kTagJobId: return ReadString(f, kMaxJobIdBytes, "job_id", hello.job_id);
      case kTagNodeName: return ReadString(f, kMaxNodeNameBytes, "node_name", hello.node_name);
      case kTagHost: return ReadString(f, kMaxHostBytes, "host", hello.host);
      case kTagPid: return ReadInteger(f, "pid", hello.pid);
      case kTagProcessesPerNode:
        return ReadInteger(f, "processes_per_node", hello.processes_per_node);
      case kTagMinNodes: return ReadInteger(f, "min_nodes", hello.min_nodes);
      case kTagMaxNodes: return ReadInteger(f, "max_nodes", hello.max_nodes);
      case kTagCoordinatorPort: return ReadPort(f, "coordinator_port", hello.coordinator_port);
      case kTagEnvironment:
        return ReadString(f, kMaxNodeEnvironmentBytes, "environment", hello.environment);
      case kTagNonce:
        if (f.value.size() != kNonceBytes) {
          return InvalidArgument("field nonce is " + std::to_string(f.value.size()) +
                                 " bytes; expected " + std::to_string(kNonceBytes));
        }
        for (size_t i = 0; i < kNonceBytes; ++i) hello.nonce[i] = static_cast<uint8_t>(f.value[i]);
        return Status::Ok();
      case kTagPurpose: {
        int64_t purpose = 0;
        KDIST_RETURN_IF_ERROR(ReadInteger(f, "purpose", purpose));
        if (purpose < static_cast<int64_t>(NodePurpose::kJoin) ||
            purpose > static_cast<int64_t>(NodePurpose::kStatus)) {
          return InvalidArgument("field purpose is " + std::to_string(purpose) +
                                 "; expected 0 (join), 1 (stop), 2 (rejoin) or 3 (status)");
        }
        hello.purpose = static_cast<NodePurpose>(purpose);
        return Status::Ok();
      }
      case kTagMac: return ReadMac(f, hello.mac);
      default: return Status::Ok();
    }
  }));
  KDIST_RETURN_IF_ERROR(Require(seen,
                                {{kTagSequence, "sequence"},
                                 {kTagNodeName, "node_name"},
                                 {kTagHost, "host"},
                                 {kTagPid, "pid"},
                                 {kTagProcessesPerNode, "processes_per_node"},
                                 {kTagMinNodes, "min_nodes"},
                                 {kTagMaxNodes, "max_nodes"},
                                 {kTagNonce, "nonce"}},
                                "node hello"));
  return hello;
}

namespace {

// A reply as EncodeNodeReply writes its kind: fields another kind carries are
// dropped, so a decoded reply means the same whichever fields a sender added.
// A field that holds 0 or 1.
Status ReadFlag(const Field& f, const char* name, bool& out) {
  int64_t value = 0;
  KDIST_RETURN_IF_ERROR(ReadInteger(f, name, value));
  if (value != 0 && value != 1) {
    return InvalidArgument(std::string("field ") + name + " is " + std::to_string(value) +
                           "; expected 0 or 1");
  }
  out = value == 1;
  return Status::Ok();
}

NodeReply OnlyItsKindsFields(NodeReply reply) {
  const bool roster = reply.kind == NodeReplyKind::kRoster;
  const bool end = reply.kind == NodeReplyKind::kEnd;
  const bool stop = reply.kind == NodeReplyKind::kStop;
  if (!roster) {
    reply.node_rank = 0;
    reply.processes_per_node = 0;
    reply.coordinator_host.clear();
    reply.coordinator_port = 0;
    reply.node_count = 0;
    reply.run_id.clear();
  }
  if (!roster || reply.previous_processes < 0) reply.previous_processes = 0;
  if (!roster && !end && !stop) reply.attempt = 0;
  if (!roster && !end) reply.first_failure.clear();
  if (!roster && reply.kind != NodeReplyKind::kWaiting) reply.ended.clear();
  if (!end) reply.exit_status = 0;
  if (reply.kind != NodeReplyKind::kStatus) reply.status.clear();
  return reply;
}

}  // namespace

Result<NodeReply> DecodeNodeReply(std::string_view frame) {
  KDIST_ASSIGN_OR_RETURN(const std::string_view payload,
                         FramePayload(frame, kFrameNodeReply, kChannel));
  NodeReply reply;
  int64_t kind = 0, code = 0;
  KDIST_ASSIGN_OR_RETURN(const TagSet seen, ReadFields(payload, kReplyTags, [&](const Field& f) {
    switch (f.tag) {
      case kTagSequence: return ReadInteger(f, "sequence", reply.sequence);
      case kTagKind: return ReadInteger(f, "kind", kind);
      case kTagCode: return ReadInteger(f, "code", code);
      case kTagMessage: return ReadString(f, kMaxMessageBytes, "message", reply.message);
      case kTagAttempt: return ReadInteger(f, "attempt", reply.attempt);
      case kTagNodeRank: return ReadInteger(f, "node_rank", reply.node_rank);
      case kTagProcessesPerNode:
        return ReadInteger(f, "processes_per_node", reply.processes_per_node);
      case kTagCoordinatorHost:
        return ReadString(f, kMaxHostBytes, "coordinator_host", reply.coordinator_host);
      case kTagCoordinatorPort: return ReadPort(f, "coordinator_port", reply.coordinator_port);
      case kTagNodeCount: return ReadInteger(f, "node_count", reply.node_count);
      case kTagFirstFailure:
        return ReadString(f, kMaxMessageBytes, "first_failure", reply.first_failure);
      case kTagExitStatus: return ReadInteger(f, "exit_status", reply.exit_status);
      case kTagPreviousProcesses:
        return ReadInteger(f, "previous_processes", reply.previous_processes);
      case kTagRunId: return ReadString(f, kMaxRunIdBytes, "run_id", reply.run_id);
      case kTagEnded: return ReadString(f, kMaxMessageBytes, "ended", reply.ended);
      case kTagStatus: return ReadString(f, kMaxStatusBytes, "status", reply.status);
      case kTagMac: return ReadMac(f, reply.mac);
      default: return Status::Ok();
    }
  }));
  KDIST_RETURN_IF_ERROR(
      Require(seen, {{kTagSequence, "sequence"}, {kTagKind, "kind"}, {kTagCode, "code"}},
              "node reply"));
  if (kind < static_cast<int64_t>(NodeReplyKind::kWaiting) ||
      kind > static_cast<int64_t>(NodeReplyKind::kStatus)) {
    return InvalidArgument("the node reply's kind " + std::to_string(kind) + " is not known");
  }
  reply.kind = static_cast<NodeReplyKind>(kind);
  if (code < 0 || code > static_cast<int64_t>(StatusCode::kInternal)) {
    return InvalidArgument("the node reply carries status code " + std::to_string(code) +
                           ", which is not a known code");
  }
  reply.code = static_cast<StatusCode>(code);
  if (reply.kind == NodeReplyKind::kRefused && reply.code == StatusCode::kOk) {
    return InvalidArgument("a refusal carries no failure code");
  }
  if (reply.kind == NodeReplyKind::kRoster) {
    KDIST_RETURN_IF_ERROR(Require(seen,
                                  {{kTagAttempt, "attempt"},
                                   {kTagNodeRank, "node_rank"},
                                   {kTagProcessesPerNode, "processes_per_node"},
                                   {kTagCoordinatorHost, "coordinator_host"},
                                   {kTagCoordinatorPort, "coordinator_port"},
                                   {kTagNodeCount, "node_count"}},
                                  "roster"));
    if (reply.node_rank < 0 || reply.node_rank >= reply.node_count) {
      return InvalidArgument("the roster's node rank " + std::to_string(reply.node_rank) +
                             " is outside its " + std::to_string(reply.node_count) + " nodes");
    }
    if (reply.processes_per_node < 1 || reply.attempt < 0 || reply.coordinator_port < 1) {
      return InvalidArgument("the roster's processes per node, attempt or coordinator port is "
                             "out of range");
    }
  }
  if (reply.kind == NodeReplyKind::kEnd) {
    KDIST_RETURN_IF_ERROR(
        Require(seen, {{kTagAttempt, "attempt"}, {kTagExitStatus, "exit_status"}}, "end"));
  }
  if (reply.kind == NodeReplyKind::kStop) {
    KDIST_RETURN_IF_ERROR(Require(seen, {{kTagAttempt, "attempt"}}, "stop"));
  }
  return OnlyItsKindsFields(std::move(reply));
}

Result<NodeReport> DecodeNodeReport(std::string_view frame) {
  KDIST_ASSIGN_OR_RETURN(const std::string_view payload,
                         FramePayload(frame, kFrameNodeReport, kChannel));
  NodeReport report;
  KDIST_ASSIGN_OR_RETURN(const TagSet seen, ReadFields(payload, kReportTags, [&](const Field& f) {
    switch (f.tag) {
      case kTagSequence: return ReadInteger(f, "sequence", report.sequence);
      case kTagAttempt: return ReadInteger(f, "attempt", report.attempt);
      case kTagExitStatus: return ReadInteger(f, "exit_status", report.exit_status);
      case kTagFailureKind: return ReadFailureKind(f, report.failure.kind);
      case kTagFailureProcess: return ReadInteger(f, "failure process", report.failure.process_id);
      case kTagFailureNode:
        return ReadString(f, kMaxNodeNameBytes, "failure node", report.failure.node);
      case kTagFailureHost: return ReadString(f, kMaxHostBytes, "failure host", report.failure.host);
      case kTagFailurePid: return ReadInteger(f, "failure pid", report.failure.pid);
      case kTagFailureStatus:
        return ReadInteger(f, "failure status", report.failure.exit_status);
      case kTagFailureHow:
        return ReadString(f, kMaxNodeNameBytes, "failure how", report.failure.ended_how);
      case kTagFailureWhat:
        return ReadString(f, kMaxMessageBytes, "failure", report.failure.what);
      case kTagFailureStep: return ReadInteger(f, "failure step", report.failure.step);
      case kTagCoordinatorPort: return ReadPort(f, "coordinator_port", report.coordinator_port);
      case kTagDrain: return ReadFlag(f, "drain", report.drain);
      case kTagProgressed: return ReadFlag(f, "progressed", report.progressed);
      case kTagStepsOnly: return ReadFlag(f, "steps_only", report.steps_only);
      case kTagFirstStep: return ReadInteger(f, "first_step", report.first_step);
      case kTagFirstStepMillis:
        return ReadInteger(f, "first_step_unix_millis", report.first_step_unix_millis);
      case kTagStep: return ReadInteger(f, "step", report.step);
      case kTagStepMillis: return ReadInteger(f, "step_unix_millis", report.step_unix_millis);
      case kTagMac: return ReadMac(f, report.mac);
      default: return Status::Ok();
    }
  }));
  KDIST_RETURN_IF_ERROR(Require(seen,
                                {{kTagSequence, "sequence"},
                                 {kTagAttempt, "attempt"},
                                 {kTagExitStatus, "exit_status"},
                                 {kTagCoordinatorPort, "coordinator_port"}},
                                "node report"));
  // A step is sent with its time, and a step is never negative (-1 is "none": not sent).
  if (seen.Has(kTagFirstStep) != seen.Has(kTagFirstStepMillis) ||
      seen.Has(kTagStep) != seen.Has(kTagStepMillis)) {
    return InvalidArgument("the node report has a step without its time, or a time without "
                           "its step; its sender speaks another wire");
  }
  if ((seen.Has(kTagFirstStep) && report.first_step < 0) ||
      (seen.Has(kTagStep) && report.step < 0)) {
    return InvalidArgument("the node report's step is negative; expected 0 or more");
  }
  if (!report.failure.failed()) {
    // What fails is sent whole or not at all: a failure's fields without its kind
    // would be dropped unread (a sender of an older wire, or a corrupted frame).
    for (const uint8_t tag : {kTagFailureProcess, kTagFailureNode, kTagFailureHost,
                              kTagFailurePid, kTagFailureStatus, kTagFailureHow,
                              kTagFailureWhat, kTagFailureStep}) {
      if (seen.Has(tag)) {
        return InvalidArgument("the node report has failure fields (tag " +
                               std::to_string(tag) +
                               ") but no failure kind; its sender speaks another wire");
      }
    }
  }
  return report;
}

}  // namespace kdist
