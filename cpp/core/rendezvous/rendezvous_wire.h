// The nodes' rendezvous messages (`kdist launch --nodes`): what a machine's agent
// and the rendezvous say to each other, in the framing of base/wire.h (frame types
// kFrameNodeHello, kFrameNodeReply, kFrameNodeReport, declared there).
//
// A connection opens as the roll call's does (roll_call/roll_call_wire.h): the
// agent sends an opening (only its protocol version), the rendezvous answers with
// a challenge (a fresh 16-byte nonce). Then:
//
//   agent -> rendezvous   NodeHello   who this machine is, its environment, its own
//                                     16-byte nonce, a MAC
//   rendezvous -> agent   NodeReply   waiting / admitted / refused / roster / end / stop,
//                                     each with a MAC
//   agent -> rendezvous   NodeReport  how an attempt ended on this machine (or a drain
//                                     notice: this machine is leaving), a MAC
//
// Admission is mutual, and the token never travels. With a token, every frame
// carries a MAC (tag 10, kMacBytes bytes, the last field):
//
//   MAC = HMAC-SHA-256(key = the token,
//                      message = the nonce of the OTHER side || the frame without
//                                its MAC field, header length lowered to match)
//
// (FrameMacInput, HelloMac: roll_call/roll_call_wire.h). An agent's frames are
// signed over the rendezvous's challenge nonce, the rendezvous's over the agent's
// nonce (NodeHello.nonce). Each side numbers its frames on a connection
// (`sequence`, from 1, covered by the MAC), so a frame replayed on the same
// connection is refused as out of order, and one replayed on another does not
// verify. Without a token (a rendezvous on loopback only) no frame carries a MAC.
//
// Everything here is a pure function of its bytes: decoding survives any input
// and never reads past what it was given.
#ifndef KDIST_RENDEZVOUS_RENDEZVOUS_WIRE_H_
#define KDIST_RENDEZVOUS_RENDEZVOUS_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/hmac_sha256.h"
#include "base/status.h"
#include "base/wire.h"
#include "job/job_failure.h"
#include "base/frame_mac.h"

namespace kdist {

// Size limits of the rendezvous's own string fields, in bytes (host, message:
// base/wire.h).
inline constexpr size_t kMaxNodeNameBytes = 64;
inline constexpr size_t kMaxJobIdBytes = 128;
inline constexpr size_t kMaxNodeEnvironmentBytes = 8192;
// A hello is at most this long, frame and all; the rendezvous reads no more from a
// connection that has not been admitted.
inline constexpr size_t kMaxNodeHelloFrameBytes = 12 * 1024;

// Why a connection says hello: to join the job (an agent), to ask the job something
// without joining it (`kdist stop`: stop the whole job at one agreed step), or to come back
// to a book restored on another machine (`--rendezvous etcd://...`: this agent was admitted
// by an earlier holder of the job's book and takes its node back; rendezvous_book.h).
enum class NodePurpose : int64_t {
  kJoin = 0,
  kStop = 1,
  kRejoin = 2,
  kStatus = 3,  // `kdist status`: the job's state as JSON (NodeReplyKind::kStatus)
};

// What an agent says of its machine when it joins.
struct NodeHello {
  int64_t sequence = 1;
  std::string job_id;                // --job-id ("" when not given)
  std::string node_name;             // --node-name, else the host name
  std::string host;                  // the host name (for messages)
  int64_t pid = 0;                   // the agent's pid
  int64_t processes_per_node = 0;    // -n
  int64_t min_nodes = 0;             // --nodes MIN[:MAX]
  int64_t max_nodes = 0;
  int64_t coordinator_port = 0;      // a free port on this machine, for attempt 0 if it is node 0
  std::string environment;           // EncodeFingerprint() of this machine (roll_call/consistency.h)
  Nonce nonce{};                     // what the rendezvous's frames to this agent are signed over
  NodePurpose purpose = NodePurpose::kJoin;  // on the wire only when not kJoin
  std::string mac;                   // on the wire: kMacBytes bytes, or empty (no MAC field)
};

enum class NodeReplyKind : int64_t {
  kWaiting = 1,   // a progress line ("2 of 3 nodes joined ...")
  kAdmitted = 2,  // this agent is in; wait for the roster
  kRefused = 3,   // this agent is not (code, message); it exits non-zero
  kRoster = 4,    // an attempt starts: who runs what
  kEnd = 5,       // the job is over: its exit status and why
  kStop = 6,      // stop the running attempt at one agreed step (SIGTERM to its processes:
                  // kdist.should_stop turns True there, BackupAndRestore saves); `attempt`
  kStatus = 7,    // the answer to a status request: `status`, the job's state as JSON
};

// The most a status answer's JSON holds (the book leaves attempts out to fit: a frame's
// payload is at most kMaxFramePayload).
inline constexpr size_t kMaxStatusBytes = 14 * 1024;

struct NodeReply {
  int64_t sequence = 1;
  NodeReplyKind kind = NodeReplyKind::kWaiting;
  StatusCode code = StatusCode::kOk;  // kRefused, kEnd: the failure's code
  std::string message;                // kWaiting: the line; kRefused/kEnd: why
  // kRoster:
  int64_t attempt = 0;                // the job-wide attempt, from 0 (KDIST_RESTART_COUNT)
  int64_t node_rank = 0;              // this agent's node
  int64_t processes_per_node = 0;
  std::string coordinator_host;       // node 0's IP
  int64_t coordinator_port = 0;       // a fresh port of node 0's, this attempt's
  // How many nodes run the attempt (ranks 0 .. node_count - 1). A roster carries the count,
  // not the list of nodes: N agents told a whole list would be N * N bytes, and an agent
  // needs only the count and its own rank (its processes: node_rank * n .. + n - 1).
  int64_t node_count = 0;
  int64_t previous_processes = 0;     // the previous attempt's process count; 0 in the first
  // The job's run: random, drawn when the rendezvous starts, the same in every attempt of
  // this job and different in any other job (KDIST_RUN_ID: whose backup folder is whose).
  std::string run_id;
  // kRoster after a failed attempt, kEnd: the job-wide first failure of the last attempt.
  std::string first_failure;
  // kRoster or kWaiting after a re-form: how the last attempt ended, which was no failure
  // ("attempt 1 ended: node h1 (host h1, at 10.0.0.2) joined").
  std::string ended;
  // kEnd: the exit status every agent leaves with.
  int64_t exit_status = 0;
  // kStatus: the job's state, JSON schema 1 (RendezvousBook::StatusJson).
  std::string status;
  std::string mac;
};

// How one attempt ended on one machine.
struct NodeReport {
  int64_t sequence = 2;
  int64_t attempt = 0;
  int64_t exit_status = 0;        // this machine's processes' status (0: all passed)
  // The failure that began on this machine (kind kNone when none did here: all passed,
  // or its processes were ended because of another's), as a structure.
  JobFailure failure;
  int64_t coordinator_port = 0;   // a fresh free port here, for the next attempt if node 0
  // A drain notice, not the attempt's end: this machine is leaving (its agent received
  // SIGTERM); the rendezvous stops the attempt at one agreed step and goes on without it.
  bool drain = false;
  // This machine's processes made progress in the attempt: a backup saved, or a step past
  // the one they started from (what the thrash guard asks of an attempt a re-form ends).
  bool progressed = false;
  // A step notice, not the attempt's end: the steps this machine's processes reported so
  // far (sent every few seconds while the attempt runs, and with its end).
  bool steps_only = false;
  // The steps its processes reported in the attempt (job/goodput.h): -1 / 0 when none.
  int64_t first_step = -1;
  int64_t first_step_unix_millis = 0;
  int64_t step = -1;
  int64_t step_unix_millis = 0;
  std::string mac;
};

// Strings longer than their limit are cut to it, so an encoded frame always decodes.
// A non-empty `mac` is written as the last field.
std::string EncodeNodeHello(const NodeHello& hello);
std::string EncodeNodeReply(const NodeReply& reply);
std::string EncodeNodeReport(const NodeReport& report);

// The frame signed: with a MAC keyed by `token` over `nonce` (the other side's),
// with no MAC field when `token` is empty. Any `mac` given is replaced.
std::string EncodeSignedNodeHello(NodeHello hello, std::string_view token, const Nonce& nonce);
std::string EncodeSignedNodeReply(NodeReply reply, std::string_view token, const Nonce& nonce);
std::string EncodeSignedNodeReport(NodeReport report, std::string_view token, const Nonce& nonce);

// Whether a received frame (whole, as received) carries `mac`, and it is the MAC
// under `token` over `nonce`: true when both the token and the MAC are empty;
// false when exactly one is, or the MAC does not verify (compared in constant time).
bool NodeFrameVerifies(std::string_view frame, std::string_view mac, std::string_view token,
                       const Nonce& nonce);

// Decode one whole frame (header included, nothing after it). kInvalidArgument
// for anything malformed, kFailedPrecondition for another protocol version.
Result<NodeHello> DecodeNodeHello(std::string_view frame);
Result<NodeReply> DecodeNodeReply(std::string_view frame);
Result<NodeReport> DecodeNodeReport(std::string_view frame);

}  // namespace kdist

#endif  // KDIST_RENDEZVOUS_RENDEZVOUS_WIRE_H_
