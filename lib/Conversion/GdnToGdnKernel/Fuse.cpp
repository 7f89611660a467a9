//===- Fuse.cpp - gdn ops into fused kernel ops ---------------------------===//
//
// Implements gdn-fuse. The prologue is matched from the delta rule upwards:
// its q and k must be L2 norms of a split of a SiLU conv, and its g and beta
// the results of one gates op. The conv output is then never materialised,
// which is the point: it is the largest tensor of the layer's forward.
//
//===----------------------------------------------------------------------===//

#include "gdn/Conversion/Passes.h"

#include "gdn/Analysis/GdnCore.h"

#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNFUSE
#include "gdn/Conversion/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {

/// The gdn ops one prologue kernel replaces: a GDN core less its delta rule.
using PrologueMatch = Core;

/// A packing of this rank's own contiguous token shard under chunkwise
/// context parallelism (every sequence clipped to the shard, or the leaving
/// sequence's rows): kernels run on it as on a packing of all tokens.
bool isShardPacking(Value packing) {
  return isa_and_nonnull<comm::LocalPackingOp, comm::SummaryPackingOp>(
      packing.getDefiningOp());
}

/// True when `value`'s token layout, if any, is what a kernel on `packing`
/// takes: none, or this rank's contiguous shard on a shard packing.
bool kernelTakesLayout(Value value, Value packing) {
  Attribute layout = getSequenceLayout(value.getType());
  if (!layout)
    return true;
  auto shard = dyn_cast<SeqLayoutAttr>(layout);
  return isShardPacking(packing) && shard &&
         shard.getKind() == SeqLayoutKind::Contiguous;
}

/// The value a cotangent reaches through single-use arith.addf ops: a
/// delta-rule gradient that other contributions are added to (chunkwise
/// CP's state summaries) feeds the prologue's VJP through that sum.
Value throughSums(Value cotangent) {
  while (cotangent.hasOneUse())
    if (auto add = dyn_cast<arith::AddFOp>(*cotangent.getUsers().begin()))
      cotangent = add.getResult();
    else
      break;
  return cotangent;
}

std::optional<PrologueMatch> matchPrologue(std::optional<Core> core) {
  if (!core)
    return std::nullopt;
  PrologueMatch &m = *core;
  // The split's q and k must not be needed unnormalised, nor the conv output
  // elsewhere: those tensors stop existing.
  if (!m.split.getQ().hasOneUse() || !m.split.getK().hasOneUse() ||
      m.normQ.getEps() != m.normK.getEps())
    return std::nullopt;
  if (!m.conv.getY().hasOneUse())
    return std::nullopt;
  // The kernel computes on one packed buffer: all tokens, or (chunkwise
  // context parallelism) this rank's contiguous shard with the packing
  // clipped to it. Other token layouts must be converted first.
  for (Value value :
       {m.conv.getX(), m.conv.getY(), m.split.getQ(), m.split.getK(),
        m.split.getV(), m.normQ.getY(), m.normK.getY(), m.gates.getA(),
        m.gates.getB(), m.gates.getG(), m.gates.getBeta()})
    if (!kernelTakesLayout(value, m.conv.getPacking()))
      return std::nullopt;
  return core;
}

/// The gradient ops one prologue_grad kernel replaces, found from the delta
/// rule's gradient: the VJPs of the L2 norms, the split (merge_qkv), the
/// conv and the gates of the prologue that computed its q, k, v, g and beta.
/// `core` holds that prologue's conv and split; its norms and gates too when
/// the backward recomputes them (save=inputs: they compute the delta rule
/// gradient's operands), none when those operands were saved
/// (save=operands: only the conv and split are recomputed, for the norms'
/// VJPs).
struct PrologueGradMatch {
  Core core;
  L2NormGradOp normGradQ, normGradK;
  MergeQkvOp merge;
  CausalConv1dGradOp convGrad;
  GatesGradOp gatesGrad;
};

/// The only user of `value`, if it is an `OpTy`.
template <typename OpTy> OpTy soleUser(Value value) {
  if (!value.hasOneUse())
    return {};
  return dyn_cast<OpTy>(*value.getUsers().begin());
}

std::optional<PrologueGradMatch> matchPrologueGrad(DeltaRuleGradOp grad) {
  PrologueGradMatch m;
  // The delta rule's k, v, g and beta gradients may have other
  // contributions added on their way (chunkwise CP's state summaries).
  const Value kGrad = throughSums(grad.getKGrad()),
              vGrad = throughSums(grad.getVGrad()),
              gGrad = throughSums(grad.getGGrad()),
              betaGrad = throughSums(grad.getBetaGrad());
  m.normGradQ = soleUser<L2NormGradOp>(grad.getQGrad());
  m.normGradK = soleUser<L2NormGradOp>(kGrad);
  m.gatesGrad = soleUser<GatesGradOp>(gGrad);
  if (!m.normGradQ || !m.normGradK || !m.gatesGrad ||
      m.normGradQ.getEps() != m.normGradK.getEps())
    return std::nullopt;
  if (std::optional<Core> core =
          findCoreInputs(grad.getQ(), grad.getK(), grad.getV(), grad.getG(),
                         grad.getBeta(), grad.getPacking())) {
    // The norms' and the gates' VJPs must be of the ops the prologue
    // computes.
    GatesOp gates = core->gates;
    GatesGradOp gatesGrad = m.gatesGrad;
    if (m.normGradQ.getX() != core->split.getQ() ||
        m.normGradK.getX() != core->split.getK() ||
        m.normGradQ.getEps() != core->normQ.getEps() ||
        core->normQ.getEps() != core->normK.getEps() ||
        gatesGrad.getA() != gates.getA() || gatesGrad.getB() != gates.getB() ||
        gatesGrad.getALog() != gates.getALog() ||
        gatesGrad.getDtBias() != gates.getDtBias() ||
        gatesGrad.getAllowNegEigval() != gates.getAllowNegEigval())
      return std::nullopt;
    m.core = *core;
  } else {
    // Saved operands: the norms' VJPs read the split of a recomputed conv.
    m.core.split = m.normGradQ.getX().getDefiningOp<SplitQkvOp>();
    if (!m.core.split || m.normGradQ.getX() != m.core.split.getQ() ||
        m.normGradK.getX() != m.core.split.getK())
      return std::nullopt;
    m.core.conv =
        m.core.split.getMixedQkv().getDefiningOp<CausalConv1dOp>();
    if (!m.core.conv || m.core.conv.getPacking() != grad.getPacking())
      return std::nullopt;
  }
  m.merge = soleUser<MergeQkvOp>(m.normGradQ.getXGrad());
  if (!m.merge || m.merge.getQ() != m.normGradQ.getXGrad() ||
      m.merge.getK() != m.normGradK.getXGrad() || m.merge.getV() != vGrad ||
      !vGrad.hasOneUse() || !m.normGradK.getXGrad().hasOneUse())
    return std::nullopt;
  m.convGrad = soleUser<CausalConv1dGradOp>(m.merge.getMixedQkv());
  CausalConv1dOp conv = m.core.conv;
  if (!m.convGrad || m.convGrad.getX() != conv.getX() ||
      m.convGrad.getWeight() != conv.getWeight() ||
      m.convGrad.getBias() != conv.getBias() ||
      m.convGrad.getInitialState() != conv.getInitialState() ||
      m.convGrad.getPacking() != conv.getPacking() ||
      m.convGrad.getWidth() != conv.getWidth() ||
      m.convGrad.getActivation() != conv.getActivation())
    return std::nullopt;
  if (m.gatesGrad.getGGrad() != gGrad ||
      m.gatesGrad.getBetaGrad() != betaGrad || !betaGrad.hasOneUse())
    return std::nullopt;
  // One packed buffer of all tokens, or this rank's shard.
  for (Operation *op : {m.normGradQ.getOperation(), m.normGradK.getOperation(),
                        m.merge.getOperation(), m.convGrad.getOperation(),
                        m.gatesGrad.getOperation()})
    for (Value value : llvm::concat<Value>(op->getOperands(), op->getResults()))
      if (!kernelTakesLayout(value, conv.getPacking()))
        return std::nullopt;
  return m;
}

/// The prologue_grad tile: 512 threads of 8-byte channel vectors, 6 rows in
/// flight, the one measured best for gqa16x32 on the H200
/// (docs/backward.md); 16-byte vectors where a key head would need more
/// than a warp of 8-byte ones (f32 with K = 128, bf16 with K = 256);
/// narrower layers get fewer threads, so that no block is mostly idle. Row
/// blocks fill one wave of `smCount` SMs.
struct PrologueGradTile {
  int64_t threads, vectorBytes, rowsInFlight, rowBlocks;
};
PrologueGradTile choosePrologueGradTile(int64_t channels, int64_t headDimK,
                                        Type element, int64_t smCount) {
  PrologueGradTile tile{512, 8, 6, 1};
  const int64_t bytes = kernel::getElementBytes(element);
  if (headDimK * bytes > 32 * 8) {
    // 16-byte vectors need about 250 registers: 256 threads, one block per
    // SM, 4 rows in flight (the tile measured for them).
    tile = {256, 16, 4, 1};
  }
  const int64_t vectors = channels * bytes / tile.vectorBytes;
  while (tile.threads > 128 && tile.threads / 2 >= vectors)
    tile.threads /= 2;
  const int64_t channelBlocks = (vectors + tile.threads - 1) / tile.threads;
  const int64_t blocksPerSM =
      kernel::getPrologueGradBlocksPerSM(tile.threads, tile.vectorBytes);
  tile.rowBlocks = std::max<int64_t>(1, smCount * blocksPerSM / channelBlocks);
  return tile;
}

/// True if `op` verifies. Its diagnostics are dropped: a kernel op that does
/// not verify (f64 tensors, heads that are not a power-of-two lane group,
/// mixed parameter dtypes, ...) only means that the dataflow stays unfused.
bool verifiesQuietly(Operation *op) {
  ScopedDiagnosticHandler quiet(op->getContext(),
                                [](Diagnostic &) { return success(); });
  return succeeded(verify(op));
}

struct GdnFusePass : public mlir::gdn::impl::GdnFuseBase<GdnFusePass> {
  using GdnFuseBase::GdnFuseBase;

  void runOnOperation() override {
    // Checked here rather than left to the verifier: a tile the kernels
    // cannot take is a usage error, not dataflow to leave unfused.
    if (threads <= 0 || threads % 32 != 0 || threads > 1024 ||
        tokensPerBlock <= 0 || tokensPerBlock > 1024 || rowsInFlight <= 0 ||
        rowsInFlight > 16) {
      emitError(getOperation()->getLoc())
          << "gdn-fuse: threads (" << static_cast<int64_t>(threads)
          << ") must be a positive multiple of 32 up to 1024, "
             "tokens-per-block ("
          << static_cast<int64_t>(tokensPerBlock)
          << ") in [1, 1024] and rows-in-flight ("
          << static_cast<int64_t>(rowsInFlight) << ") in [1, 16]";
      return signalPassFailure();
    }
    const int64_t sharedBytes =
        kernel::getPrologueSharedBytes(threads, rowsInFlight);
    if (sharedBytes > kernel::kMaxSharedBytesPerBlock) {
      emitError(getOperation()->getLoc())
          << "gdn-fuse: threads (" << static_cast<int64_t>(threads)
          << ") x rows-in-flight (" << static_cast<int64_t>(rowsInFlight)
          << ") needs " << sharedBytes
          << " bytes of shared memory per prologue block, above "
          << kernel::kMaxSharedBytesPerBlock
          << "; use fewer threads or rows in flight";
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    // The prologue's gradient ops first: once they are one kernel, the
    // backward's recomputed prologue has no other users and fuses too.
    SmallVector<DeltaRuleGradOp> gradCores;
    getOperation()->walk([&](DeltaRuleGradOp op) { gradCores.push_back(op); });
    for (DeltaRuleGradOp grad : gradCores)
      if (std::optional<PrologueGradMatch> m = matchPrologueGrad(grad))
        fusePrologueGrad(rewriter, grad, *m);
    for (DeltaRuleGradOp grad : gradCores)
      if (std::optional<PrologueMatch> m = matchPrologue(
              findCoreInputs(grad.getQ(), grad.getK(), grad.getV(), grad.getG(),
                             grad.getBeta(), grad.getPacking())))
        fusePrologue(rewriter, grad, *m);

    SmallVector<DeltaRuleOp> deltas;
    getOperation()->walk([&](DeltaRuleOp op) { deltas.push_back(op); });
    for (DeltaRuleOp delta : deltas)
      if (std::optional<PrologueMatch> m = matchPrologue(findCore(delta)))
        fusePrologue(rewriter, delta, *m);

    // Delta rules after the prologues, which match from them.
    SmallVector<DeltaRuleOp> rules;
    getOperation()->walk([&](DeltaRuleOp op) { rules.push_back(op); });
    for (DeltaRuleOp rule : rules)
      lowerDeltaRule(rewriter, rule);
    SmallVector<DeltaRuleGradOp> grads;
    getOperation()->walk([&](DeltaRuleGradOp op) { grads.push_back(op); });
    for (DeltaRuleGradOp grad : grads)
      lowerDeltaRuleGrad(rewriter, grad);

    SmallVector<GatedRMSNormOp> norms;
    getOperation()->walk([&](GatedRMSNormOp op) { norms.push_back(op); });
    for (GatedRMSNormOp norm : norms)
      fuseEpilogue(rewriter, norm);
    SmallVector<GatedRMSNormGradOp> normGrads;
    getOperation()->walk(
        [&](GatedRMSNormGradOp op) { normGrads.push_back(op); });
    for (GatedRMSNormGradOp grad : normGrads)
      fuseEpilogueGrad(rewriter, grad);
  }

  /// Replaces the prologue's gradient ops by one gdn_kernel.prologue_grad,
  /// where the first of them was (after the delta rule's gradient and
  /// whatever is added to its cotangents).
  void fusePrologueGrad(IRRewriter &rewriter, DeltaRuleGradOp grad,
                        PrologueGradMatch m) {
    CausalConv1dOp conv = m.core.conv;
    auto qType = m.core.split.getQ().getType();
    auto vType = m.core.split.getV().getType();
    const int64_t channels = 2 * qType.getDimSize(1) * qType.getDimSize(2) +
                             vType.getDimSize(1) * vType.getDimSize(2);
    const PrologueGradTile tile = choosePrologueGradTile(
        channels, qType.getDimSize(2), qType.getElementType(), 132);
    Operation *first = m.gatesGrad;
    for (Operation *op :
         {m.normGradQ.getOperation(), m.normGradK.getOperation(),
          m.merge.getOperation(), m.convGrad.getOperation()})
      if (op->getBlock() == first->getBlock() && op->isBeforeInBlock(first))
        first = op;
    rewriter.setInsertionPoint(first);
    CausalConv1dGradOp convGrad = m.convGrad;
    GatesGradOp gatesGrad = m.gatesGrad;
    auto fused = kernel::PrologueGradOp::create(
        rewriter,
        rewriter.getFusedLoc({m.normGradQ.getLoc(), m.normGradK.getLoc(),
                              m.merge.getLoc(), convGrad.getLoc(),
                              gatesGrad.getLoc()}),
        convGrad.getXGrad().getType(), convGrad.getWeightGrad().getType(),
        gatesGrad.getAGrad().getType(), gatesGrad.getBGrad().getType(),
        gatesGrad.getALogGrad().getType(), gatesGrad.getDtBiasGrad().getType(),
        convGrad.getOptionalGrads().getTypes(), conv.getX(), conv.getWeight(),
        conv.getBias(), conv.getInitialState(), gatesGrad.getA(),
        gatesGrad.getB(), gatesGrad.getALog(), gatesGrad.getDtBias(),
        conv.getPacking(),
        m.normGradQ.getYGrad(), m.normGradK.getYGrad(), m.merge.getV(),
        gatesGrad.getGGrad(), gatesGrad.getBetaGrad(),
        convGrad.getFinalStateGrad(), qType.getDimSize(1), vType.getDimSize(1),
        qType.getDimSize(2), vType.getDimSize(2), conv.getWidth(),
        conv.getActivation(), m.normGradQ.getEps(),
        gatesGrad.getAllowNegEigval(),
        static_cast<uint64_t>(tile.threads),
        static_cast<uint64_t>(tile.vectorBytes),
        static_cast<uint64_t>(tile.rowsInFlight),
        static_cast<uint64_t>(tile.rowBlocks));
    if (!verifiesQuietly(fused) || !operandsDefinedBefore(fused)) {
      rewriter.eraseOp(fused);
      return;
    }
    // Results: the conv's two, the gates' four, then the conv's optional
    // gradients (both ops put bias before initial state).
    rewriter.replaceAllUsesWith(convGrad.getXGrad(), fused.getMixedQkvGrad());
    rewriter.replaceAllUsesWith(convGrad.getWeightGrad(),
                                fused.getConvWeightGrad());
    rewriter.replaceAllUsesWith(convGrad.getOptionalGrads(),
                                fused.getOptionalGrads());
    rewriter.replaceOp(gatesGrad, fused->getResults().slice(2, 4));
    for (Operation *op :
         {convGrad.getOperation(), m.merge.getOperation(),
          m.normGradQ.getOperation(), m.normGradK.getOperation()})
      rewriter.eraseOp(op);
    ++numPrologueGrads;
  }

  /// True when every operand of `op` is defined before it (or is a block
  /// argument of its block).
  static bool operandsDefinedBefore(Operation *op) {
    for (Value operand : op->getOperands()) {
      if (auto argument = dyn_cast<BlockArgument>(operand)) {
        if (argument.getOwner() != op->getBlock())
          return false;
        continue;
      }
      Operation *def = operand.getDefiningOp();
      if (def->getBlock() != op->getBlock() || !def->isBeforeInBlock(op))
        return false;
    }
    return true;
  }

  void fuseEpilogueGrad(IRRewriter &rewriter, GatedRMSNormGradOp grad) {
    rewriter.setInsertionPoint(grad);
    auto fused = kernel::GatedRMSNormGradOp::create(
        rewriter, grad.getLoc(), grad.getXGrad().getType(),
        grad.getZGrad().getType(), grad.getWeightGrad().getType(),
        grad.getYGrad(), grad.getX(), grad.getZ(), grad.getWeight(),
        grad.getEpsAttr(), rewriter.getI64IntegerAttr(threads),
        rewriter.getI64IntegerAttr(kEpilogueGradBlocks));
    if (!verifiesQuietly(fused)) {
      rewriter.eraseOp(fused);
      return;
    }
    rewriter.replaceOp(grad, fused->getResults());
    ++numEpilogueGrads;
  }

  /// The gated RMSNorm backward's most blocks: the tile measured best on the
  /// H200 (528 blocks of 256 threads, docs/backward.md: 84% of device copy
  /// at 32K tokens).
  static constexpr int64_t kEpilogueGradBlocks = 528;

  void fusePrologue(IRRewriter &rewriter, Operation *consumer,
                    PrologueMatch m) {
    auto qType = m.split.getQ().getType(), vType = m.split.getV().getType();
    Type element = qType.getElementType();
    if (!kernel::getLanesPerHead(qType.getDimSize(2), element) ||
        m.conv.getWidth() > 4)
      return;
    // A wider conv input (an f32 projection output) takes more ring words
    // than the pass-level check of the tile assumed: an error, not a
    // silently unfused prologue.
    const int64_t inputWords =
        kernel::getPrologueInputWords(m.conv.getX().getType(), element, 16);
    const int64_t sharedBytes = kernel::getPrologueSharedBytes(
        threads, rowsInFlight, std::max<int64_t>(inputWords, 1));
    if (sharedBytes > kernel::kMaxSharedBytesPerBlock) {
      m.conv.emitError()
          << "gdn-fuse: threads (" << static_cast<int64_t>(threads)
          << ") x rows-in-flight (" << static_cast<int64_t>(rowsInFlight)
          << ") needs " << sharedBytes
          << " bytes of shared memory per prologue block for its "
          << getElementTypeOrSelf(m.conv.getX().getType())
          << " conv input, above " << kernel::kMaxSharedBytesPerBlock
          << "; use fewer threads or rows in flight";
      signalPassFailure();
      return;
    }
    rewriter.setInsertionPoint(consumer);
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
        static_cast<uint64_t>(rowsInFlight));
    if (!verifiesQuietly(prologue) || !placeBeforeUsers(prologue, m)) {
      rewriter.eraseOp(prologue);
      return;
    }
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

  /// Moves the prologue right before the first user of the values it
  /// replaces: the delta rule (or its gradient), or an earlier user (say of v,
  /// between the split and the delta rule). False when one of its operands is
  /// only defined after that point, or the match spans blocks.
  static bool placeBeforeUsers(kernel::PrologueOp prologue, PrologueMatch m) {
    Block *block = prologue->getBlock();
    for (Operation *op :
         {m.conv.getOperation(), m.split.getOperation(), m.normQ.getOperation(),
          m.normK.getOperation(), m.gates.getOperation()})
      if (op->getBlock() != block)
        return false;
    SmallVector<Value> replaced = {m.normQ.getY(), m.normK.getY(),
                                   m.split.getV(), m.gates.getG(),
                                   m.gates.getBeta()};
    if (m.conv.getFinalState())
      replaced.push_back(m.conv.getFinalState());
    Operation *first = prologue->getNextNode(); // the consumer
    for (Value value : replaced)
      for (Operation *user : value.getUsers()) {
        Operation *ancestor = block->findAncestorOpInBlock(*user);
        if (!ancestor)
          return false;
        if (ancestor->isBeforeInBlock(first))
          first = ancestor;
      }
    prologue->moveBefore(first);
    for (Value operand : prologue->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (def->getBlock() == block && !def->isBeforeInBlock(prologue))
          return false;
    return true;
  }

  /// gdn.delta_rule -> gdn_kernel.delta_rule, with the tile measured best
  /// on many (sequence, head) pairs (docs/performance.md: V tile 128, two
  /// staged chunks); gdn-select-kernels revises it from the packing. Rules the
  /// kernel cannot take (not bf16, head dims other than 64 and 128, token
  /// layouts other than a rank's own contiguous shard) stay as they are.
  void lowerDeltaRule(IRRewriter &rewriter, DeltaRuleOp rule) {
    auto qType = rule.getQ().getType(), vType = rule.getV().getType();
    for (Value value : {rule.getQ(), rule.getK(), rule.getV(), rule.getG(),
                        rule.getBeta(), rule.getO()})
      if (!kernelTakesLayout(value, rule.getPacking()))
        return;
    const int64_t headDimV = vType.getDimSize(2);
    const int64_t tile = headDimV == 128 ? 128 : 64,
                  stages = tile == 128 ? 2 : 1;
    if (!kernel::isSupportedDeltaRuleTile(qType.getDimSize(2), headDimV, tile,
                                          stages))
      return;
    rewriter.setInsertionPoint(rule);
    // The final state is computed only when something reads it.
    Value finalState = rule.getFinalState();
    auto lowered = kernel::DeltaRuleOp::create(
        rewriter, rule.getLoc(), rule.getO().getType(),
        finalState.use_empty() ? Type() : finalState.getType(), rule.getQ(),
        rule.getK(), rule.getV(), rule.getG(), rule.getBeta(),
        rule.getPacking(), rule.getInitialState(),
        static_cast<uint64_t>(qType.getDimSize(1)),
        static_cast<uint64_t>(vType.getDimSize(1)),
        static_cast<uint64_t>(qType.getDimSize(2)),
        static_cast<uint64_t>(vType.getDimSize(2)),
        llvm::APFloat(rule.getEffectiveScale()), static_cast<uint64_t>(tile),
        static_cast<uint64_t>(stages),
        /*scan=*/"mma_sync", /*narrow_value_tile=*/nullptr,
        /*narrow_below_blocks=*/nullptr, /*split_target_blocks=*/nullptr,
        /*warmup_bits=*/nullptr, /*scores=*/"prepare");
    if (!verifiesQuietly(lowered)) {
      rewriter.eraseOp(lowered);
      return;
    }
    rewriter.replaceAllUsesWith(rule.getO(), lowered.getO());
    if (!finalState.use_empty())
      rewriter.replaceAllUsesWith(finalState, lowered.getFinalState());
    rewriter.eraseOp(rule);
    ++numDeltaRules;
  }

  /// gdn.delta_rule_grad -> gdn_kernel.delta_rule_grad (the backward's five
  /// kernels) where the kernels take it: bf16 q, k, v, head dims 64 or 128,
  /// tokens of one whole pack or of this rank's shard. Others stay as they
  /// are.
  void lowerDeltaRuleGrad(IRRewriter &rewriter, DeltaRuleGradOp grad) {
    for (Value value :
         llvm::concat<Value>(grad->getOperands(), grad->getResults()))
      if (!isa<PackingType>(value.getType()) &&
          !kernelTakesLayout(value, grad.getPacking()))
        return;
    auto qType = grad.getQ().getType(), vType = grad.getV().getType();
    rewriter.setInsertionPoint(grad);
    Value initialGrad = grad.getInitialStateGrad();
    auto lowered = kernel::DeltaRuleGradOp::create(
        rewriter, grad.getLoc(), grad.getQGrad().getType(),
        grad.getKGrad().getType(), grad.getVGrad().getType(),
        grad.getGGrad().getType(), grad.getBetaGrad().getType(),
        initialGrad ? initialGrad.getType() : Type(), grad.getOGrad(),
        grad.getQ(), grad.getK(), grad.getV(), grad.getG(), grad.getBeta(),
        grad.getPacking(), grad.getInitialState(), grad.getFinalStateGrad(),
        static_cast<uint64_t>(qType.getDimSize(1)),
        static_cast<uint64_t>(vType.getDimSize(1)),
        static_cast<uint64_t>(qType.getDimSize(2)),
        static_cast<uint64_t>(vType.getDimSize(2)),
        llvm::APFloat(grad.getEffectiveScale()),
        /*split_target_blocks=*/IntegerAttr(), /*warmup_bits=*/IntegerAttr());
    if (!verifiesQuietly(lowered)) {
      rewriter.eraseOp(lowered);
      return;
    }
    rewriter.replaceOp(grad, lowered->getResults());
    ++numDeltaRuleGrads;
  }

  void fuseEpilogue(IRRewriter &rewriter, GatedRMSNormOp norm) {
    // The kernel op's verifier holds the element widths to what the kernel
    // moves (z may be wider than x: an f32 projection output).
    auto type = norm.getX().getType();
    if (!kernel::getLanesPerHead(type.getDimSize(2), type.getElementType()))
      return;
    rewriter.setInsertionPoint(norm);
    auto fused = kernel::GatedRMSNormOp::create(
        rewriter, norm.getLoc(), norm.getY().getType(), norm.getX(),
        norm.getZ(), norm.getWeight(), norm.getEpsAttr(),
        rewriter.getI64IntegerAttr(threads));
    if (!verifiesQuietly(fused)) {
      rewriter.eraseOp(fused);
      return;
    }
    rewriter.replaceOp(norm, fused.getY());
    ++numEpilogues;
  }
};

} // namespace
