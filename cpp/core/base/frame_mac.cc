#include "base/frame_mac.h"

#include "base/wire.h"

namespace kdist {

std::string FrameMac(std::string_view token, const Nonce& nonce, std::string_view mac_input) {
  HmacSha256 mac(token);
  mac.Update(std::string_view(reinterpret_cast<const char*>(nonce.data()), nonce.size()));
  mac.Update(mac_input);
  return std::string(DigestBytes(mac.Finish()));
}

Result<std::string> FrameMacInput(std::string_view frame) {
  KDIST_ASSIGN_OR_RETURN(const FrameHeader header, DecodeFrameHeader(frame));
  if (frame.size() != header.frame_size()) {
    return InvalidArgument("the frame is " + std::to_string(frame.size()) +
                           " bytes but its header announces " +
                           std::to_string(header.frame_size()));
  }
  const std::string_view payload = frame.substr(kFrameHeaderSize);
  // The MAC field (tag, 2-byte length, value) is cut out wherever it stands.
  size_t cut_from = payload.size(), cut_to = payload.size();
  KDIST_RETURN_IF_ERROR(ReadFields(payload, TagSet{kTagFrameMac}, [&](const Field& f) {
                          cut_to = static_cast<size_t>(f.value.data() - payload.data()) +
                                   f.value.size();
                          cut_from = cut_to - f.value.size() - 3;
                          return Status::Ok();
                        }).status());
  std::string kept(payload.substr(0, cut_from));
  kept += payload.substr(cut_to);
  std::string out(frame.substr(0, kFrameHeaderSize - 4));
  const uint32_t size = static_cast<uint32_t>(kept.size());
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((size >> shift) & 0xff);
  return out + kept;
}

}  // namespace kdist
