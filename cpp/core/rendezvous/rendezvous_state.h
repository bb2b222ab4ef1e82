// The rendezvous's book as a store keeps it (`--rendezvous etcd://...`): its whole state
// (RendezvousBook::EncodeState, JSON an operator can read with `etcdctl get`), sealed
// with the time it was saved and a MAC under the job's token, so that a state written by
// anyone who can write to the store but does not hold the token is refused, not restored:
//
//   kdist-book 1 <saved offset, ns> <wall clock, ms> <HMAC-SHA-256 in hex>\n<the state>
//
// The MAC covers "<saved offset> <wall clock>\n<the state>" under the job's token (under a
// fixed key without one, on loopback). The wall clock of the save (milliseconds since the
// Unix epoch; 0: unknown) tells a restoring machine how long ago the last change was, so
// that the book's timers and its attempts' times go on across the takeover (the machines'
// clocks agree as NTP keeps them; a gap below 0 counts as 0, above an hour as an hour).
// Pure functions of their bytes.
#ifndef KDIST_RENDEZVOUS_RENDEZVOUS_STATE_H_
#define KDIST_RENDEZVOUS_RENDEZVOUS_STATE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/status.h"
#include "rendezvous/rendezvous_book.h"

namespace kdist {

// A book's state as saved: the state, and the book's time of the save (an offset from the
// book's origin, as every time in the state is).
struct SavedBookState {
  std::string state;
  Nanos saved_offset{0};
  int64_t saved_wall_millis = 0;
};

std::string SealBookState(std::string_view state, Nanos saved_offset, std::string_view token,
                          int64_t saved_wall_millis = 0);
// kInvalidArgument when `sealed` is not a sealed state; kFailedPrecondition when its MAC
// does not verify under `token` (another job's token, or written by another hand).
Result<SavedBookState> OpenBookState(std::string_view sealed, std::string_view token);

// The book's state sealed at `now` (what a server persists), and a book restored from one
// at `now`, the wall clock being `wall_millis` (0: unknown, no gap counted).
std::string SaveBook(const RendezvousBook& book, Nanos now, std::string_view token,
                     int64_t wall_millis = 0);
Result<RendezvousBook> RestoreBook(RendezvousOptions options, std::string_view sealed, Nanos now,
                                   int64_t wall_millis = 0);

}  // namespace kdist

#endif  // KDIST_RENDEZVOUS_RENDEZVOUS_STATE_H_
