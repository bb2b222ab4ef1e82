// Whether the job's processes can work together, beyond agreeing on the job's
// settings: the same jax and jaxlib, the same device platform and number of
// local devices, the same XLA_FLAGS and JAX settings, the same script.
//
// Each process sends its environment fingerprint in its hello (collected in
// Python, kdist/_start/environment_fingerprint.py, without importing JAX): an ordered list of
// named values. Process 0 compares every hello's with its own, as they arrive:
//
//   - an entry process 0 marks `must_match` (a difference crashes or silently
//     corrupts the job) fails the roll call for every process at the first
//     difference, under the "warn" policy (the default) and "strict";
//   - any other entry that differs is a warning under "warn" (reported once,
//     when everyone has arrived, to every process with "go") and fails the roll
//     call under "strict";
//   - "off" compares nothing.
//
// Messages name the value and which processes (and hosts) hold it:
//   jax: 0.10.2 in processes 0, 2-3 on hosts node-[0,2-3]; 0.9.0 in process 1 on host node-1
// Memory: one list of ids per value that differs from process 0's, so a job
// whose processes agree costs nothing per process.
#ifndef KDIST_ROLL_CALL_CONSISTENCY_H_
#define KDIST_ROLL_CALL_CONSISTENCY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "config/policies.h"

namespace kdist {

struct FingerprintEntry {
  std::string name;   // "jax", "XLA_FLAGS"
  std::string value;  // "0.10.2"
  bool must_match = false;  // process 0's view decides; not sent on the wire
};
using Fingerprint = std::vector<FingerprintEntry>;

// The entry that says what a process does about TLS for JAX's coordination service
// (kdist/_start/tls.py): processes that differ in it cannot reach each other's JAX
// service, and the remedy is not the versions' one.
inline constexpr std::string_view kTlsEntry = "tls";

// The wire form, carried in the hello as one field: for each entry a u8 name
// length, the name, a big-endian u16 value length, the value. At most
// kMaxFingerprintEntries entries, names of at most kMaxFingerprintName bytes,
// values of at most kMaxFingerprintValue bytes (the collector shortens longer
// ones to a hash).
inline constexpr size_t kMaxFingerprintEntries = 32;
inline constexpr size_t kMaxFingerprintName = 64;
inline constexpr size_t kMaxFingerprintValue = 1024;
std::string EncodeFingerprint(const Fingerprint& fingerprint);
// kInvalidArgument for anything malformed; must_match is false in the result.
Result<Fingerprint> DecodeFingerprint(std::string_view bytes);
// kInvalidArgument when an entry exceeds the limits above (checked before sending).
Status ValidateFingerprint(const Fingerprint& fingerprint);

class ConsistencyCheck {
 public:
  // `own` is process 0's fingerprint; its entries, in its order and with its
  // must_match marks, are what is compared.
  ConsistencyCheck(Fingerprint own, ConsistencyPolicy policy);

  // Records process `id`'s fingerprint (each id once). Returns a failure for
  // the whole job (kFailedPrecondition, with the table of what differs among
  // the processes recorded so far) when a difference must stop it under the
  // policy; OK otherwise. `host_of` names a recorded process's host.
  Status Add(int64_t id, const Fingerprint& theirs,
             const std::function<std::string(int64_t)>& host_of);

  // Forgets process `id` (it left; it may come back with another hello).
  void Remove(int64_t id);

  // When every process has arrived: one line per entry that differs (the
  // warnings), "" when none does. Process 0's value is listed first.
  std::string Differences(const std::function<std::string(int64_t)>& host_of) const;
  // The names of the entries compared ("" under "off"), for cluster_spec().
  std::vector<std::string> Compared() const;

 private:
  // "jax: 0.10.2 in processes 0, 2-3 on hosts ...; 0.9.0 in process 1 on host node-1"
  std::string Line(size_t entry, const std::function<std::string(int64_t)>& host_of) const;

  Fingerprint own_;
  ConsistencyPolicy policy_;
  std::vector<int64_t> recorded_;  // ids recorded, process 0 excluded
  // For each entry of own_: value -> the ids holding it, for values that differ
  // from process 0's ("missing" stands for an entry a process did not send).
  std::vector<std::map<std::string, std::vector<int64_t>>> others_;
};

}  // namespace kdist

#endif  // KDIST_ROLL_CALL_CONSISTENCY_H_
