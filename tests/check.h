/* A check for the C tests: prints the failed condition with its place and counts it; main
 * returns non-zero when `failures` is. */
#ifndef FZG_TESTS_CHECK_H
#define FZG_TESTS_CHECK_H
#include <stdio.h>

static int failures = 0;
#define CHECK(cond)                                                       \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                         \
    }                                                                     \
  } while (0)

#endif
