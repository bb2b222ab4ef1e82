// The roll call's messages: the hello a process sends to process 0 and the
// replies process 0 sends back, in the framing of base/wire.h (frame types
// FrameType, declared there: 1-4 the hello and the replies).
//
// A process opens every connection with an opening frame (type 6, no fields):
// it says nothing but the protocol version, so that a process 0 of another
// version answers at once with its "install the same kdist version" refusal
// instead of waiting for a hello the process sends only after a challenge.
// Process 0 skips openings of its own version.
//
// The token never travels. Process 0 opens every accepted connection with a
// challenge frame (type 5) whose one field is a fresh 16-byte nonce (tag 16,
// exactly kNonceBytes bytes). A process with KDIST_RENDEZVOUS_TOKEN set reads
// it before it sends its hello, and its hello carries one more field, the MAC
// (tag 10, exactly kMacBytes bytes):
//
//   MAC = HMAC-SHA-256(key = the token's bytes,
//                      message = nonce (16 bytes) || the hello frame without
//                                its MAC field)
//
// where "the hello frame without its MAC field" is the frame exactly as
// received — 12-byte header included — with the 35 bytes of the MAC field
// (tag, length, value) cut out wherever they stand and the header's payload
// length lowered by 35 to match (FrameMacInput, base/frame_mac.h). EncodeHello writes the MAC as
// the last field, so for a hello it encoded these are the bytes EncodeHello
// gives for the same hello with no MAC. A process without a token sends no MAC
// field. Process 0 recomputes the MAC with the nonce it sent on that very
// connection (a hello replayed on another connection does not verify) and
// compares in constant time (MacEqual).
//
// Everything here is a pure function of its bytes: decoding must survive any
// input (fuzz/roll_call_wire/roll_call_wire_fuzz.cc feeds it anything) and
// never reads past what it was given.
#ifndef KDIST_ROLL_CALL_ROLL_CALL_WIRE_H_
#define KDIST_ROLL_CALL_ROLL_CALL_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/challenge.h"  // the opening and the challenge
#include "base/frame_mac.h"  // kMacBytes, FrameMacInput: the hello's MAC
#include "base/hmac_sha256.h"
#include "base/status.h"
#include "base/wire.h"

namespace kdist {

// Size limits of the roll call's own string fields, in bytes (host and
// message: base/wire.h).
inline constexpr size_t kMaxShortFieldBytes = 512;  // fingerprint, addresses, versions, sources
inline constexpr size_t kMaxTokenBytes = 1024;
inline constexpr size_t kMaxEnvironmentBytes = 8192;       // the fingerprint (roll_call/consistency.h)
inline constexpr size_t kMaxConsistencyNotesBytes = 4096;  // "go"'s warnings

struct Hello {
  int64_t process_id = 0;
  int64_t num_processes = 0;
  std::string fingerprint;           // ClusterSpec::Fingerprint()
  std::string coordinator;           // the coordinator address as this process wrote it
  std::string num_processes_source;  // where num_processes came from ("argument", a variable)
  std::string coordinator_source;    // where the coordinator address came from
  std::string jax_version;
  std::string host;                  // host name of the process
  int64_t pid = 0;
  // KDIST_ROLL_CALL_TOKEN, empty when unset. Never encoded: the key of `mac`
  // (EncodeSignedHello) and, in process 0's own hello, of the check.
  std::string token;
  std::string mac;          // on the wire: kMacBytes bytes, or empty (no MAC field)
  std::string environment;  // EncodeFingerprint() of this process (roll_call/consistency.h)
};

// What process 0 decides for the whole job and "go" carries to every process.
struct JobShared {
  int64_t seed = 0;  // the job-wide random seed, in [0, 2^32) (Keras's initialize agrees on one)
  // The liveness channel (liveness/liveness_hub.h): process 0's hub port (0: none) and the
  // nonce a process presents to be admitted. Optional on the wire.
  int64_t liveness_port = 0;
  std::string liveness_nonce;
  // The environment differences process 0 found and let pass (roll_call/consistency.h),
  // one line each; every process warns with them. Optional on the wire.
  std::string consistency_notes;
};

struct Reply {
  FrameType type = FrameType::kGo;       // kGo, kReject or kStatus
  StatusCode code = StatusCode::kOk;     // kReject: the failure's code
  std::string message;                   // kReject: what went wrong; kStatus: a progress line
  std::string host;                      // process 0's host name
  int64_t pid = 0;                       // process 0's pid
  std::string jax_version;               // process 0's JAX version
  JobShared shared;                      // kGo: what the whole job shares
};

// Strings longer than their limit are cut to it, so an encoded frame always
// decodes.
// EncodeHello writes `hello.mac` (when set) as the last field, never the token.
std::string EncodeHello(const Hello& hello);
std::string EncodeReply(const Reply& reply);

// The hello frame a process sends in answer to `nonce`: with a MAC keyed by
// `hello.token` when it has one (any `hello.mac` given is replaced), with no
// MAC field when it has none.
std::string EncodeSignedHello(Hello hello, const Nonce& nonce);

// Decode one whole frame (header included, nothing after it). kInvalidArgument
// for anything malformed, kFailedPrecondition for another protocol version.
Result<Hello> DecodeHello(std::string_view frame);
Result<Reply> DecodeReply(std::string_view frame);

}  // namespace kdist

#endif  // KDIST_ROLL_CALL_ROLL_CALL_WIRE_H_
