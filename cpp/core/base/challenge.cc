#include "base/challenge.h"

#include "base/wire.h"

namespace kdist {
namespace {

constexpr uint8_t kTagChallengeNonce = 16;
constexpr TagSet kChallengeTags = {kTagChallengeNonce};

}  // namespace

std::string EncodeChallenge(const Challenge& challenge) {
  FieldWriter w;
  w.String(kTagChallengeNonce,
           std::string_view(reinterpret_cast<const char*>(challenge.nonce.data()),
                            challenge.nonce.size()),
           kNonceBytes);
  return w.Frame(static_cast<uint16_t>(FrameType::kChallenge));
}

Result<Challenge> DecodeChallenge(std::string_view frame, std::string_view channel) {
  KDIST_ASSIGN_OR_RETURN(
      const std::string_view payload,
      FramePayload(frame, static_cast<uint16_t>(FrameType::kChallenge), channel));
  Challenge challenge;
  KDIST_ASSIGN_OR_RETURN(const TagSet seen, ReadFields(payload, kChallengeTags, [&](const Field& f) {
    if (f.value.size() != kNonceBytes) {
      return InvalidArgument("field nonce is " + std::to_string(f.value.size()) +
                             " bytes; expected " + std::to_string(kNonceBytes));
    }
    for (size_t i = 0; i < kNonceBytes; ++i) challenge.nonce[i] = static_cast<uint8_t>(f.value[i]);
    return Status::Ok();
  }));
  if (!seen.Has(kTagChallengeNonce)) return InvalidArgument("the challenge has no nonce field");
  return challenge;
}

std::string EncodeOpening() {
  return FieldWriter().Frame(static_cast<uint16_t>(FrameType::kOpening));
}

bool IsOpening(std::string_view frame) {
  Result<FrameHeader> header = DecodeFrameHeader(frame);
  return header.ok() && header->version == kProtocolVersion &&
         header->type == static_cast<uint16_t>(FrameType::kOpening) &&
         frame.size() == header->frame_size();
}

}  // namespace kdist
