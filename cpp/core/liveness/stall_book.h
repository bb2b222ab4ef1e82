// Process 0's decisions about a stall (pure; the hub feeds it what the
// processes report and sends what it returns).
//
// Each process's channel thread watches its own progress (calls to
// should_stop and barrier, counted by its StopBoard): once it has reported any
// and then none for the stall timeout, it says it stalled. Process 0 then asks
// every running process for its last step and how long it has been idle, and
// names the stuck: the processes at the lowest step when others are ahead of
// them (they are what the others wait for), else every process idle for the
// timeout. Processes that never reported progress are never judged.
#ifndef KDIST_LIVENESS_STALL_BOOK_H_
#define KDIST_LIVENESS_STALL_BOOK_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"

namespace kdist {

struct ProgressReport {
  int64_t process_id = 0;
  std::string host;
  int64_t pid = 0;
  bool armed = false;  // it reported progress at least once
  int64_t step = -1;   // its last step (StopBoard::kNoStep: only barriers)
  Nanos idle{0};       // since its last progress
};

struct StallVerdict {
  std::vector<int64_t> stuck;  // ascending
  // "process 1 (host node-1, pid 4242) made no progress for 600 s at step 1042;
  // processes [0, 2-3] reached step 1043"
  std::string message;
};

class StallBook {
 public:
  explicit StallBook(Nanos timeout) : timeout_(timeout) {}

  // A process said it stalled. True for the first: ask every running process
  // for a ProgressReport (the caller passes `running`, process 0 included).
  bool OnStalled(int64_t process_id, const std::set<int64_t>& running);
  // One answer; the verdict once every asked process answered.
  std::optional<StallVerdict> OnReport(const ProgressReport& report);
  // A process finished or left: no answer will come from it.
  std::optional<StallVerdict> OnGone(int64_t process_id);
  // The answers did not all come in time: decide with those that did.
  std::optional<StallVerdict> Decide();
  bool deciding() const { return started_ && !decided_; }

 private:
  Nanos timeout_;
  bool started_ = false;
  bool decided_ = false;
  std::set<int64_t> awaited_;
  std::map<int64_t, ProgressReport> reports_;
};

}  // namespace kdist

#endif  // KDIST_LIVENESS_STALL_BOOK_H_
