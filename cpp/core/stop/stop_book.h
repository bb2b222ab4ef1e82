// Process 0's decisions about a stop request (pure; the hub feeds it what its
// connections and its own StopBoard say, and sends what it returns).
//
// A stop request (a stop signal, or request_stop(reason) in code) from any
// process is a stop request for the whole job:
//   - when no process of the job has ever asked should_stop(step) (none is
//     armed), the job ends at once: every process leaves together;
//   - otherwise process 0 asks every process still running for its current
//     step, and once all have answered, the stop step is one past the largest
//     (a process that never reported a step does not count); every process's
//     should_stop turns True at that step;
//   - a second stop signal in a process that already asked (the scheduler's
//     or the user's "now"), or a stop request while an agreement never
//     completes, ends the job at once.
// Only the first request is acted on; later ones are remembered for the
// messages but change nothing.
#ifndef KDIST_STOP_STOP_BOOK_H_
#define KDIST_STOP_STOP_BOOK_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>

namespace kdist {

struct StopRequest {
  int64_t process_id = 0;
  std::string host;
  int64_t pid = 0;
  int signal_number = 0;  // 0: request_stop(reason) in code
  std::string reason;     // the code's reason, or "" for a signal
  bool urgent = false;    // a second stop signal in that process: end at once
  // Whether that process had asked should_stop(step) before it asked to stop:
  // known with the request itself, so the decision does not wait on (or race)
  // the process's separate "armed" message.
  bool armed = false;
};

class StopBook {
 public:
  enum class Action {
    kNone,      // nothing to send (a stop is already under way)
    kQuery,     // ask every running process for its step
    kStopNow,   // end the job now: nobody asks should_stop, or it is urgent
    kDecided,   // the stop step is decided: tell everyone stop_step()
  };

  // A process that asked should_stop for the first time.
  void OnArmed(int64_t process_id) { armed_.insert(process_id); }
  bool any_armed() const { return !armed_.empty(); }

  // A stop request. `running`: the processes still running (not finished or
  // gone), process 0 included; those are asked for their step. A requester that
  // is armed counts as armed from here on (as OnArmed).
  Action OnRequest(const StopRequest& request, const std::set<int64_t>& running);
  // A process's answer to the query: its last reported step
  // (StopBoard::kNoStep when it never reported one).
  Action OnStep(int64_t process_id, int64_t step);
  // A process finished or left while its answer was awaited.
  Action OnGone(int64_t process_id);

  // The request acted on (nullopt before the first).
  const std::optional<StopRequest>& request() const { return request_; }
  // Valid once OnRequest, OnStep or OnGone returned kDecided.
  int64_t stop_step() const { return stop_step_; }
  bool decided() const { return decided_; }
  bool ended_now() const { return ended_now_; }
  // Whether it was a second stop signal ("now") that ended the job.
  bool ended_urgently() const { return ended_urgently_; }

 private:
  Action MaybeDecide();

  std::set<int64_t> armed_;
  std::optional<StopRequest> request_;
  std::set<int64_t> awaited_;
  int64_t largest_ = -1;
  int64_t stop_step_ = 0;
  bool decided_ = false;
  bool ended_now_ = false;
  bool ended_urgently_ = false;
};

}  // namespace kdist

#endif  // KDIST_STOP_STOP_BOOK_H_
