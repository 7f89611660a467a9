// Instantiates the experimental fused delta-rule forward (kFusedForward)
// for gqa16x32 at both V tiles, for nvcc-fused-forward.test (compile only).
#include "gdn/device/delta_rule.cuh"

// Defined to 1: the misuse the launch's static_assert names.
#ifndef GDN_FUSED_WITHOUT_WGMMA
#define GDN_FUSED_WITHOUT_WGMMA 0
#endif

namespace {
template <int kTile> struct FusedGqa16x32 {
  using Element = __nv_bfloat16;
  static constexpr int kKeyHeads = 16, kValueHeads = 32, kHeadDimK = 128,
                       kHeadDimV = 128, kValueTile = kTile;
  static constexpr bool kHasInitialState = true, kHasFinalState = true;
  static constexpr bool kScanWgmma = !GDN_FUSED_WITHOUT_WGMMA,
                        kFusedForward = true;
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
