#include "liveness/board_watch.h"

namespace kdist {

void BoardWatch::Observe(Nanos now) {
  const uint64_t beats = options_.board->beats();
  if (!started_ || beats != last_beats_) {
    started_ = true;
    last_beats_ = beats;
    last_change_ = now;
  }
}

BoardNews BoardWatch::Tick(Nanos now) {
  BoardNews news;
  StopBoard* board = options_.board;
  if (board == nullptr) return news;
  Observe(now);
  news.armed = board->TakeArmed();
  news.signal_number = board->TakeSignal();
  news.urgent = news.signal_number != 0 && board->signals_received() > 1;
  if (options_.stall_timeout && board->armed() && !stall_told_ &&
      now - last_change_ >= *options_.stall_timeout) {
    stall_told_ = true;
    news.stalled = true;
  }
  return news;
}

ProgressReport BoardWatch::Report(int64_t process_id, Nanos now) {
  ProgressReport report;
  report.process_id = process_id;
  if (options_.board == nullptr) return report;
  Observe(now);
  report.armed = options_.board->armed();
  report.step = options_.board->step();
  report.idle = started_ ? now - last_change_ : Nanos(0);
  return report;
}

}  // namespace kdist
