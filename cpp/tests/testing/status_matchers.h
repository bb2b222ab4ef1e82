// GoogleTest checks for the core's Status and Result<T>.
//
//   KDIST_EXPECT_OK(ParsePort("80"));
//   KDIST_ASSERT_OK(result);                      // stops the test when not ok
//   KDIST_EXPECT_ERROR(ParsePort("x"), StatusCode::kInvalidArgument, "expected a port");
//
// Each takes a Status or a Result<T> and, on failure, prints the expression and the
// status (code and message).
#ifndef KDIST_TESTING_STATUS_MATCHERS_H_
#define KDIST_TESTING_STATUS_MATCHERS_H_

#include <gtest/gtest.h>

#include <string>

#include "base/status.h"

namespace kdist::testing {

// "kInvalidArgument: the message".
inline std::string Describe(const Status& status) {
  return std::string(StatusCodeName(status.code())) + ": " + status.message();
}

// Whether `status` is a failure with `code` whose message contains `needle`.
inline ::testing::AssertionResult IsError(const char* text, const Status& status,
                                          StatusCode code, const std::string& needle) {
  if (status.ok()) {
    return ::testing::AssertionFailure() << "expected an error from " << text << ", got ok";
  }
  if (status.code() != code || status.message().find(needle) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "wrong error from " << text << ": " << Describe(status) << "\n  (wanted "
           << StatusCodeName(code) << " containing \"" << needle << "\")";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kdist::testing

#define KDIST_EXPECT_OK(expr)                                                  \
  do {                                                                         \
    const auto& kdist_r_ = (expr);                                             \
    EXPECT_TRUE(kdist_r_.ok()) << #expr " -> "                                 \
                               << ::kdist::testing::Describe(kdist_r_.status()); \
  } while (0)

#define KDIST_ASSERT_OK(expr)                                                  \
  do {                                                                         \
    const auto& kdist_r_ = (expr);                                             \
    ASSERT_TRUE(kdist_r_.ok()) << #expr " -> "                                 \
                               << ::kdist::testing::Describe(kdist_r_.status()); \
  } while (0)

#define KDIST_EXPECT_ERROR(expr, want_code, needle)                            \
  do {                                                                         \
    const auto& kdist_r_ = (expr);                                             \
    EXPECT_TRUE(::kdist::testing::IsError(#expr, kdist_r_.status(), (want_code), (needle))); \
  } while (0)

#endif  // KDIST_TESTING_STATUS_MATCHERS_H_
