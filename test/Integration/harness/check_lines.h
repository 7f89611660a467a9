//===- check_lines.h - one PASS/FAIL line per check, and their count ------===//
//
// The GPU scripts and lit tests read a harness's checks from its output, one
// line each ("PASS: what" or "FAIL: what"), and its exit status from the
// number that failed. Each line is flushed at once: when a later CUDA call
// kills the process, the checks before it still show.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_TEST_INTEGRATION_HARNESS_CHECK_LINES_H
#define GDN_TEST_INTEGRATION_HARNESS_CHECK_LINES_H

#include <cstdio>
#include <string>

namespace harness {

/// Checks failed so far in this process.
inline int failures = 0;

/// Prints the check's line and counts it when it failed.
inline void expect(bool ok, const std::string &what) {
  std::printf("%s: %s\n", ok ? "PASS" : "FAIL", what.c_str());
  std::fflush(stdout);
  if (!ok)
    ++failures;
}

} // namespace harness

#endif // GDN_TEST_INTEGRATION_HARNESS_CHECK_LINES_H
