// Runs every registered KDIST_TEST; argv[1], when given, filters by substring.
#include <chrono>
#include <cstdio>
#include <string>

#include "testing/check.h"

namespace kdist::testing {
namespace {
bool g_current_failed = false;
}

std::vector<TestCase>& Registry() {
  static std::vector<TestCase> tests;
  return tests;
}

void RecordFailure(const char* file, int line, const std::string& what) {
  g_current_failed = true;
  std::fprintf(stderr, "  %s:%d: %s\n", file, line, what.c_str());
}

bool CurrentTestFailed() { return g_current_failed; }

}  // namespace kdist::testing

int main(int argc, char** argv) {
  using kdist::testing::Registry;
  const std::string filter = argc > 1 ? argv[1] : "";
  int run = 0, failed = 0;
  for (const auto& test : Registry()) {
    if (!filter.empty() && test.name.find(filter) == std::string::npos) continue;
    kdist::testing::g_current_failed = false;
    const auto start = std::chrono::steady_clock::now();
    test.body();
    const double ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start).count();
    ++run;
    if (kdist::testing::CurrentTestFailed()) {
      ++failed;
      std::fprintf(stderr, "FAIL %s (%.1f ms)\n", test.name.c_str(), ms);
    } else {
      std::printf("ok   %s (%.1f ms)\n", test.name.c_str(), ms);
    }
  }
  std::printf("%d tests, %d failed\n", run, failed);
  if (run == 0) {
    std::fprintf(stderr, "no test matched \"%s\"\n", filter.c_str());
    return 5;
  }
  return failed == 0 ? 0 : 1;
}
