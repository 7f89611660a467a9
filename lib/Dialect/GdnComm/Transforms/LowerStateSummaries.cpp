//===- LowerStateSummaries.cpp - summaries as delta-rule runs -------------===//
//
// Implements gdn-lower-state-summaries. A chunkwise-CP rank summarises the
// sequence that leaves its shard: the state it hands on is M S_in + S.
// Both are delta-rule final states over that sequence's rows of the shard:
// S from the sequence's own initial state (or zero, when it began on an
// earlier rank), and M, with zero values, from the identity (or zero, when
// it starts here). So the summary is two runs of the delta rule over
// gdn_comm.summary_packing (the leaving sequence as sequence 1 of a
// two-sequence packing of the shard), and its gradient two runs of the
// delta rule's gradient; the existing kernels (and their tuning) serve
// both, at a cost proportional to the leaving sequence's rows.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/GdnComm/Transforms/Passes.h"

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNLOWERSTATESUMMARIES
#include "gdn/Dialect/GdnComm/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// What both lowerings build first: the summary packing and the two runs'
/// initial states.
struct SummaryRuns {
  Value packing, partialInitial, transitionInitial;
};

SummaryRuns buildRuns(OpBuilder &builder, Location loc, Value globalPacking,
                      Value initialState, Value k, int64_t valueHeads,
                      int64_t headDimV, comm::GroupAttr group,
                      Value incoming = {}) {
  MLIRContext *context = builder.getContext();
  const int64_t rows = tensorType(k).getDimSize(0);
  const int64_t headDimK = tensorType(k).getDimSize(2);
  auto packingType = PackingType::get(context, 2, rows, /*padded=*/true,
                                      /*maxLen=*/rows);
  SummaryRuns runs;
  runs.packing = comm::SummaryPackingOp::create(builder, loc, packingType,
                                                globalPacking, group);
  Type f32 = builder.getF32Type();
  auto partialType =
      RankedTensorType::get({2, valueHeads, headDimK, headDimV}, f32);
  auto transitionType =
      RankedTensorType::get({2, valueHeads, headDimK, headDimK}, f32);
  auto states = comm::SummaryInitialStatesOp::create(
      builder, loc, partialType, transitionType, globalPacking, initialState,
      incoming, group);
  runs.partialInitial = states.getPartial();
  runs.transitionInitial = states.getTransition();
  return runs;
}

/// Zeros of `type`: a splat of 0 with dynamic sizes from `like`'s.
Value zerosLike(OpBuilder &builder, Location loc, RankedTensorType type,
                Value like) {
  Value zero = arith::ConstantOp::create(
      builder, loc, builder.getFloatAttr(type.getElementType(), 0.0));
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(tensor::DimOp::create(builder, loc, like, d));
  return tensor::SplatOp::create(builder, loc, type, zero, sizes);
}

/// `values`' type with the head dim `dim` (the transition's run reads K
/// columns of zero values).
RankedTensorType withHeadDim(Value values, int64_t dim) {
  auto type = tensorType(values);
  SmallVector<int64_t> shape(type.getShape());
  shape[2] = dim;
  return RankedTensorType::get(shape, type.getElementType(),
                               type.getEncoding());
}

/// Entry 1 of per-sequence states [2, ...] as [...].
Value secondEntry(OpBuilder &builder, Location loc, Value states) {
  auto type = tensorType(states);
  SmallVector<int64_t> offsets(type.getRank(), 0), sizes(type.getShape()),
      strides(type.getRank(), 1);
  offsets[0] = 1;
  sizes[0] = 1;
  auto result = RankedTensorType::get(type.getShape().drop_front(),
                                      type.getElementType());
  return tensor::ExtractSliceOp::create(builder, loc, result, states,
                                        ValueRange{}, ValueRange{},
                                        ValueRange{}, offsets, sizes, strides);
}

/// [0, value] as per-sequence states [2, ...].
Value asSecondEntry(OpBuilder &builder, Location loc, Value value) {
  auto type = tensorType(value);
  SmallVector<int64_t> shape = {2};
  llvm::append_range(shape, type.getShape());
  auto pair = RankedTensorType::get(shape, type.getElementType());
  Value zeros = zerosLike(builder, loc, pair, value);
  SmallVector<int64_t> offsets(shape.size(), 0), sizes(shape),
      strides(shape.size(), 1);
  offsets[0] = 1;
  sizes[0] = 1;
  return tensor::InsertSliceOp::create(builder, loc, value, zeros, ValueRange{},
                                       ValueRange{}, ValueRange{}, offsets,
                                       sizes, strides);
}

void lowerSummary(comm::StateSummaryOp op) {
  OpBuilder builder(op);
  Location loc = op.getLoc();
  auto v = tensorType(op.getV());
  const int64_t valueHeads = v.getDimSize(1), headDimV = v.getDimSize(2);
  const int64_t headDimK = tensorType(op.getK()).getDimSize(2);
  SummaryRuns runs =
      buildRuns(builder, loc, op.getPacking(), op.getInitialState(), op.getK(),
                valueHeads, headDimV, op.getGroup());
  // No output is read: q is k, and o is left to the canonicalizer.
  auto partialState = RankedTensorType::get({2, valueHeads, headDimK, headDimV},
                                            builder.getF32Type());
  auto partialRun = DeltaRuleOp::create(
      builder, loc, v, partialState, op.getK(), op.getK(), op.getV(), op.getG(),
      op.getBeta(), runs.packing, runs.partialInitial,
      /*scale=*/FloatAttr(), /*chunk_size=*/64);
  RankedTensorType zeroValuesType = withHeadDim(op.getV(), headDimK);
  Value zeroValues = zerosLike(builder, loc, zeroValuesType, op.getV());
  auto transitionState = RankedTensorType::get(
      {2, valueHeads, headDimK, headDimK}, builder.getF32Type());
  auto transitionRun = DeltaRuleOp::create(
      builder, loc, zeroValuesType, transitionState, op.getK(), op.getK(),
      zeroValues, op.getG(), op.getBeta(), runs.packing, runs.transitionInitial,
      FloatAttr(), 64);
  op.getTransition().replaceAllUsesWith(
      secondEntry(builder, loc, transitionRun.getFinalState()));
  op.getPartialState().replaceAllUsesWith(
      secondEntry(builder, loc, partialRun.getFinalState()));
  op.erase();
}

/// Replaces the summary gradient's results: k, g and beta gradients
/// (summed over the runs that read them), v's, and the initial states'.
void replaceSummaryGrad(OpBuilder &builder, comm::StateSummaryGradOp op,
                        ArrayRef<DeltaRuleGradOp> runs) {
  Location loc = op.getLoc();
  DeltaRuleGradOp first = runs.front();
  auto sum = [&](auto get) {
    Value total = get(first);
    for (DeltaRuleGradOp run : runs.drop_front())
      total = arith::AddFOp::create(builder, loc, total, get(run));
    return total;
  };
  op.getKGrad().replaceAllUsesWith(
      sum([](DeltaRuleGradOp run) { return run.getKGrad(); }));
  op.getVGrad().replaceAllUsesWith(first.getVGrad());
  op.getGGrad().replaceAllUsesWith(
      sum([](DeltaRuleGradOp run) { return run.getGGrad(); }));
  op.getBetaGrad().replaceAllUsesWith(
      sum([](DeltaRuleGradOp run) { return run.getBetaGrad(); }));
  if (Value initialGrad = op.getInitialStateGrad())
    initialGrad.replaceAllUsesWith(comm::SummaryInitialStatesGradOp::create(
        builder, loc, initialGrad.getType(), first.getInitialStateGrad(),
        op.getPacking(), op.getGroup()));
  op.erase();
}

/// The gradient run over the leaving sequence's rows from `initial` with
/// `finalGrad` as its final state's cotangent (zero output cotangents, q
/// read as k: only the final state is read).
DeltaRuleGradOp buildGradRun(OpBuilder &builder, comm::StateSummaryGradOp op,
                             Value packing, Value initial, Value values,
                             Value finalGrad) {
  Location loc = op.getLoc();
  Value zeroOutputs = zerosLike(builder, loc, tensorType(values), op.getV());
  auto kType = tensorType(op.getK());
  return DeltaRuleGradOp::create(
      builder, loc, kType, kType, tensorType(values), op.getG().getType(),
      op.getBeta().getType(), initial.getType(), zeroOutputs, op.getK(),
      op.getK(), values, op.getG(), op.getBeta(), packing, initial,
      asSecondEntry(builder, loc, finalGrad), /*scale=*/FloatAttr(),
      /*chunk_size=*/64);
}

void lowerSummaryGrad(comm::StateSummaryGradOp op) {
  OpBuilder builder(op);
  Location loc = op.getLoc();
  auto v = tensorType(op.getV());
  const int64_t valueHeads = v.getDimSize(1), headDimV = v.getDimSize(2);
  const int64_t headDimK = tensorType(op.getK()).getDimSize(2);
  // Cotangents from the reverse state chain are G and G S_in^T, with G the
  // cotangent of the state handed on and S_in the state received:
  // <G S_in^T, M> + <G, S> = <G, M S_in + S>, so one gradient run from the
  // state the leaving sequence really has at the shard's start gives the
  // summary's gradient. S_in is the forward chain's value again.
  auto chain =
      op.getTransitionGrad().getDefiningOp<comm::ReverseStateExchangeOp>();
  if (chain && chain.getPartialStateGrad() == op.getPartialStateGrad() &&
      chain.getTransitionGrad() == op.getTransitionGrad()) {
    Value incoming = comm::StateExchangeOp::create(
        builder, loc, chain.getPartialState().getType(), chain.getTransition(),
        chain.getPartialState(), chain.getGroup(), chain.getChainAttr());
    SummaryRuns runs =
        buildRuns(builder, loc, op.getPacking(), op.getInitialState(),
                  op.getK(), valueHeads, headDimV, op.getGroup(), incoming);
    DeltaRuleGradOp run =
        buildGradRun(builder, op, runs.packing, runs.partialInitial, op.getV(),
                     op.getPartialStateGrad());
    replaceSummaryGrad(builder, op, {run});
    return;
  }
  // Any other cotangents: the partial state's run and the transition's.
  SummaryRuns runs =
      buildRuns(builder, loc, op.getPacking(), op.getInitialState(), op.getK(),
                valueHeads, headDimV, op.getGroup());
  DeltaRuleGradOp partialRun =
      buildGradRun(builder, op, runs.packing, runs.partialInitial, op.getV(),
                   op.getPartialStateGrad());
  Value zeroValues =
      zerosLike(builder, loc, withHeadDim(op.getV(), headDimK), op.getV());
  DeltaRuleGradOp transitionRun =
      buildGradRun(builder, op, runs.packing, runs.transitionInitial,
                   zeroValues, op.getTransitionGrad());
  replaceSummaryGrad(builder, op, {partialRun, transitionRun});
}

/// The runs are delta rules on the kernels' types: bf16 activations and
/// fp32 summaries (a reference program's f64 summaries stay as they are,
/// for the interpreter).
bool hasKernelTypes(Value k, Value v, Value summary) {
  return tensorType(k).getElementType().isBF16() &&
         tensorType(v).getElementType().isBF16() &&
         tensorType(summary).getElementType().isF32();
}

struct GdnLowerStateSummariesPass
    : public mlir::gdn::impl::GdnLowerStateSummariesBase<
          GdnLowerStateSummariesPass> {
  void runOnOperation() override {
    SmallVector<comm::StateSummaryOp> summaries;
    SmallVector<comm::StateSummaryGradOp> grads;
    getOperation()->walk([&](Operation *op) {
      if (auto summary = dyn_cast<comm::StateSummaryOp>(op)) {
        if (hasKernelTypes(summary.getK(), summary.getV(),
                           summary.getPartialState()))
          summaries.push_back(summary);
      } else if (auto grad = dyn_cast<comm::StateSummaryGradOp>(op)) {
        if (hasKernelTypes(grad.getK(), grad.getV(),
                           grad.getPartialStateGrad()))
          grads.push_back(grad);
      }
    });
    for (comm::StateSummaryOp summary : summaries)
      lowerSummary(summary);
    for (comm::StateSummaryGradOp grad : grads)
      lowerSummaryGrad(grad);
    numSummaries += summaries.size() + grads.size();
  }
};

} // namespace
