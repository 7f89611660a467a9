//===- reference_check.h - a generated function's result against gdn-run --===//
//
// The generated-function harnesses (run_function, run_ranks) check each
// result the same way: write it to OUT as .npy (for a reader or a later
// gather across ranks), read gdn-run's float64 result, and require a
// relative RMS error within the tolerance and no NaN or Inf. One line per
// result, whose wording the GPU scripts show as is.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_TEST_INTEGRATION_HARNESS_REFERENCE_CHECK_H
#define GDN_TEST_INTEGRATION_HARNESS_REFERENCE_CHECK_H

#include "compare.h"
#include "host_tensors.h"
#include "npy.h"

#include <cstdio>
#include <string>
#include <vector>

namespace harness {

/// Writes the downloaded `bytes` of `tensor` to `out`, compares them with
/// gdn-run's `expected` .npy and reports one check named after `what`
/// through `expect(ok, line)` (the caller's PASS/FAIL lines).
template <class Expect>
void compareWithReference(const std::string &what, const gdn_tensor_t &tensor,
                          const std::vector<char> &bytes,
                          const std::string &expected, const std::string &out,
                          double rtol, Expect &&expect) {
  writeResult(out, tensor, bytes);
  npy::Array reference;
  std::string error;
  if (!npy::read(expected, reference, error)) {
    expect(false, error);
    return;
  }
  const std::vector<double> values = decodeAll(bytes, tensor.dtype);
  bool finite = true;
  const double rel = relativeRms(values, reference.values, finite);
  char line[256];
  std::snprintf(line, sizeof(line),
                "%s matches gdn-run: rel_rms = %.3e (rtol %.1e)%s",
                what.c_str(), rel, rtol, finite ? "" : ", NON-FINITE values");
  expect(finite && values.size() == reference.values.size() && rel <= rtol,
         line);
}

} // namespace harness

#endif // GDN_TEST_INTEGRATION_HARNESS_REFERENCE_CHECK_H
