#include "roll_call_wire.h"

#include <utility>

namespace kdist {
namespace {

// Field tags. Hello and Reply share the integer space; each decoder knows its own.
enum Tag : uint8_t {
  kTagProcessId = 1,
  kTagNumProcesses = 2,
  kTagFingerprint = 3,
  kTagCoordinator = 4,
  kTagNumProcessesSource = 5,
  kTagCoordinatorSource = 6,
  kTagJaxVersion = 7,
  kTagHost = 8,
  kTagPid = 9,
  kTagToken = 10,
  kTagCode = 11,
  kTagMessage = 12,
  kTagSeed = 13,
  kTagLivenessPort = 14,
  kTagLivenessNonce = 15,
};

// The tags each message knows; others are skipped.
constexpr TagSet kHelloTags = {kTagProcessId, kTagNumProcesses, kTagFingerprint, kTagCoordinator,
                           kTagNumProcessesSource, kTagCoordinatorSource, kTagJaxVersion,
                           kTagHost, kTagPid, kTagToken};
constexpr TagSet kReplyTags = {kTagCode, kTagMessage, kTagHost, kTagPid, kTagJaxVersion,
                           kTagSeed, kTagLivenessPort, kTagLivenessNonce};

constexpr std::string_view kChannel = "roll call";

}  // namespace

std::string EncodeHello(const Hello& hello) {
  FieldWriter w;
  w.Integer(kTagProcessId, hello.process_id);
  w.Integer(kTagNumProcesses, hello.num_processes);
  w.String(kTagFingerprint, hello.fingerprint, kMaxShortFieldBytes);
  w.String(kTagCoordinator, hello.coordinator, kMaxShortFieldBytes);
  w.String(kTagNumProcessesSource, hello.num_processes_source, kMaxShortFieldBytes);
  w.String(kTagCoordinatorSource, hello.coordinator_source, kMaxShortFieldBytes);
  w.String(kTagJaxVersion, hello.jax_version, kMaxShortFieldBytes);
  w.String(kTagHost, hello.host, kMaxHostBytes);
  w.Integer(kTagPid, hello.pid);
  if (!hello.token.empty()) w.String(kTagToken, hello.token, kMaxTokenBytes);
  return w.Frame(static_cast<uint16_t>(FrameType::kHello));
}

std::string EncodeReply(const Reply& reply) {
  FieldWriter w;
  w.Integer(kTagCode, static_cast<int64_t>(reply.code));
  w.String(kTagMessage, reply.message, kMaxMessageBytes);
  w.String(kTagHost, reply.host, kMaxHostBytes);
  w.Integer(kTagPid, reply.pid);
  w.String(kTagJaxVersion, reply.jax_version, kMaxShortFieldBytes);
  if (reply.type == FrameType::kGo) {
    w.Integer(kTagSeed, reply.shared.seed);
    if (reply.shared.liveness_port != 0) {
      w.Integer(kTagLivenessPort, reply.shared.liveness_port);
      w.String(kTagLivenessNonce, reply.shared.liveness_nonce, kMaxTokenBytes);
    }
  }
  return w.Frame(static_cast<uint16_t>(reply.type));
}

Result<Hello> DecodeHello(std::string_view frame) {
  KDIST_ASSIGN_OR_RETURN(const std::string_view payload,
                         FramePayload(frame, static_cast<uint16_t>(FrameType::kHello), kChannel));
  Hello hello;
  KDIST_ASSIGN_OR_RETURN(const TagSet seen, ReadFields(payload, kHelloTags, [&](const Field& f) {
    switch (f.tag) {
      case kTagProcessId: return ReadInteger(f, "process_id", hello.process_id);
      case kTagNumProcesses: return ReadInteger(f, "num_processes", hello.num_processes);
      case kTagFingerprint:
        return ReadString(f, kMaxShortFieldBytes, "fingerprint", hello.fingerprint);
      case kTagCoordinator:
        return ReadString(f, kMaxShortFieldBytes, "coordinator", hello.coordinator);
      case kTagNumProcessesSource:
        return ReadString(f, kMaxShortFieldBytes, "num_processes_source",
                          hello.num_processes_source);
      case kTagCoordinatorSource:
        return ReadString(f, kMaxShortFieldBytes, "coordinator_source", hello.coordinator_source);
      case kTagJaxVersion:
        return ReadString(f, kMaxShortFieldBytes, "jax_version", hello.jax_version);
      case kTagHost: return ReadString(f, kMaxHostBytes, "host", hello.host);
      case kTagPid: return ReadInteger(f, "pid", hello.pid);
      case kTagToken: return ReadString(f, kMaxTokenBytes, "token", hello.token);
      default: return Status::Ok();
    }
  }));
  const std::pair<Tag, const char*> required[] = {
      {kTagProcessId, "process_id"}, {kTagNumProcesses, "num_processes"},
      {kTagFingerprint, "fingerprint"}, {kTagCoordinator, "coordinator"},
      {kTagHost, "host"}, {kTagPid, "pid"}};
  for (const auto& [tag, name] : required) {
    if (!seen.Has(tag)) return InvalidArgument(std::string("the hello has no ") + name + " field");
  }
  return hello;
}

Result<Reply> DecodeReply(std::string_view frame) {
  KDIST_ASSIGN_OR_RETURN(const FrameHeader header, DecodeFrameHeader(frame));
  const uint16_t type = header.type;
  if (type != static_cast<uint16_t>(FrameType::kGo) &&
      type != static_cast<uint16_t>(FrameType::kReject) &&
      type != static_cast<uint16_t>(FrameType::kStatus)) {
    return InvalidArgument("frame type " + std::to_string(type) + " is not a reply");
  }
  Reply reply;
  reply.type = static_cast<FrameType>(type);
  KDIST_ASSIGN_OR_RETURN(const std::string_view payload, FramePayload(frame, type, kChannel));
  int64_t code = 0;
  KDIST_ASSIGN_OR_RETURN(const TagSet seen, ReadFields(payload, kReplyTags, [&](const Field& f) {
    switch (f.tag) {
      case kTagCode: return ReadInteger(f, "code", code);
      case kTagMessage: return ReadString(f, kMaxMessageBytes, "message", reply.message);
      case kTagHost: return ReadString(f, kMaxHostBytes, "host", reply.host);
      case kTagPid: return ReadInteger(f, "pid", reply.pid);
      case kTagJaxVersion:
        return ReadString(f, kMaxShortFieldBytes, "jax_version", reply.jax_version);
      case kTagSeed: return ReadInteger(f, "seed", reply.shared.seed);
      case kTagLivenessPort: {
        KDIST_RETURN_IF_ERROR(ReadInteger(f, "liveness_port", reply.shared.liveness_port));
        if (reply.shared.liveness_port < 1 || reply.shared.liveness_port > 65535) {
          return InvalidArgument("the go reply's liveness port " +
                                 std::to_string(reply.shared.liveness_port) +
                                 " is outside 1-65535");
        }
        return Status::Ok();
      }
      case kTagLivenessNonce:
        return ReadString(f, kMaxTokenBytes, "liveness_nonce", reply.shared.liveness_nonce);
      default: return Status::Ok();
    }
  }));
  if (code < 0 || code > static_cast<int64_t>(StatusCode::kInternal)) {
    return InvalidArgument("the reply carries status code " + std::to_string(code) +
                           ", which is not a known code");
  }
  reply.code = static_cast<StatusCode>(code);
  if (reply.type == FrameType::kReject && reply.code == StatusCode::kOk) {
    return InvalidArgument("a reject reply carries no failure code");
  }
  if (reply.type == FrameType::kGo && !seen.Has(kTagSeed)) {
    return InvalidArgument("a go reply carries no seed field");
  }
  return reply;
}

}  // namespace kdist
