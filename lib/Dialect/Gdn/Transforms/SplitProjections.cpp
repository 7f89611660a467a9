//===- SplitProjections.cpp - project straight into split_qkvz's layout ---===//
//
// Implements gdn-split-projections (Passes.td): a gdn.split_qkvz of two
// gdn.linear results becomes one projection per part with the weights' rows
// permuted, and a gdn.merge_qkvz feeding two gdn.linear_grad becomes one
// linear_grad per part. The permutation is gdn.regroup_sections with the
// key heads as groups: W_qkvz's rows [q_h | k_h | v_h | z_h] per key head h
// regroup (inverse) into [q | k | v | z], W_ba's [b_h | a_h] into [b | a].
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/Gdn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNSPLITPROJECTIONS
#include "gdn/Dialect/Gdn/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {

/// The rows of the two fused weights: W_qkvz's sections [q, k, v, z] (its
/// first part, mixed, is q, k, v; the second z) and W_ba's [b, a].
struct Sections {
  SmallVector<int64_t> qkvz, ba;
  int64_t mixedRows, zRows, bRows;
  int64_t keyHeads;
};

/// Elements of every dimension after the first (the features of a token).
int64_t featuresOf(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t features = 1;
  for (int64_t d = 1; d < type.getRank(); ++d)
    features *= type.getDimSize(d);
  return features;
}

/// A weight `[Out, In]` (static) whose rows are `sections`, regrouped per
/// key head (`inverse`: interleaved -> by section, else back).
Value regroupRows(OpBuilder &builder, Location loc, Value weight,
                  ArrayRef<int64_t> sections, int64_t keyHeads, bool inverse) {
  return RegroupSectionsOp::create(builder, loc, weight.getType(), weight,
                                   /*dim=*/0, sections, keyHeads, inverse);
}

/// Rows [first, first + count) of a static `[Out, In]` weight.
Value rowsOf(OpBuilder &builder, Location loc, Value weight, int64_t first,
             int64_t count) {
  auto type = cast<RankedTensorType>(weight.getType());
  auto result = RankedTensorType::get({count, type.getDimSize(1)},
                                      type.getElementType());
  SmallVector<int64_t> offsets = {first, 0}, sizes = {count, type.getDimSize(1)},
                       strides = {1, 1};
  return tensor::ExtractSliceOp::create(builder, loc, result, weight,
                                        ValueRange{}, ValueRange{},
                                        ValueRange{}, offsets, sizes, strides);
}

/// `[first; second]` stacked by rows into a static `[Out, In]` tensor (the
/// zeros are all overwritten: insert_slice needs a destination).
Value stackRows(OpBuilder &builder, Location loc, RankedTensorType type,
                Value first, Value second) {
  Value zero = arith::ConstantOp::create(
      builder, loc, builder.getFloatAttr(type.getElementType(), 0.0));
  Value stacked = tensor::SplatOp::create(builder, loc, zero, type, ValueRange{});
  const int64_t split = cast<RankedTensorType>(first.getType()).getDimSize(0);
  for (auto [part, row] : {std::pair{first, int64_t{0}}, std::pair{second, split}}) {
    auto partType = cast<RankedTensorType>(part.getType());
    SmallVector<int64_t> offsets = {row, 0}, sizes(partType.getShape()),
                         strides = {1, 1};
    stacked = tensor::InsertSliceOp::create(builder, loc, part, stacked,
                                            ValueRange{}, ValueRange{},
                                            ValueRange{}, offsets, sizes,
                                            strides);
  }
  return stacked;
}

/// True for a static 2-D weight `[rows, In]`.
bool isStaticWeight(Value weight, int64_t rows) {
  auto type = dyn_cast<RankedTensorType>(weight.getType());
  return type && type.getRank() == 2 && type.hasStaticShape() &&
         type.getDimSize(0) == rows;
}

/// The sections of a split_qkvz or merge_qkvz (mixed, z and b have the same
/// shapes on both) between projections by `qkvzWeight` and `baWeight`, or
/// nothing when a weight is not the static `[Out, In]` those parts make.
template <class SplitOrMerge>
std::optional<Sections> getSections(SplitOrMerge op, Value qkvzWeight,
                                    Value baWeight) {
  Sections s;
  s.keyHeads = op.getKeyHeads();
  s.mixedRows = featuresOf(op.getMixedQkv());
  s.zRows = featuresOf(op.getZ());
  s.bRows = featuresOf(op.getB());
  const int64_t qk = s.keyHeads * static_cast<int64_t>(op.getHeadDimK());
  s.qkvz = {qk, qk, s.zRows, s.zRows};
  s.ba = {s.bRows, s.bRows};
  if (!isStaticWeight(qkvzWeight, s.mixedRows + s.zRows) ||
      !isStaticWeight(baWeight, 2 * s.bRows))
    return std::nullopt;
  return s;
}

/// split_qkvz(linear(x1, W_qkvz), linear(x2, W_ba)), each projection used
/// by the split only, as four projections.
bool foldSplit(SplitQkvzOp split) {
  auto qkvz = split.getQkvz().getDefiningOp<LinearOp>();
  auto ba = split.getBa().getDefiningOp<LinearOp>();
  if (!qkvz || !ba || !split.getQkvz().hasOneUse() || !split.getBa().hasOneUse())
    return false;
  std::optional<Sections> sections =
      getSections(split, qkvz.getWeight(), ba.getWeight());
  if (!sections)
    return false;
  const Sections &s = *sections;
  OpBuilder builder(split);
  Location loc = split.getLoc();
  Value wQkvz = regroupRows(builder, loc, qkvz.getWeight(), s.qkvz, s.keyHeads,
                            /*inverse=*/true);
  Value wBa = regroupRows(builder, loc, ba.getWeight(), s.ba, s.keyHeads,
                          /*inverse=*/true);
  auto project = [&](Value result, Value x, Value weight, int64_t first,
                     int64_t rows) {
    Value part = LinearOp::create(builder, loc, result.getType(), x,
                                  rowsOf(builder, loc, weight, first, rows));
    result.replaceAllUsesWith(part);
  };
  project(split.getMixedQkv(), qkvz.getX(), wQkvz, 0, s.mixedRows);
  project(split.getZ(), qkvz.getX(), wQkvz, s.mixedRows, s.zRows);
  project(split.getB(), ba.getX(), wBa, 0, s.bRows);
  project(split.getA(), ba.getX(), wBa, s.bRows, s.bRows);
  split.erase();
  qkvz.erase();
  ba.erase();
  return true;
}

/// linear_grad(merge_qkvz(...).qkvz, x1, W_qkvz) and the same for ba, each
/// merge result used by its linear_grad only, as four linear_grads.
bool foldMerge(MergeQkvzOp merge) {
  if (!merge.getQkvz().hasOneUse() || !merge.getBa().hasOneUse())
    return false;
  auto qkvz = dyn_cast<LinearGradOp>(*merge.getQkvz().getUsers().begin());
  auto ba = dyn_cast<LinearGradOp>(*merge.getBa().getUsers().begin());
  if (!qkvz || !ba || qkvz.getYGrad() != merge.getQkvz() ||
      ba.getYGrad() != merge.getBa())
    return false;
  std::optional<Sections> sections =
      getSections(merge, qkvz.getWeight(), ba.getWeight());
  if (!sections)
    return false;
  const Sections &s = *sections;
  OpBuilder builder(merge);
  Location loc = merge.getLoc();
  // Each part's ops go where its linear_grad was: the merge's operands and
  // the projection's are defined there, and its results' users follow.
  auto foldOne = [&](LinearGradOp grad, ArrayRef<int64_t> weightSections,
                     Value firstGrad, Value secondGrad, int64_t firstRows,
                     int64_t secondRows) {
    builder.setInsertionPoint(grad);
    Value weight = regroupRows(builder, loc, grad.getWeight(), weightSections,
                               s.keyHeads, /*inverse=*/true);
    auto first = LinearGradOp::create(
        builder, loc, grad.getXGrad().getType(),
        RankedTensorType::get({firstRows, featuresOf(grad.getX())},
                              grad.getWeightGrad().getType().getElementType()),
        firstGrad, grad.getX(), rowsOf(builder, loc, weight, 0, firstRows));
    auto second = LinearGradOp::create(
        builder, loc, grad.getXGrad().getType(),
        RankedTensorType::get({secondRows, featuresOf(grad.getX())},
                              grad.getWeightGrad().getType().getElementType()),
        secondGrad, grad.getX(),
        rowsOf(builder, loc, weight, firstRows, secondRows));
    Value xGrad = arith::AddFOp::create(builder, loc, first.getXGrad(),
                                        second.getXGrad());
    Value weightGrad = regroupRows(
        builder, loc,
        stackRows(builder, loc, grad.getWeightGrad().getType(),
                  first.getWeightGrad(), second.getWeightGrad()),
        weightSections, s.keyHeads, /*inverse=*/false);
    grad.getXGrad().replaceAllUsesWith(xGrad);
    grad.getWeightGrad().replaceAllUsesWith(weightGrad);
    grad.erase();
  };
  foldOne(qkvz, s.qkvz, merge.getMixedQkv(), merge.getZ(), s.mixedRows, s.zRows);
  foldOne(ba, s.ba, merge.getB(), merge.getA(), s.bRows, s.bRows);
  merge.erase();
  return true;
}

struct SplitProjectionsPass
    : public mlir::gdn::impl::GdnSplitProjectionsBase<SplitProjectionsPass> {
  void runOnOperation() override {
    SmallVector<SplitQkvzOp> splits;
    SmallVector<MergeQkvzOp> merges;
    getOperation()->walk([&](Operation *op) {
      if (auto split = dyn_cast<SplitQkvzOp>(op))
        splits.push_back(split);
      else if (auto merge = dyn_cast<MergeQkvzOp>(op))
        merges.push_back(merge);
    });
    for (SplitQkvzOp split : splits)
      numSplits += foldSplit(split);
    for (MergeQkvzOp merge : merges)
      numMerges += foldMerge(merge);
  }
};

} // namespace
