// The roll call's messages: the hello a process sends to process 0 and the
// replies process 0 sends back, in the framing of wire.h (frame types 1-4).
//
// Everything here is a pure function of its bytes: decoding must survive any
// input (fuzz/roll_call_wire/roll_call_wire_fuzz.cc feeds it anything) and
// never reads past what it was given.
#ifndef KDIST_ROLL_CALL_WIRE_H_
#define KDIST_ROLL_CALL_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "status.h"
#include "wire.h"

namespace kdist {

enum class FrameType : uint16_t {
  kHello = 1,   // process -> process 0: who I am and how I was configured
  kGo = 2,      // process 0 -> all: every process is present, start JAX
  kReject = 3,  // process 0 -> one or all: the roll call failed, with why
  kStatus = 4,  // process 0 -> waiting processes: a progress line
};

// Size limits of the roll call's own string fields, in bytes (host and
// message: wire.h).
inline constexpr size_t kMaxShortFieldBytes = 512;  // fingerprint, addresses, versions, sources
inline constexpr size_t kMaxTokenBytes = 1024;

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
  std::string token;                 // KDIST_ROLL_CALL_TOKEN, empty when unset
};

// What process 0 decides for the whole job and "go" carries to every process.
struct JobShared {
  int64_t seed = 0;  // the job-wide random seed, in [0, 2^32) (Keras's initialize agrees on one)
  // The liveness channel (liveness.h): process 0's hub port (0: none) and the
  // nonce a process presents to be admitted. Optional on the wire.
  int64_t liveness_port = 0;
  std::string liveness_nonce;
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
std::string EncodeHello(const Hello& hello);
std::string EncodeReply(const Reply& reply);

// Decode one whole frame (header included, nothing after it). kInvalidArgument
// for anything malformed, kFailedPrecondition for another protocol version.
Result<Hello> DecodeHello(std::string_view frame);
Result<Reply> DecodeReply(std::string_view frame);

}  // namespace kdist

#endif  // KDIST_ROLL_CALL_WIRE_H_
