// A hand-written launchDeltaRuleAdaptive pair on MHA whose configs leave
// kWgmmaScanScores to its default: true at V tile 128, false at 64. They
// would share a workspace sized without P, so the launch refuses to
// compile (nvcc-scan-scores.test). With GDN_SAME_SCORES=1 the wide config
// states false too and the pair compiles. With GDN_HEADS_MISMATCH=1 the
// narrow config has other heads, which the launch refuses too.
#include "gdn/device/delta_rule.cuh"

#ifndef GDN_SAME_SCORES
#define GDN_SAME_SCORES 0
#endif
#ifndef GDN_HEADS_MISMATCH
#define GDN_HEADS_MISMATCH 0
#endif

namespace {
template <int kTile, int kHeads = 4> struct Mha4 {
  using Element = __nv_bfloat16;
  static constexpr int kKeyHeads = kHeads, kValueHeads = kHeads,
                       kHeadDimK = 128, kHeadDimV = 128, kValueTile = kTile;
  static constexpr bool kHasInitialState = false, kHasFinalState = false;
  static constexpr bool kScanWgmma = true;
};
struct Wide : Mha4<128> {};
struct WideWithoutScores : Mha4<128> {
  static constexpr bool kWgmmaScanScores = false;
};
using WideConfig =
    std::conditional_t<GDN_SAME_SCORES != 0, WideWithoutScores, Wide>;
} // namespace

cudaError_t launchPair(gdn::device::DeltaRuleArgs<WideConfig> args,
                       void *workspace, cudaStream_t stream) {
  using Narrow = Mha4<64, GDN_HEADS_MISMATCH != 0 ? 8 : 4>;
  return gdn::device::launchDeltaRuleAdaptive<WideConfig, Narrow>(
      args, workspace, stream, 100);
}
