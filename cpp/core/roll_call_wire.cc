#include "roll_call_wire.h"

#include <optional>

#include "text.h"

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
  kTagMac = 10,  // version 2: the token, in clear
  kTagCode = 11,
  kTagMessage = 12,
  kTagSeed = 13,
  kTagLivenessPort = 14,
  kTagLivenessNonce = 15,
  kTagNonce = 16,  // the challenge's
};

void PutU16(std::string& out, uint16_t value) {
  out += static_cast<char>(value >> 8);
  out += static_cast<char>(value & 0xff);
}

void PutU32(std::string& out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((value >> shift) & 0xff);
}

uint64_t GetBigEndian(std::string_view bytes) {
  uint64_t value = 0;
  for (unsigned char c : bytes) value = (value << 8) | c;
  return value;
}

class Writer {
 public:
  void String(Tag tag, std::string_view value, size_t limit) {
    if (value.size() > limit) value = value.substr(0, limit);
    payload_ += static_cast<char>(tag);
    PutU16(payload_, static_cast<uint16_t>(value.size()));
    payload_ += value;
  }
  void Integer(Tag tag, int64_t value) {
    payload_ += static_cast<char>(tag);
    PutU16(payload_, 8);
    const uint64_t bits = static_cast<uint64_t>(value);
    for (int shift = 56; shift >= 0; shift -= 8) {
      payload_ += static_cast<char>((bits >> shift) & 0xff);
    }
  }
  std::string Frame(FrameType type) const {
    std::string out(kFrameMagic);
    PutU16(out, kProtocolVersion);
    PutU16(out, static_cast<uint16_t>(type));
    PutU32(out, static_cast<uint32_t>(payload_.size()));
    return out + payload_;
  }

 private:
  std::string payload_;
};

// One field as it came off the wire.
struct Field {
  uint8_t tag;
  std::string_view value;
};

// Walks the fields of a payload; every read is bounds-checked.
class FieldReader {
 public:
  explicit FieldReader(std::string_view payload) : rest_(payload) {}
  size_t remaining() const { return rest_.size(); }
  // The next field, nullopt at the end; an error status for a truncated field.
  Result<std::optional<Field>> Next() {
    if (rest_.empty()) return std::optional<Field>();
    if (rest_.size() < 3) {
      return InvalidArgument("a field header is cut off after " + std::to_string(rest_.size()) +
                             " bytes");
    }
    const uint8_t tag = static_cast<uint8_t>(rest_[0]);
    const size_t size = GetBigEndian(rest_.substr(1, 2));
    rest_.remove_prefix(3);
    if (size > rest_.size()) {
      return InvalidArgument("field " + std::to_string(tag) + " claims " + std::to_string(size) +
                             " bytes but only " + std::to_string(rest_.size()) + " remain");
    }
    Field field{tag, rest_.substr(0, size)};
    rest_.remove_prefix(size);
    return std::optional<Field>(field);
  }

 private:
  std::string_view rest_;
};

// Tracks which known tags were seen, so duplicates and missing fields are errors.
class Seen {
 public:
  Status Mark(uint8_t tag) {
    const uint64_t bit = uint64_t{1} << (tag & 63);
    if (mask_ & bit) return InvalidArgument("field " + std::to_string(tag) + " appears twice");
    mask_ |= bit;
    return Status::Ok();
  }
  bool Has(uint8_t tag) const { return (mask_ >> (tag & 63)) & 1; }

 private:
  uint64_t mask_ = 0;
};

Status ReadString(const Field& field, size_t limit, const char* name, std::string& out) {
  if (field.value.size() > limit) {
    return InvalidArgument(std::string("field ") + name + " is " +
                           std::to_string(field.value.size()) + " bytes, over its limit of " +
                           std::to_string(limit));
  }
  out.assign(field.value);
  return Status::Ok();
}

Status ReadInteger(const Field& field, const char* name, int64_t& out) {
  if (field.value.size() != 8) {
    return InvalidArgument(std::string("field ") + name + " is " +
                           std::to_string(field.value.size()) + " bytes; expected 8");
  }
  out = static_cast<int64_t>(GetBigEndian(field.value));
  return Status::Ok();
}

// Checks a whole frame's version, size and type against its header (from
// DecodeFrameHeader(frame)) and returns its payload.
Result<std::string_view> Payload(std::string_view frame, const FrameHeader& header,
                                 FrameType want) {
  if (header.version != kProtocolVersion) {
    return FailedPrecondition("it speaks kdist rendezvous protocol version " +
                              std::to_string(header.version) + ", this process speaks version " +
                              std::to_string(kProtocolVersion) +
                              "; install the same kdist version in every process of the job");
  }
  if (frame.size() != header.frame_size()) {
    return InvalidArgument("the frame is " + std::to_string(frame.size()) +
                           " bytes but its header announces " +
                           std::to_string(header.frame_size()));
  }
  if (header.type != static_cast<uint16_t>(want)) {
    return InvalidArgument("frame type " + std::to_string(header.type) + " where type " +
                           std::to_string(static_cast<uint16_t>(want)) + " belongs");
  }
  return frame.substr(kFrameHeaderSize);
}

}  // namespace

bool CouldStartFrame(std::string_view prefix) {
  const size_t n = prefix.size() < kFrameMagic.size() ? prefix.size() : kFrameMagic.size();
  return prefix.substr(0, n) == kFrameMagic.substr(0, n);
}

Result<FrameHeader> DecodeFrameHeader(std::string_view bytes) {
  if (bytes.size() < kFrameHeaderSize) {
    return InvalidArgument("only " + std::to_string(bytes.size()) + " bytes of a " +
                           std::to_string(kFrameHeaderSize) + "-byte frame header");
  }
  if (bytes.substr(0, kFrameMagic.size()) != kFrameMagic) {
    return InvalidArgument("it does not start with the kdist magic; received " +
                           Quote(bytes.substr(0, kFrameHeaderSize)));
  }
  FrameHeader header;
  header.version = static_cast<uint16_t>(GetBigEndian(bytes.substr(4, 2)));
  header.type = static_cast<uint16_t>(GetBigEndian(bytes.substr(6, 2)));
  const uint64_t size = GetBigEndian(bytes.substr(8, 4));
  if (size > kMaxFramePayload) {
    return InvalidArgument("its frame announces " + std::to_string(size) +
                           " bytes, over the limit of " + std::to_string(kMaxFramePayload));
  }
  header.payload_size = static_cast<uint32_t>(size);
  return header;
}

std::string EncodeHello(const Hello& hello) {
  Writer w;
  w.Integer(kTagProcessId, hello.process_id);
  w.Integer(kTagNumProcesses, hello.num_processes);
  w.String(kTagFingerprint, hello.fingerprint, kMaxShortFieldBytes);
  w.String(kTagCoordinator, hello.coordinator, kMaxShortFieldBytes);
  w.String(kTagNumProcessesSource, hello.num_processes_source, kMaxShortFieldBytes);
  w.String(kTagCoordinatorSource, hello.coordinator_source, kMaxShortFieldBytes);
  w.String(kTagJaxVersion, hello.jax_version, kMaxShortFieldBytes);
  w.String(kTagHost, hello.host, kMaxHostBytes);
  w.Integer(kTagPid, hello.pid);
  // Last, so that the frame without it is the frame of the same hello without a MAC.
  if (!hello.mac.empty()) w.String(kTagMac, hello.mac, kMacBytes);
  return w.Frame(FrameType::kHello);
}

std::string EncodeChallenge(const Challenge& challenge) {
  Writer w;
  w.String(kTagNonce, std::string_view(reinterpret_cast<const char*>(challenge.nonce.data()),
                                       challenge.nonce.size()),
           kNonceBytes);
  return w.Frame(FrameType::kChallenge);
}

std::string EncodeOpening() { return Writer().Frame(FrameType::kOpening); }

bool IsOpening(std::string_view frame) {
  Result<FrameHeader> header = DecodeFrameHeader(frame);
  return header.ok() && header->version == kProtocolVersion &&
         header->type == static_cast<uint16_t>(FrameType::kOpening) &&
         frame.size() == header->frame_size();
}

std::string HelloMac(std::string_view token, const Nonce& nonce, std::string_view mac_input) {
  HmacSha256 mac(token);
  mac.Update(std::string_view(reinterpret_cast<const char*>(nonce.data()), nonce.size()));
  mac.Update(mac_input);
  return std::string(DigestBytes(mac.Finish()));
}

std::string EncodeSignedHello(Hello hello, const Nonce& nonce) {
  hello.mac.clear();
  if (hello.token.empty()) return EncodeHello(hello);
  hello.mac = HelloMac(hello.token, nonce, EncodeHello(hello));
  return EncodeHello(hello);
}

Result<std::string> HelloMacInput(std::string_view frame) {
  Result<FrameHeader> header = DecodeFrameHeader(frame);
  if (!header.ok()) return header.status();
  if (frame.size() != header->frame_size()) {
    return InvalidArgument("the frame is " + std::to_string(frame.size()) +
                           " bytes but its header announces " +
                           std::to_string(header->frame_size()));
  }
  const std::string_view payload = frame.substr(kFrameHeaderSize);
  std::string kept;
  kept.reserve(payload.size());
  FieldReader reader(payload);
  while (true) {
    const size_t start = payload.size() - reader.remaining();
    Result<std::optional<Field>> next = reader.Next();
    if (!next.ok()) return next.status();
    if (!next->has_value()) break;
    const size_t end = payload.size() - reader.remaining();
    if ((*next)->tag != kTagMac) kept += payload.substr(start, end - start);
  }
  std::string out(frame.substr(0, kFrameHeaderSize - 4));
  PutU32(out, static_cast<uint32_t>(kept.size()));
  return out + kept;
}

std::string EncodeReply(const Reply& reply) {
  Writer w;
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
  return w.Frame(reply.type);
}

Result<Hello> DecodeHello(std::string_view frame) {
  Result<FrameHeader> header = DecodeFrameHeader(frame);
  if (!header.ok()) return header.status();
  Result<std::string_view> payload = Payload(frame, *header, FrameType::kHello);
  if (!payload.ok()) return payload.status();
  FieldReader reader(*payload);
  Seen seen;
  Hello hello;
  while (true) {
    Result<std::optional<Field>> next = reader.Next();
    if (!next.ok()) return next.status();
    if (!next->has_value()) break;
    const Field& f = **next;
    if (f.tag < kTagProcessId || f.tag > kTagMac) continue;  // unknown: skip
    KDIST_RETURN_IF_ERROR(seen.Mark(f.tag));
    switch (f.tag) {
      case kTagProcessId: KDIST_RETURN_IF_ERROR(ReadInteger(f, "process_id", hello.process_id)); break;
      case kTagNumProcesses:
        KDIST_RETURN_IF_ERROR(ReadInteger(f, "num_processes", hello.num_processes));
        break;
      case kTagFingerprint:
        KDIST_RETURN_IF_ERROR(ReadString(f, kMaxShortFieldBytes, "fingerprint", hello.fingerprint));
        break;
      case kTagCoordinator:
        KDIST_RETURN_IF_ERROR(ReadString(f, kMaxShortFieldBytes, "coordinator", hello.coordinator));
        break;
      case kTagNumProcessesSource:
        KDIST_RETURN_IF_ERROR(ReadString(f, kMaxShortFieldBytes, "num_processes_source",
                                         hello.num_processes_source));
        break;
      case kTagCoordinatorSource:
        KDIST_RETURN_IF_ERROR(ReadString(f, kMaxShortFieldBytes, "coordinator_source",
                                         hello.coordinator_source));
        break;
      case kTagJaxVersion:
        KDIST_RETURN_IF_ERROR(ReadString(f, kMaxShortFieldBytes, "jax_version", hello.jax_version));
        break;
      case kTagHost: KDIST_RETURN_IF_ERROR(ReadString(f, kMaxHostBytes, "host", hello.host)); break;
      case kTagPid: KDIST_RETURN_IF_ERROR(ReadInteger(f, "pid", hello.pid)); break;
      case kTagMac:
        if (f.value.size() != kMacBytes) {
          return InvalidArgument("field mac is " + std::to_string(f.value.size()) +
                                 " bytes; expected " + std::to_string(kMacBytes));
        }
        hello.mac.assign(f.value);
        break;
      default: break;
    }
  }
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
  Result<FrameHeader> header = DecodeFrameHeader(frame);
  if (!header.ok()) return header.status();
  const uint16_t type = header->type;
  if (type != static_cast<uint16_t>(FrameType::kGo) &&
      type != static_cast<uint16_t>(FrameType::kReject) &&
      type != static_cast<uint16_t>(FrameType::kStatus)) {
    return InvalidArgument("frame type " + std::to_string(type) + " is not a reply");
  }
  Reply reply;
  reply.type = static_cast<FrameType>(type);
  Result<std::string_view> payload = Payload(frame, *header, reply.type);
  if (!payload.ok()) return payload.status();
  FieldReader reader(*payload);
  Seen seen;
  int64_t code = 0;
  while (true) {
    Result<std::optional<Field>> next = reader.Next();
    if (!next.ok()) return next.status();
    if (!next->has_value()) break;
    const Field& f = **next;
    switch (f.tag) {
      case kTagCode:
        KDIST_RETURN_IF_ERROR(seen.Mark(f.tag));
        KDIST_RETURN_IF_ERROR(ReadInteger(f, "code", code));
        break;
      case kTagMessage:
        KDIST_RETURN_IF_ERROR(seen.Mark(f.tag));
        KDIST_RETURN_IF_ERROR(ReadString(f, kMaxMessageBytes, "message", reply.message));
        break;
      case kTagHost:
        KDIST_RETURN_IF_ERROR(seen.Mark(f.tag));
        KDIST_RETURN_IF_ERROR(ReadString(f, kMaxHostBytes, "host", reply.host));
        break;
      case kTagPid:
        KDIST_RETURN_IF_ERROR(seen.Mark(f.tag));
        KDIST_RETURN_IF_ERROR(ReadInteger(f, "pid", reply.pid));
        break;
      case kTagJaxVersion:
        KDIST_RETURN_IF_ERROR(seen.Mark(f.tag));
        KDIST_RETURN_IF_ERROR(ReadString(f, kMaxShortFieldBytes, "jax_version", reply.jax_version));
        break;
      case kTagSeed:
        KDIST_RETURN_IF_ERROR(seen.Mark(f.tag));
        KDIST_RETURN_IF_ERROR(ReadInteger(f, "seed", reply.shared.seed));
        break;
      case kTagLivenessPort:
        KDIST_RETURN_IF_ERROR(seen.Mark(f.tag));
        KDIST_RETURN_IF_ERROR(ReadInteger(f, "liveness_port", reply.shared.liveness_port));
        if (reply.shared.liveness_port < 1 || reply.shared.liveness_port > 65535) {
          return InvalidArgument("the go reply's liveness port " +
                                 std::to_string(reply.shared.liveness_port) +
                                 " is outside 1-65535");
        }
        break;
      case kTagLivenessNonce:
        KDIST_RETURN_IF_ERROR(seen.Mark(f.tag));
        KDIST_RETURN_IF_ERROR(
            ReadString(f, kMaxTokenBytes, "liveness_nonce", reply.shared.liveness_nonce));
        break;
      default: break;  // unknown: skip
    }
  }
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

Result<Challenge> DecodeChallenge(std::string_view frame) {
  Result<FrameHeader> header = DecodeFrameHeader(frame);
  if (!header.ok()) return header.status();
  Result<std::string_view> payload = Payload(frame, *header, FrameType::kChallenge);
  if (!payload.ok()) return payload.status();
  FieldReader reader(*payload);
  Seen seen;
  Challenge challenge;
  while (true) {
    Result<std::optional<Field>> next = reader.Next();
    if (!next.ok()) return next.status();
    if (!next->has_value()) break;
    const Field& f = **next;
    if (f.tag != kTagNonce) continue;  // unknown: skip
    KDIST_RETURN_IF_ERROR(seen.Mark(f.tag));
    if (f.value.size() != kNonceBytes) {
      return InvalidArgument("field nonce is " + std::to_string(f.value.size()) +
                             " bytes; expected " + std::to_string(kNonceBytes));
    }
    for (size_t i = 0; i < kNonceBytes; ++i) challenge.nonce[i] = static_cast<uint8_t>(f.value[i]);
  }
  if (!seen.Has(kTagNonce)) return InvalidArgument("the challenge has no nonce field");
  return challenge;
}

Status FrameAssembler::Check() const {
  if (!CouldStartFrame(buffer_)) {
    return InvalidArgument("it does not start with the kdist magic; received " +
                           Quote(buffer_.substr(0, kFrameHeaderSize)));
  }
  if (buffer_.size() >= kFrameHeaderSize) return DecodeFrameHeader(buffer_).status();
  return Status::Ok();
}

Status FrameAssembler::Append(std::string_view bytes) {
  buffer_.append(bytes.data(), bytes.size());
  return Check();
}

std::string FrameAssembler::TakeFrame() {
  if (buffer_.size() < kFrameHeaderSize) return "";
  Result<FrameHeader> header = DecodeFrameHeader(buffer_);
  if (!header.ok() || buffer_.size() < header->frame_size()) return "";
  std::string frame = buffer_.substr(0, header->frame_size());
  buffer_.erase(0, header->frame_size());
  return frame;
}

}  // namespace kdist
