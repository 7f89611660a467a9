//===- compare.h - a result against its float64 reference -----------------===//
//
// Every check against a float64 reference (gdn-run's results, the CPU
// recurrences) uses the same measure: the relative RMS error
// ||got - want|| / ||want|| (the absolute RMS when the reference is zero,
// so an all-zero reference still bounds the result), with NaN or Inf in the
// result reported apart, since it would make the error meaningless.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_TEST_INTEGRATION_HARNESS_COMPARE_H
#define GDN_TEST_INTEGRATION_HARNESS_COMPARE_H

#include <algorithm>
#include <cmath>
#include <vector>

namespace harness {

/// How far a result is from its reference, over the elements both hold.
struct RmsError {
  double relative = 0; ///< the relative RMS error (see the file comment)
  double maxAbs = 0;   ///< the largest |got - want| (NaN differences skipped)
  bool finite = true;  ///< false when `got` holds NaN or Inf
};

/// Sums in float64 and in element order, whatever `Got` is (float results
/// are widened exactly), so every caller computes the same number.
template <class Got, class Want>
RmsError rmsError(const std::vector<Got> &got, const std::vector<Want> &want) {
  RmsError error;
  double diff = 0, norm = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double d = double(got[i]) - double(want[i]);
    error.finite = error.finite && std::isfinite(got[i]);
    diff += d * d;
    norm += double(want[i]) * double(want[i]);
    error.maxAbs = std::max(error.maxAbs, std::fabs(d));
  }
  error.relative = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  return error;
}

/// The relative RMS error of `got` against `want`; clears `finite` when
/// `got` holds NaN or Inf and never sets it, so that one flag can collect
/// several comparisons.
template <class Got, class Want>
double relativeRms(const std::vector<Got> &got, const std::vector<Want> &want,
                   bool &finite) {
  const RmsError error = rmsError(got, want);
  finite = finite && error.finite;
  return error.relative;
}

} // namespace harness

#endif // GDN_TEST_INTEGRATION_HARNESS_COMPARE_H
