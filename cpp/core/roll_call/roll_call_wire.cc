#include "roll_call/roll_call_wire.h"

#include <utility>

#include "base/wire_tags.h"

namespace kdist {
namespace {

// The roll call's own field tags (the ones the liveness channel shares:
// base/wire_tags.h). Hello and Reply share the integer space; each decoder knows
// its own. The liveness channel's frames use some of these numbers for other
// fields (10, 16, 17).
enum RollCallTag : uint8_t {
  kTagNumProcesses = 2,
  kTagFingerprint = 3,
  kTagCoordinator = 4,
  kTagNumProcessesSource = 5,
  kTagCoordinatorSource = 6,
  kTagJaxVersion = 7,
  kTagMac = kTagFrameMac,  // base/frame_mac.h (in version 2: the token, in clear)
  kTagCode = 11,
  kTagSeed = 13,
  kTagLivenessPort = 14,
  kTagLivenessNonce = 15,
  kTagEnvironment = 17,
  kTagConsistencyNotes = 18,
};

// The tags each message knows; others are skipped.
constexpr TagSet kHelloTags = {kTagProcessId, kTagNumProcesses, kTagFingerprint, kTagCoordinator,
                           kTagNumProcessesSource, kTagCoordinatorSource, kTagJaxVersion,
                           kTagHost, kTagPid, kTagMac, kTagEnvironment};
constexpr TagSet kReplyTags = {kTagCode, kTagMessage, kTagHost, kTagPid, kTagJaxVersion,
                           kTagSeed, kTagLivenessPort, kTagLivenessNonce, kTagConsistencyNotes};

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
  if (!hello.environment.empty()) {
    w.String(kTagEnvironment, hello.environment, kMaxEnvironmentBytes);
  }
  // Last, so that the frame without it is the frame of the same hello without a MAC.
  if (!hello.mac.empty()) w.String(kTagMac, hello.mac, kMacBytes);
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
    if (!reply.shared.consistency_notes.empty()) {
      w.String(kTagConsistencyNotes, reply.shared.consistency_notes, kMaxConsistencyNotesBytes);
    }
  }
  return w.Frame(static_cast<uint16_t>(reply.type));
}

std::string EncodeSignedHello(Hello hello, const Nonce& nonce) {
  hello.mac.clear();
  if (hello.token.empty()) return EncodeHello(hello);
  hello.mac = FrameMac(hello.token, nonce, EncodeHello(hello));
  return EncodeHello(hello);
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
      case kTagMac:
        if (f.value.size() != kMacBytes) {
          return InvalidArgument("field mac is " + std::to_string(f.value.size()) +
                                 " bytes; expected " + std::to_string(kMacBytes));
        }
        hello.mac.assign(f.value);
        return Status::Ok();
      case kTagEnvironment:
        return ReadString(f, kMaxEnvironmentBytes, "environment", hello.environment);
      default: return Status::Ok();
    }
  }));
  const std::pair<uint8_t, const char*> required[] = {
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
      case kTagConsistencyNotes:
        return ReadString(f, kMaxConsistencyNotesBytes, "consistency_notes",
                          reply.shared.consistency_notes);
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
