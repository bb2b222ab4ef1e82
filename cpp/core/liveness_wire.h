// The liveness channel's messages (liveness_hub.h, liveness_spoke.h): the
// join a process sends to process 0, and the notices that travel either way,
// in the framing the roll call also uses (wire.h): the 12-byte header with
// types kFrameLiveJoin and kFrameLiveNotice (declared in wire.h), then tagged
// fields.
//
// Events (a LiveNotice):
//   a process -> process 0: "I failed: <message>", "I finished" (and whether
//     it goes through JAX's shutdown barrier, or leaves without it);
//   process 0 -> every process: "process N failed first: ...", "process N
//     died", "every process finished"; and to a joining process: "admitted".
//
// Everything here is a pure function of its bytes: decoding must survive any
// input (fuzz/liveness/liveness_fuzz.cc feeds it anything) and never reads
// past what it was given.
#ifndef KDIST_LIVENESS_WIRE_H_
#define KDIST_LIVENESS_WIRE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "status.h"
#include "wire.h"

namespace kdist {

// A process asking process 0 to be watched.
struct LiveJoin {
  int64_t process_id = 0;
  std::string nonce;  // from "go"
  std::string host;
  int64_t pid = 0;
};

enum class LiveKind : int64_t {
  kFailed = 1,     // an uncaught exception; `message` says which
  kDied = 2,       // its connection closed without a finish message
  kFinished = 3,   // its work is done; it goes through JAX's shutdown barrier
  kLeft = 4,       // its work is done; it leaves without JAX's barrier (os._exit)
  kAllDone = 5,    // process 0 -> all: every process finished; `barrier`: all use JAX's
  kAdmitted = 6,   // process 0 -> a joining process: you are watched
};
const char* LiveKindName(LiveKind kind);

struct LiveNotice {
  LiveKind kind = LiveKind::kFailed;
  int64_t process_id = 0;  // the process it is about
  std::string host;
  int64_t pid = 0;
  std::string message;     // kFailed: "RuntimeError: injected failure"; kDied: how it ended
  bool barrier = true;     // kAllDone: whether every process goes through JAX's barrier
};

std::string EncodeLiveJoin(const LiveJoin& join);
std::string EncodeLiveNotice(const LiveNotice& notice);
// One whole frame each; kInvalidArgument for anything malformed or of
// another type, kFailedPrecondition for another protocol version.
Result<LiveJoin> DecodeLiveJoin(std::string_view frame);
Result<LiveNotice> DecodeLiveNotice(std::string_view frame);

}  // namespace kdist

#endif  // KDIST_LIVENESS_WIRE_H_
