// A dependency-free unit-test harness for the C++ core.
//
//   KDIST_TEST(Address, ParsesIpv4) { KDIST_EXPECT_EQ(...); }
//
// Tests register themselves at static-initialisation time; testing/main.cc runs
// them all (or those whose "Suite.Name" contains argv[1]) and exits non-zero on
// any failure. A failed EXPECT records and continues; a failed ASSERT returns
// from the test body.
#ifndef KDIST_TESTING_CHECK_H_
#define KDIST_TESTING_CHECK_H_

#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace kdist::testing {

struct TestCase {
  std::string name;
  std::function<void()> body;
};

std::vector<TestCase>& Registry();
void RecordFailure(const char* file, int line, const std::string& what);
bool CurrentTestFailed();

struct Registrar {
  Registrar(std::string name, std::function<void()> body) {
    Registry().push_back({std::move(name), std::move(body)});
  }
};

template <typename T>
std::string Show(const T& value) {
  std::ostringstream out;
  if constexpr (std::is_same_v<T, std::string> || std::is_convertible_v<T, const char*>) {
    out << '"' << value << '"';
  } else if constexpr (std::is_same_v<T, bool>) {
    out << (value ? "true" : "false");
  } else {
    out << value;
  }
  return out.str();
}

}  // namespace kdist::testing

#define KDIST_TEST(suite, name)                                              \
  static void kdist_test_##suite##_##name();                                 \
  static ::kdist::testing::Registrar kdist_registrar_##suite##_##name(       \
      #suite "." #name, &kdist_test_##suite##_##name);                       \
  static void kdist_test_##suite##_##name()

#define KDIST_CHECK_IMPL(cond, text, on_fail)                                 \
  do {                                                                        \
    if (!(cond)) {                                                            \
      ::kdist::testing::RecordFailure(__FILE__, __LINE__, text);              \
      on_fail;                                                                \
    }                                                                         \
  } while (0)

#define KDIST_EXPECT_TRUE(cond) KDIST_CHECK_IMPL((cond), "expected true: " #cond, (void)0)
#define KDIST_EXPECT_FALSE(cond) KDIST_CHECK_IMPL(!(cond), "expected false: " #cond, (void)0)
#define KDIST_ASSERT_TRUE(cond) KDIST_CHECK_IMPL((cond), "assertion failed: " #cond, return)

#define KDIST_COMPARE_IMPL(a, b, op, on_fail)                                 \
  do {                                                                        \
    const auto kdist_a_ = (a);                                                \
    const auto kdist_b_ = (b);                                                \
    if (!(kdist_a_ op kdist_b_)) {                                            \
      ::kdist::testing::RecordFailure(                                        \
          __FILE__, __LINE__,                                                 \
          std::string(#a " " #op " " #b ": ") +                               \
              ::kdist::testing::Show(kdist_a_) + " vs " +                     \
              ::kdist::testing::Show(kdist_b_));                              \
      on_fail;                                                                \
    }                                                                         \
  } while (0)

#define KDIST_EXPECT_EQ(a, b) KDIST_COMPARE_IMPL(a, b, ==, (void)0)
#define KDIST_EXPECT_NE(a, b) KDIST_COMPARE_IMPL(a, b, !=, (void)0)
#define KDIST_EXPECT_LT(a, b) KDIST_COMPARE_IMPL(a, b, <, (void)0)
#define KDIST_EXPECT_LE(a, b) KDIST_COMPARE_IMPL(a, b, <=, (void)0)
#define KDIST_EXPECT_GE(a, b) KDIST_COMPARE_IMPL(a, b, >=, (void)0)
#define KDIST_ASSERT_EQ(a, b) KDIST_COMPARE_IMPL(a, b, ==, return)

// Status / Result helpers.
#define KDIST_EXPECT_OK(expr)                                                 \
  do {                                                                        \
    const auto& kdist_r_ = (expr);                                            \
    if (!kdist_r_.ok())                                                       \
      ::kdist::testing::RecordFailure(__FILE__, __LINE__,                     \
                                      "expected ok: " #expr " -> " +          \
                                          kdist_r_.status().message());       \
  } while (0)
#define KDIST_ASSERT_OK(expr)                                                 \
  do {                                                                        \
    const auto& kdist_r_ = (expr);                                            \
    if (!kdist_r_.ok()) {                                                     \
      ::kdist::testing::RecordFailure(__FILE__, __LINE__,                     \
                                      "expected ok: " #expr " -> " +          \
                                          kdist_r_.status().message());       \
      return;                                                                 \
    }                                                                         \
  } while (0)
// Expects a failure with `want_code` whose message contains `needle`.
#define KDIST_EXPECT_ERROR(expr, want_code, needle)                                \
  do {                                                                        \
    const auto& kdist_r_ = (expr);                                            \
    const std::string kdist_needle_ = (needle);                               \
    if (kdist_r_.ok()) {                                                      \
      ::kdist::testing::RecordFailure(__FILE__, __LINE__,                     \
                                      "expected an error from " #expr);       \
    } else if (kdist_r_.status().code() != (want_code) ||                          \
               kdist_r_.status().message().find(kdist_needle_) ==             \
                   std::string::npos) {                                       \
      ::kdist::testing::RecordFailure(                                        \
          __FILE__, __LINE__,                                                 \
          std::string("wrong error from " #expr ": ") +                       \
              ::kdist::StatusCodeName(kdist_r_.status().code()) + " " +       \
              kdist_r_.status().message() + "  (wanted " +                    \
              ::kdist::StatusCodeName(want_code) + " containing \"" +              \
              kdist_needle_ + "\")");                                         \
    }                                                                         \
  } while (0)

#endif  // KDIST_TESTING_CHECK_H_
