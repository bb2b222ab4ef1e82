// The framing that the roll call (roll_call/roll_call_wire.h) and the liveness channel
// (liveness/liveness_wire.h) share: one header, one field format, one reader and
// writer, and the frame types of both, declared here and nowhere else.
//
// A frame is a 12-byte header — the magic "KDRV", the protocol version and the
// frame type (big-endian u16 each), and the payload length (big-endian u32,
// at most kMaxFramePayload) — followed by the payload: fields, each a one-byte
// tag, a big-endian u16 length and that many bytes. Integers are 8-byte
// big-endian two's complement; strings are their bytes.
//
// Frame types: below (FrameType, the roll call's; kFrameLive*, the liveness
// channel's). Field tags: those both channels use in the same sense are in
// base/wire_tags.h, the others in their channel's own file. Each decoder names the
// tags it knows (below 64). Other tags — every tag of 64 or more among them —
// are a later version's and are skipped, so a later version can add fields; a
// known tag seen twice, a field over its size limit or a missing required
// field makes the frame invalid.
//
// Everything here is a pure function of its bytes: decoding survives any
// input and never reads past what it was given.
#ifndef KDIST_BASE_WIRE_H_
#define KDIST_BASE_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

#include "base/status.h"

namespace kdist {

// 2: "go" carries JobShared (the job-wide seed).
// 3: the roll call's challenge frame; the hello carries a MAC (tag 10), never
//    the token (tag 10 carried the token in clear in version 2); the hello
//    carries the environment fingerprint and "go" the differences let pass.
// 4: the liveness channel carries stop requests and their agreed step, stall
//    reports and barriers (LiveKind 7 and above, and their fields).
inline constexpr uint16_t kProtocolVersion = 4;
inline constexpr std::string_view kFrameMagic = "KDRV";
inline constexpr size_t kFrameHeaderSize = 12;
inline constexpr size_t kMaxFramePayload = 16 * 1024;

// Frame types, every channel's. The two lists share 5 and 6 (the roll call's
// challenge and opening, the liveness channel's join and notice), and the
// bytes on the wire fix these numbers. The channels run on connections of
// their own (the coordinator's port, the hub's ephemeral port), so a number
// means one thing on a connection, and a frame sent to the other channel's
// port is refused there or skipped (a liveness notice on the coordinator's
// port reads as an opening, which process 0 skips). A new frame type of
// either channel takes kNextFrameType, and kNextFrameType moves up by one.
//
// The roll call's (roll_call/roll_call_wire.h).
enum class FrameType : uint16_t {
  kHello = 1,   // process -> process 0: who I am and how I was configured
  kGo = 2,      // process 0 -> all: every process is present, start JAX
  kReject = 3,  // process 0 -> one or all: the roll call failed, with why
  kStatus = 4,  // process 0 -> waiting processes: a progress line
  kChallenge = 5,  // process 0 -> a new connection, first: the nonce its hello's MAC covers
  kOpening = 6,    // process -> process 0, first: only the version it speaks
};
// The liveness channel's (liveness/liveness_wire.h).
inline constexpr uint16_t kFrameLiveJoin = 5;    // process -> process 0: watch me
inline constexpr uint16_t kFrameLiveNotice = 6;  // either way: an event (LiveNotice)
// The nodes' rendezvous (rendezvous/rendezvous_wire.h), on a port of its own; it opens and
// challenges as the roll call does (kOpening, kChallenge), then:
inline constexpr uint16_t kFrameNodeHello = 7;   // agent -> rendezvous: this machine joins
inline constexpr uint16_t kFrameNodeReply = 8;   // rendezvous -> agent: admitted, roster, end
inline constexpr uint16_t kFrameNodeReport = 9;  // agent -> rendezvous: how an attempt ended here
// The lowest number that no frame type of any channel has.
inline constexpr uint16_t kNextFrameType = 10;
static_assert(static_cast<uint16_t>(FrameType::kOpening) < kNextFrameType &&
                  kFrameLiveNotice < kNextFrameType && kFrameNodeReport < kNextFrameType,
              "a new frame type takes kNextFrameType, which then moves up");

// Size limits of string fields both channels carry, in bytes.
inline constexpr size_t kMaxHostBytes = 255;
inline constexpr size_t kMaxMessageBytes = 8192;

struct FrameHeader {
  uint16_t version = 0;
  uint16_t type = 0;
  uint32_t payload_size = 0;
  size_t frame_size() const { return kFrameHeaderSize + payload_size; }
};

// Whether `prefix` (any length) can still be the start of a frame: its first
// bytes match the magic. Lets a reader drop an HTTP request after one byte.
bool CouldStartFrame(std::string_view prefix);

// Decodes the header at the start of `bytes` (at least kFrameHeaderSize
// bytes). kInvalidArgument for a wrong magic or an oversized payload; the
// version is reported, not checked, so a peer of another version can be
// answered.
Result<FrameHeader> DecodeFrameHeader(std::string_view bytes);

// The payload of one whole frame (header included, nothing after it) of type
// `type`. kFailedPrecondition for another protocol version (the message names
// `channel`, e.g. "roll call"), kInvalidArgument for a bad header, a size that
// is not the header's or another type.
Result<std::string_view> FramePayload(std::string_view frame, uint16_t type,
                                      std::string_view channel);

// Builds one frame: fields in the order written, then Frame() adds the header.
class FieldWriter {
 public:
  // A string longer than `limit` is cut to it, so an encoded frame always decodes.
  void String(uint8_t tag, std::string_view value, size_t limit);
  void Integer(uint8_t tag, int64_t value);
  std::string Frame(uint16_t type) const;

 private:
  std::string payload_;
};

// A set of field tags. Only tags below 64 can be members: a tag of 64 or more
// is never known (not an alias of tag % 64).
class TagSet {
 public:
  constexpr TagSet() = default;
  constexpr TagSet(std::initializer_list<uint8_t> tags) {
    for (uint8_t tag : tags) Add(tag);
  }
  constexpr bool Has(uint8_t tag) const { return (bits_ & Bit(tag)) != 0; }
  constexpr void Add(uint8_t tag) { bits_ |= Bit(tag); }

 private:
  static constexpr uint64_t Bit(uint8_t tag) { return tag < 64 ? uint64_t{1} << tag : 0; }
  uint64_t bits_ = 0;
};

// One field as it came off the wire.
struct Field {
  uint8_t tag;
  std::string_view value;
};

// Walks the fields of `payload`: calls `on_field` for each field whose tag is
// in `known`, skips the others. Errors: a truncated field, a known tag twice,
// or the first error `on_field` returns. Returns the known tags seen.
Result<TagSet> ReadFields(std::string_view payload, const TagSet& known,
                          const std::function<Status(const Field&)>& on_field);

// A field's value as an 8-byte integer, or as a string of at most `limit`
// bytes; errors name the field (`name`).
Status ReadInteger(const Field& field, const char* name, int64_t& out);
Status ReadString(const Field& field, size_t limit, const char* name, std::string& out);

// Collects bytes from a stream and cuts them into frames; refuses a stream as
// soon as it cannot be kdist's (wrong magic, oversized length).
class FrameAssembler {
 public:
  // Appends bytes; an error means the stream is not (or no longer) kdist's.
  Status Append(std::string_view bytes);
  // The first whole frame, removed from the buffer, or "" when none is complete.
  std::string TakeFrame();
  size_t buffered() const { return buffer_.size(); }

 private:
  Status Check() const;
  std::string buffer_;
};

}  // namespace kdist

#endif  // KDIST_BASE_WIRE_H_
