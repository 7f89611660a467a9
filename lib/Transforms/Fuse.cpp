//===- Fuse.cpp - gdn ops into fused kernel ops ---------------------------===//
//
// Implements gdn-fuse. The prologue is matched from the delta rule upwards:
// its q and k must be L2 norms of a split of a SiLU conv, and its g and beta
// the results of one gates op. The conv output is then never materialised,
// which is the point: it is the largest tensor of the layer's forward.
//
//===----------------------------------------------------------------------===//

#include "gdn/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNFUSE
#include "gdn/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {

/// The gdn ops one prologue kernel replaces.
struct PrologueMatch {
  CausalConv1dOp conv;
  SplitQkvOp split;
  L2NormOp normQ, normK;
  GatesOp gates;
};

std::optional<PrologueMatch> matchPrologue(DeltaRuleOp delta) {
  PrologueMatch m;
  m.normQ = delta.getQ().getDefiningOp<L2NormOp>();
  m.normK = delta.getK().getDefiningOp<L2NormOp>();
  m.gates = delta.getG().getDefiningOp<GatesOp>();
  if (!m.normQ || !m.normK || !m.gates ||
      delta.getBeta().getDefiningOp<GatesOp>() != m.gates)
    return std::nullopt;
  m.split = m.normQ.getX().getDefiningOp<SplitQkvOp>();
  if (!m.split || m.normK.getX() != m.split.getK() ||
      m.normQ.getX() != m.split.getQ() || delta.getV() != m.split.getV())
    return std::nullopt;
  // The split's q and k must not be needed unnormalised, nor the conv output
  // elsewhere: those tensors stop existing.
  if (!m.split.getQ().hasOneUse() || !m.split.getK().hasOneUse() ||
      m.normQ.getEps() != m.normK.getEps())
    return std::nullopt;
  m.conv = m.split.getMixedQkv().getDefiningOp<CausalConv1dOp>();
  if (!m.conv || !m.conv.getY().hasOneUse())
    return std::nullopt;
  // The kernel computes on packed buffers without layouts, and needs the
  // delta rule's packing for the conv.
  if (m.conv.getPacking() != delta.getPacking())
    return std::nullopt;
  return m;
}

struct GdnFusePass : public mlir::gdn::impl::GdnFuseBase<GdnFusePass> {
  using GdnFuseBase::GdnFuseBase;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<DeltaRuleOp> deltas;
    getOperation()->walk([&](DeltaRuleOp op) { deltas.push_back(op); });
    for (DeltaRuleOp delta : deltas)
      if (std::optional<PrologueMatch> m = matchPrologue(delta))
        fusePrologue(rewriter, delta, *m);

    SmallVector<GatedRMSNormOp> norms;
    getOperation()->walk([&](GatedRMSNormOp op) { norms.push_back(op); });
    for (GatedRMSNormOp norm : norms)
      fuseEpilogue(rewriter, norm);
  }

  void fusePrologue(IRRewriter &rewriter, DeltaRuleOp delta, PrologueMatch m) {
    auto qType = m.split.getQ().getType(), vType = m.split.getV().getType();
    Type element = qType.getElementType();
    if (!kernel::getLanesPerHead(qType.getDimSize(2), element) ||
        m.conv.getWidth() > 4)
      return;
    rewriter.setInsertionPoint(delta);
    Type finalState =
        m.conv.getFinalState() ? m.conv.getFinalState().getType() : Type();
    auto prologue = kernel::PrologueOp::create(
        rewriter,
        rewriter.getFusedLoc({m.conv.getLoc(), m.split.getLoc(),
                              m.normQ.getLoc(), m.normK.getLoc(),
                              m.gates.getLoc()}),
        m.normQ.getType(), m.normK.getType(), vType, m.gates.getG().getType(),
        m.gates.getBeta().getType(), finalState, m.conv.getX(),
        m.conv.getWeight(), m.conv.getBias(), m.conv.getInitialState(),
        m.gates.getA(), m.gates.getB(), m.gates.getALog(), m.gates.getDtBias(),
        m.conv.getPacking(), qType.getDimSize(1), vType.getDimSize(1),
        qType.getDimSize(2), vType.getDimSize(2), m.conv.getWidth(),
        m.conv.getActivation(), m.normQ.getEps(), m.gates.getAllowNegEigval(),
        static_cast<uint64_t>(threads), static_cast<uint64_t>(tokensPerBlock),
        static_cast<uint64_t>(tokenUnroll));
    rewriter.replaceAllUsesWith(m.normQ.getY(), prologue.getQ());
    rewriter.replaceAllUsesWith(m.normK.getY(), prologue.getK());
    rewriter.replaceAllUsesWith(m.split.getV(), prologue.getV());
    rewriter.replaceAllUsesWith(m.gates.getG(), prologue.getG());
    rewriter.replaceAllUsesWith(m.gates.getBeta(), prologue.getBeta());
    if (m.conv.getFinalState())
      rewriter.replaceAllUsesWith(m.conv.getFinalState(),
                                  prologue.getConvFinalState());
    for (Operation *op : {m.normQ.getOperation(), m.normK.getOperation(),
                          m.split.getOperation(), m.conv.getOperation(),
                          m.gates.getOperation()})
      rewriter.eraseOp(op);
    ++numPrologues;
  }

  void fuseEpilogue(IRRewriter &rewriter, GatedRMSNormOp norm) {
    auto type = norm.getX().getType();
    if (!kernel::getLanesPerHead(type.getDimSize(2), type.getElementType()) ||
        kernel::getElementBytes(norm.getZ().getType()) !=
            kernel::getElementBytes(type) ||
        kernel::getElementBytes(norm.getY().getType()) !=
            kernel::getElementBytes(type))
      return;
    rewriter.setInsertionPoint(norm);
    auto fused = kernel::GatedRMSNormOp::create(
        rewriter, norm.getLoc(), norm.getY().getType(), norm.getX(),
        norm.getZ(), norm.getWeight(), norm.getEpsAttr(),
        rewriter.getI64IntegerAttr(threads));
    rewriter.replaceOp(norm, fused.getY());
    ++numEpilogues;
  }
};

} // namespace
