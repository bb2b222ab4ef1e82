#include "liveness/liveness_wire.h"

#include "base/wire_tags.h"

namespace kdist {
namespace {

// The liveness channel's own field tags (the shared ones: base/wire_tags.h). The
// same numbers mean other fields in the roll call's frames.
enum LiveTag : uint8_t {
  kLiveTagNonce = 10,    // the join's: the nonce "go" carried
  kLiveTagKind = 16,     // the notice's: a LiveKind
  kLiveTagBarrier = 17,  // the notice's: kAllDone's barrier, 0 or 1
  kLiveTagStep = 18,     // the notice's, from here on: see LiveNotice
  kLiveTagSignal = 19,
  kLiveTagIndex = 20,
  kLiveTagName = 21,
  kLiveTagMillis = 22,
  kLiveTagCode = 23,
  kLiveTagAddress = 24,
  kLiveTagSince = 25,
  kLiveTagArmed = 26,
};

constexpr size_t kMaxBarrierNameBytes = 256;

constexpr size_t kMaxNonceBytes = 128;

constexpr TagSet kJoinTags = {kTagProcessId, kLiveTagNonce, kTagHost, kTagPid};
constexpr TagSet kNoticeTags = {kLiveTagKind,   kTagProcessId,  kTagHost,      kTagPid,
                                kTagMessage,    kLiveTagBarrier, kLiveTagStep,  kLiveTagSignal,
                                kLiveTagIndex,  kLiveTagName,   kLiveTagMillis, kLiveTagCode,
                                kLiveTagAddress, kLiveTagSince, kLiveTagArmed};

constexpr std::string_view kChannel = "liveness";

}  // namespace

const char* LiveKindName(LiveKind kind) {
  switch (kind) {
    case LiveKind::kFailed: return "failed";
    case LiveKind::kDied: return "died";
    case LiveKind::kFinished: return "finished";
    case LiveKind::kLeft: return "left";
    case LiveKind::kAllDone: return "all done";
    case LiveKind::kAdmitted: return "admitted";
    case LiveKind::kArmed: return "armed";
    case LiveKind::kStopRequest: return "stop request";
    case LiveKind::kStopQuery: return "stop query";
    case LiveKind::kStopStep: return "stop step";
    case LiveKind::kStopAt: return "stop at";
    case LiveKind::kStopNow: return "stopped";
    case LiveKind::kStalled: return "stalled";
    case LiveKind::kProgressQuery: return "progress query";
    case LiveKind::kProgressReport: return "progress report";
    case LiveKind::kDumpStacks: return "dump stacks";
    case LiveKind::kStacksDumped: return "stacks dumped";
    case LiveKind::kJobStalled: return "job stalled";
    case LiveKind::kBarrierArrive: return "barrier arrival";
    case LiveKind::kBarrierDone: return "barrier done";
    case LiveKind::kUnreachable: return "unreachable";
  }
  return "unknown";
}

std::string EncodeLiveJoin(const LiveJoin& join) {
  FieldWriter w;
  w.Integer(kTagProcessId, join.process_id);
  w.String(kLiveTagNonce, join.nonce, kMaxNonceBytes);
  w.String(kTagHost, join.host, kMaxHostBytes);
  w.Integer(kTagPid, join.pid);
  return w.Frame(kFrameLiveJoin);
}

std::string EncodeLiveNotice(const LiveNotice& notice) {
  FieldWriter w;
  w.Integer(kLiveTagKind, static_cast<int64_t>(notice.kind));
  w.Integer(kTagProcessId, notice.process_id);
  w.String(kTagHost, notice.host, kMaxHostBytes);
  w.Integer(kTagPid, notice.pid);
  w.String(kTagMessage, notice.message, kMaxMessageBytes);
  w.Integer(kLiveTagBarrier, notice.barrier ? 1 : 0);
  if (notice.step != -1) w.Integer(kLiveTagStep, notice.step);
  if (notice.signal_number != 0) w.Integer(kLiveTagSignal, notice.signal_number);
  if (notice.index != 0) w.Integer(kLiveTagIndex, notice.index);
  if (!notice.name.empty()) w.String(kLiveTagName, notice.name, kMaxBarrierNameBytes);
  if (notice.millis != 0) w.Integer(kLiveTagMillis, notice.millis);
  if (notice.code != 0) w.Integer(kLiveTagCode, notice.code);
  if (!notice.address.empty()) w.String(kLiveTagAddress, notice.address, kMaxHostBytes);
  if (notice.since_unix_millis != 0) w.Integer(kLiveTagSince, notice.since_unix_millis);
  if (notice.armed) w.Integer(kLiveTagArmed, 1);
  return w.Frame(kFrameLiveNotice);
}

Result<LiveJoin> DecodeLiveJoin(std::string_view frame) {
  KDIST_ASSIGN_OR_RETURN(const std::string_view payload,
                         FramePayload(frame, kFrameLiveJoin, kChannel));
  LiveJoin join;
  KDIST_ASSIGN_OR_RETURN(const TagSet seen, ReadFields(payload, kJoinTags, [&](const Field& f) {
    switch (f.tag) {
      case kTagProcessId: return ReadInteger(f, "process_id", join.process_id);
      case kLiveTagNonce: return ReadString(f, kMaxNonceBytes, "nonce", join.nonce);
      case kTagHost: return ReadString(f, kMaxHostBytes, "host", join.host);
      case kTagPid: return ReadInteger(f, "pid", join.pid);
      default: return Status::Ok();
    }
  }));
  if (!seen.Has(kTagProcessId) || !seen.Has(kLiveTagNonce)) {
    return InvalidArgument("a liveness join lacks its process id or nonce");
  }
  return join;
}

Result<LiveNotice> DecodeLiveNotice(std::string_view frame) {
  KDIST_ASSIGN_OR_RETURN(const std::string_view payload,
                         FramePayload(frame, kFrameLiveNotice, kChannel));
  LiveNotice notice;
  int64_t kind = 0, barrier = 1, armed = 0;
  KDIST_ASSIGN_OR_RETURN(const TagSet seen, ReadFields(payload, kNoticeTags, [&](const Field& f) {
    switch (f.tag) {
      case kLiveTagKind: return ReadInteger(f, "kind", kind);
      case kTagProcessId: return ReadInteger(f, "process_id", notice.process_id);
      case kTagHost: return ReadString(f, kMaxHostBytes, "host", notice.host);
      case kTagPid: return ReadInteger(f, "pid", notice.pid);
      case kTagMessage: return ReadString(f, kMaxMessageBytes, "message", notice.message);
      case kLiveTagBarrier: return ReadInteger(f, "barrier", barrier);
      case kLiveTagStep: return ReadInteger(f, "step", notice.step);
      case kLiveTagSignal: return ReadInteger(f, "signal", notice.signal_number);
      case kLiveTagIndex: return ReadInteger(f, "index", notice.index);
      case kLiveTagName: return ReadString(f, kMaxBarrierNameBytes, "name", notice.name);
      case kLiveTagMillis: return ReadInteger(f, "millis", notice.millis);
      case kLiveTagCode: return ReadInteger(f, "code", notice.code);
      case kLiveTagAddress: return ReadString(f, kMaxHostBytes, "address", notice.address);
      case kLiveTagSince: return ReadInteger(f, "since", notice.since_unix_millis);
      case kLiveTagArmed: return ReadInteger(f, "armed", armed);
      default: return Status::Ok();
    }
  }));
  if (!seen.Has(kLiveTagKind)) return InvalidArgument("a liveness notice lacks its kind");
  if (kind < static_cast<int64_t>(LiveKind::kFailed) ||
      kind > static_cast<int64_t>(LiveKind::kUnreachable)) {
    return InvalidArgument("a liveness notice has unknown kind " + std::to_string(kind));
  }
  notice.kind = static_cast<LiveKind>(kind);
  notice.barrier = barrier != 0;
  notice.armed = armed != 0;
  return notice;
}

}  // namespace kdist
