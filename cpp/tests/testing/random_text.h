// Deterministic random text for "survives arbitrary input" tests: characters a
// grammar cares about, mixed with any byte (xorshift64, seeded, so a failure
// reproduces exactly).
#ifndef KDIST_TESTING_RANDOM_TEXT_H_
#define KDIST_TESTING_RANDOM_TEXT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace kdist::testing {

class RandomText {
 public:
  // `alphabet`: the characters drawn most of the time; one character in
  // `any_byte_one_in` is any byte instead.
  RandomText(uint64_t seed, std::string_view alphabet, uint64_t any_byte_one_in = 8)
      : state_(seed | 1), alphabet_(alphabet), any_byte_one_in_(any_byte_one_in) {}

  uint64_t Bits() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return state_;
  }

  // A string of 0 to max_length - 1 characters.
  std::string Next(size_t max_length) {
    std::string text;
    const size_t length = Bits() % max_length;
    for (size_t i = 0; i < length; ++i) {
      text += Bits() % any_byte_one_in_ == 0 ? static_cast<char>(Bits() & 0xff)
                                             : alphabet_[Bits() % alphabet_.size()];
    }
    return text;
  }

 private:
  uint64_t state_;
  std::string_view alphabet_;
  uint64_t any_byte_one_in_;
};

}  // namespace kdist::testing

#endif  // KDIST_TESTING_RANDOM_TEXT_H_
