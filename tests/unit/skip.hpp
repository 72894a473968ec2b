#pragma once
// AD_SKIP(why): a test that needs a missing tool skips when run by hand, and fails under the
// README's test command (./setup.sh test sets AUTODRIVER_TEST_NO_SKIP=1): it installs every tool,
// so in CI nothing skips.

#include <gtest/gtest.h>

#include <cstdlib>

#define AD_SKIP(why)                                                                                                             \
  do {                                                                                                                           \
    if (std::getenv("AUTODRIVER_TEST_NO_SKIP")) FAIL() << why << " (nothing skips under ./setup.sh test)";                       \
    GTEST_SKIP() << why;                                                                                                         \
  } while (0)
