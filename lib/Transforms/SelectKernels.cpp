//===- SelectKernels.cpp - kernel tiles from the packing and the device ---===//
//
// Implements gdn-select-kernels. The tiles it picks are the ones measured
// fastest on the H200 for each regime (docs/performance.md, 2026-11-29): the
// delta-rule scan is latency-bound per block, so with few (sequence, head)
// pairs it needs more, smaller blocks; with many, fewer and leaner blocks
// that share an SM.
//
//===----------------------------------------------------------------------===//

#include "gdn/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNSELECTKERNELS
#include "gdn/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {

struct GdnSelectKernelsPass
    : public mlir::gdn::impl::GdnSelectKernelsBase<GdnSelectKernelsPass> {
  using GdnSelectKernelsBase::GdnSelectKernelsBase;

  void runOnOperation() override {
    if (smCount <= 0 || expectedSeqs < 0) {
      emitError(getOperation()->getLoc())
          << "gdn-select-kernels: sm-count (" << static_cast<int64_t>(smCount)
          << ") must be positive and expected-seqs ("
          << static_cast<int64_t>(expectedSeqs) << ") not negative";
      return signalPassFailure();
    }
    Builder builder(&getContext());
    getOperation()->walk([&](kernel::DeltaRuleOp op) {
      PackingType packing = op.getPacking().getType();
      const int64_t seqs =
          packing.hasStaticSeqs() ? packing.getSeqs() : expectedSeqs;
      // Scan blocks with 64-column V tiles.
      const int64_t blocks = seqs * op.getValueHeads() * op.getHeadDimV() / 64;
      const bool fewBlocks = seqs > 0 && blocks < smCount;
      const int64_t tile = fewBlocks ? 32 : 64, stages = fewBlocks ? 2 : 1;
      if (!kernel::isSupportedDeltaRuleTile(op.getHeadDimK(), op.getHeadDimV(),
                                            tile, stages))
        return;
      op.setValueTileAttr(builder.getI64IntegerAttr(tile));
      op.setScanStagesAttr(builder.getI64IntegerAttr(stages));
    });
  }
};

} // namespace
