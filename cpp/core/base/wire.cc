#include "base/wire.h"

#include "base/text.h"

namespace kdist {
namespace {

void PutBigEndian(std::string& out, uint64_t value, int bytes) {
  for (int shift = 8 * (bytes - 1); shift >= 0; shift -= 8) {
    out += static_cast<char>((value >> shift) & 0xff);
  }
}

uint64_t GetBigEndian(std::string_view bytes) {
  uint64_t value = 0;
  for (unsigned char c : bytes) value = (value << 8) | c;
  return value;
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

Result<std::string_view> FramePayload(std::string_view frame, uint16_t type,
                                      std::string_view channel) {
  KDIST_ASSIGN_OR_RETURN(const FrameHeader header, DecodeFrameHeader(frame));
  if (header.version != kProtocolVersion) {
    return FailedPrecondition("it speaks kdist " + std::string(channel) + " protocol version " +
                              std::to_string(header.version) + ", this process speaks version " +
                              std::to_string(kProtocolVersion) +
                              "; install the same kdist version in every process of the job");
  }
  if (frame.size() != header.frame_size()) {
    return InvalidArgument("the frame is " + std::to_string(frame.size()) +
                           " bytes but its header announces " +
                           std::to_string(header.frame_size()));
  }
  if (header.type != type) {
    return InvalidArgument("expected " + std::string(channel) + " frame type " +
                           std::to_string(type) + ", received frame type " +
                           std::to_string(header.type));
  }
  return frame.substr(kFrameHeaderSize);
}

void FieldWriter::String(uint8_t tag, std::string_view value, size_t limit) {
  if (value.size() > limit) value = value.substr(0, limit);
  payload_ += static_cast<char>(tag);
  PutBigEndian(payload_, value.size(), 2);
  payload_ += value;
}

void FieldWriter::Integer(uint8_t tag, int64_t value) {
  payload_ += static_cast<char>(tag);
  PutBigEndian(payload_, 8, 2);
  PutBigEndian(payload_, static_cast<uint64_t>(value), 8);
}

std::string FieldWriter::Frame(uint16_t type) const {
  std::string out(kFrameMagic);
  PutBigEndian(out, kProtocolVersion, 2);
  PutBigEndian(out, type, 2);
  PutBigEndian(out, payload_.size(), 4);
  return out + payload_;
}

Result<TagSet> ReadFields(std::string_view payload, const TagSet& known,
                          const std::function<Status(const Field&)>& on_field) {
  TagSet seen;
  std::string_view rest = payload;
  while (!rest.empty()) {
    if (rest.size() < 3) {
      return InvalidArgument("a field header is cut off after " + std::to_string(rest.size()) +
                             " bytes");
    }
    const uint8_t tag = static_cast<uint8_t>(rest[0]);
    const size_t size = GetBigEndian(rest.substr(1, 2));
    rest.remove_prefix(3);
    if (size > rest.size()) {
      return InvalidArgument("field " + std::to_string(tag) + " claims " + std::to_string(size) +
                             " bytes but only " + std::to_string(rest.size()) + " remain");
    }
    const Field field{tag, rest.substr(0, size)};
    rest.remove_prefix(size);
    if (!known.Has(tag)) continue;  // a later version's field: skip
    if (seen.Has(tag)) return InvalidArgument("field " + std::to_string(tag) + " appears twice");
    seen.Add(tag);
    KDIST_RETURN_IF_ERROR(on_field(field));
  }
  return seen;
}

Status ReadInteger(const Field& field, const char* name, int64_t& out) {
  if (field.value.size() != 8) {
    return InvalidArgument(std::string("field ") + name + " is " +
                           std::to_string(field.value.size()) + " bytes; expected 8");
  }
  out = static_cast<int64_t>(GetBigEndian(field.value));
  return Status::Ok();
}

Status ReadString(const Field& field, size_t limit, const char* name, std::string& out) {
  if (field.value.size() > limit) {
    return InvalidArgument(std::string("field ") + name + " is " +
                           std::to_string(field.value.size()) + " bytes, over its limit of " +
                           std::to_string(limit));
  }
  out.assign(field.value);
  return Status::Ok();
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
