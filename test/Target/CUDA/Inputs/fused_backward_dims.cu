// kFusedBackwardWgmma at K = V = 64 (nvcc-fused-backward-dims.test): must
// not compile.
#include "gdn/device/delta_rule_backward.cuh"

struct HeadDim64 {
  using Element = __nv_bfloat16;
  static constexpr int kKeyHeads = 1, kValueHeads = 2, kHeadDimK = 64, kHeadDimV = 64,
                       kValueTile = 64;
  static constexpr bool kHasInitialState = false, kHasFinalState = false;
  static constexpr bool kScanWgmma = true, kReverseScanWgmma = true, kChunkGradWgmma = true;
  static constexpr bool kFusedBackwardWgmma = true;
};

size_t fusedBytes() { return gdn::device::FusedBackwardShape<HeadDim64>::kBytes; }
