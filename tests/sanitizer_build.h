// What the tests do differently in the sanitizer build (build/asan: clang, AddressSanitizer
// and UndefinedBehaviorSanitizer, WEFT_SANITIZED defined by tests/CMakeLists.txt). It runs
// every test again for memory errors and undefined behaviour, 10 to 50 times slower than
// the Release build; what it cannot run, or need not run twice, it skips.
#pragma once

#include <gtest/gtest.h>

namespace weft::testing {

#if defined(WEFT_SANITIZED)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace weft::testing

#define WEFT_SKIP_IF_SANITIZED_(why)                      \
  do {                                                    \
    if (::weft::testing::kSanitized) GTEST_SKIP() << why; \
  } while (false)

// A test that runs a program under `weft capture`: AddressSanitizer's runtime must come
// first in a process and refuses to start with a library preloaded before it.
#define SKIP_UNDER_ASAN()  \
  WEFT_SKIP_IF_SANITIZED_( \
      "the sanitizer build skips it (AddressSanitizer refuses a preloaded library)")

// A test that asserts measured figures (a paper's, a docs table's) on a full-size trace:
// the Release build checks the figures; under the sanitizers the same inference runs on
// smaller traces in the tests that check its workings (nesting_threads_test and others).
#define SKIP_FIGURES_UNDER_SANITIZERS() \
  WEFT_SKIP_IF_SANITIZED_(              \
      "the Release build checks these figures; the sanitizer build, the workings")
