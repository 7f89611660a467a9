// Instantiates the experimental fused delta-rule forward (kFusedForward)
// for gqa16x32 at both V tiles, for nvcc-fused-forward.test (compile only).
#include "gdn/device/delta_rule.cuh"

namespace {
template <int kTile> struct FusedGqa16x32 {
  using Element = __nv_bfloat16;
  static constexpr int kKeyHeads = 16, kValueHeads = 32, kHeadDimK = 128,
                       kHeadDimV = 128, kValueTile = kTile;
  static constexpr bool kHasInitialState = true, kHasFinalState = true;
  static constexpr bool kScanWgmma = true, kFusedForward = true;
};
} // namespace

cudaError_t launchFused128(gdn::device::DeltaRuleArgs<FusedGqa16x32<128>> args,
                           cudaStream_t stream) {
  return gdn::device::launchDeltaRule<FusedGqa16x32<128>>(args, nullptr,
                                                          stream);
}
cudaError_t launchFused64(gdn::device::DeltaRuleArgs<FusedGqa16x32<64>> args,
                          cudaStream_t stream) {
  return gdn::device::launchDeltaRule<FusedGqa16x32<64>>(args, nullptr, stream);
}
