// Process 0's decisions about barriers (pure; the hub feeds it arrivals, the
// time and the processes that leave, and sends what it returns).
//
// Every process numbers its barrier calls 0, 1, 2, ...; the n-th call of each
// process meets the n-th call of the others. A barrier is released when every
// running process has arrived under the same name. It fails:
//   - when the earliest deadline among those that arrived passes (each
//     arrival brings its own timeout): "did not arrive" names the processes
//     missing, with their hosts;
//   - when processes meet at it under different names: the message names both
//     names and which processes are at each;
//   - when a process finishes or leaves without arriving (it never will).
// Every process waiting at a failed barrier, and every one that arrives at it
// later, gets the same failure.
#ifndef KDIST_LIVENESS_BARRIER_BOOK_H_
#define KDIST_LIVENESS_BARRIER_BOOK_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "liveness/liveness_wire.h"

namespace kdist {

struct BarrierArrival {
  int64_t process_id = 0;
  int64_t index = 0;  // this process's n-th barrier call
  std::string name;
  Nanos deadline{0};  // when it gives up waiting
};

struct BarrierVerdict {
  enum class Kind { kReleased, kTimedOut, kMismatch, kAbandoned };
  Kind kind = Kind::kReleased;
  int64_t index = 0;
  std::string name;
  std::vector<int64_t> to;  // the processes to tell (those that arrived)
  std::string message;      // why it failed ("" when released)
};

class BarrierBook {
 public:
  // `hosts`: the host of each process id, for messages (may be empty or short).
  explicit BarrierBook(std::vector<std::string> hosts = {});

  // A process arrived. `running`: the processes still running (0 included).
  // `now`: when, to say later how long the first arrival waited.
  std::vector<BarrierVerdict> OnArrive(const BarrierArrival& arrival,
                                       const std::set<int64_t>& running, Nanos now);
  // The same, with `running` built only when the barrier may be decided (as many
  // arrived as `running_count` says run, or names differ): O(log n) per arrival.
  std::vector<BarrierVerdict> OnArrive(const BarrierArrival& arrival, int64_t running_count,
                                       const std::function<std::set<int64_t>()>& running,
                                       Nanos now);
  // The time passed: every barrier whose earliest deadline is at or before
  // `now` fails, naming the `running` processes that did not arrive.
  std::vector<BarrierVerdict> OnTime(Nanos now, const std::set<int64_t>& running);
  // A process finished, left, failed or died (`how`, the word the message
  // says); barriers it has not reached fail, and those that only waited for it
  // are released.
  // Whether a barrier is waiting for arrivals (OnGone and OnTime have work).
  bool HasOpen() const { return !open_.empty(); }
  std::vector<BarrierVerdict> OnGone(int64_t process_id, std::string_view how,
                                     const std::set<int64_t>& running);
  // The host of process `process_id`, for messages (known once it joined).
  void SetHost(int64_t process_id, const std::string& host);
  // The earliest deadline of a barrier still open, when there is one.
  std::optional<Nanos> NextDeadline() const;

 private:
  struct Open {
    std::map<int64_t, std::string> names;  // who arrived, under which name
    std::map<std::string, int64_t> name_counts;  // how many arrived under each name
    Nanos first_arrival{0};
    Nanos deadline{0};
  };
  std::optional<BarrierVerdict> Check(int64_t index, const std::set<int64_t>& running);
  BarrierVerdict Fail(int64_t index, BarrierVerdict::Kind kind, std::string message);
  std::string Missing(const Open& open, const std::set<int64_t>& running) const;

  std::vector<std::string> hosts_;
  std::map<int64_t, Open> open_;
  // Barriers that failed, by index: a later arrival gets the same verdict.
  std::map<int64_t, BarrierVerdict> failed_;
};

// The kBarrierDone notice that tells a waiting process a verdict, and what it
// means for that process: ok when released; kDeadlineExceeded when it timed
// out; kFailedPrecondition when names differ or a process left without it.
// The message is the verdict's.
LiveNotice BarrierNotice(const BarrierVerdict& verdict);
Status BarrierStatus(const LiveNotice& done);

}  // namespace kdist

#endif  // KDIST_LIVENESS_BARRIER_BOOK_H_
