// Instantiates the fused block whose producer makes P alone
// (kFusedForward with kFusedInverse = false) for gqa16x32 at V tile 128,
// for nvcc-fused-producer-scores.test (compile only).
#include "gdn/device/delta_rule.cuh"

// Defined to 1: the misuse the launch's static_assert names (the knob
// without the fused block).
#ifndef GDN_PRODUCER_WITHOUT_FUSED
#define GDN_PRODUCER_WITHOUT_FUSED 0
#endif

namespace {
struct ProducerScoresGqa16x32 {
  using Element = __nv_bfloat16;
  static constexpr int kKeyHeads = 16, kValueHeads = 32, kHeadDimK = 128,
                       kHeadDimV = 128, kValueTile = 128;
  static constexpr bool kHasInitialState = true, kHasFinalState = true;
  static constexpr bool kScanWgmma = true,
                        kFusedForward = !GDN_PRODUCER_WITHOUT_FUSED,
                        kFusedInverse = false;
};
} // namespace

// The workspace holds M, G and the bounds but no P.
static_assert(
    GDN_PRODUCER_WITHOUT_FUSED ||
        (gdn::device::ScanComputesScoresOf<ProducerScoresGqa16x32>::value &&
         !gdn::device::FusedOnlyOf<ProducerScoresGqa16x32>::value &&
         !gdn::device::DeltaRuleWgmmaShape<
             ProducerScoresGqa16x32>::kScoresInScan),
    "the producer writes P into the stage; the prepare kernel "
    "skips it");

cudaError_t
launchProducerScores(gdn::device::DeltaRuleArgs<ProducerScoresGqa16x32> args,
                     void *workspace, cudaStream_t stream) {
  return gdn::device::launchDeltaRule<ProducerScoresGqa16x32>(args, workspace,
                                                              stream);
}
