// The first two frames of every connection that proves a token (the roll call's,
// the nodes' rendezvous's), in the framing of base/wire.h:
//
//   client -> server   opening     no fields: only the protocol version, so that a
//                                  server of another version answers at once
//   server -> client   challenge   one field, a fresh 16-byte nonce (tag 16): the
//                                  client signs its frames over it (base/frame_mac.h)
//
// Everything here is a pure function of its bytes.
#ifndef KDIST_BASE_CHALLENGE_H_
#define KDIST_BASE_CHALLENGE_H_

#include <string>
#include <string_view>

#include "base/hmac_sha256.h"
#include "base/status.h"

namespace kdist {

// The server's first frame on a connection.
struct Challenge {
  Nonce nonce{};
};

std::string EncodeChallenge(const Challenge& challenge);
// kInvalidArgument for anything malformed, kFailedPrecondition for another protocol
// version; `channel` names the protocol in the message ("roll call").
Result<Challenge> DecodeChallenge(std::string_view frame, std::string_view channel);

std::string EncodeOpening();
// Whether `frame` (a whole frame) is an opening of this protocol version.
bool IsOpening(std::string_view frame);

}  // namespace kdist

#endif  // KDIST_BASE_CHALLENGE_H_
