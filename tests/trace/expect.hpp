// EXPECT(cond, fmt, ...) for the trace tests that run as their own processes
// (no test framework: they fork, kill and limit themselves). A failed
// expectation prints and is counted in expect_failures; main returns non-zero
// when any failed.
#pragma once

#include <cstdio>

inline int expect_failures = 0;

#define EXPECT(cond, ...)                         \
  do {                                            \
    if (!(cond)) {                                \
      std::fprintf(stderr, "FAILED %s: ", #cond); \
      std::fprintf(stderr, __VA_ARGS__);          \
      std::fprintf(stderr, "\n");                 \
      ++expect_failures;                          \
    }                                             \
  } while (0)
