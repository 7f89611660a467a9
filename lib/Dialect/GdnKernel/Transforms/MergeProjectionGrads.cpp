//===- MergeProjectionGrads.cpp - one gradient GEMM per projected input ---===//
//
// Implements gdn-merge-projection-grads (Passes.td): the gdn.linear_grad ops
// of one input x whose x gradients are only added together, and whose
// cotangents their kernel can write as columns of a wider tensor, become one
// linear_grad of the cotangents stacked as columns and the weights stacked
// as rows; each weight gradient is a row slice of the merged one.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/GdnKernel/IR/GdnKernelDialect.h"
#include "gdn/Dialect/GdnKernel/Transforms/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/MapVector.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNMERGEPROJECTIONGRADS
#include "gdn/Dialect/GdnKernel/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {

/// The sum that `value` is a term of: the last of a chain of single-use
/// arith.addf ops, or `value` itself when nothing adds it.
Value getSumRoot(Value value) {
  while (value.hasOneUse()) {
    auto add = dyn_cast<arith::AddFOp>(*value.getUsers().begin());
    if (!add)
      break;
    value = add.getResult();
  }
  return value;
}

/// The terms of the sum rooted at `root`, in operand order (every value
/// that is not a single-use add within it), and the adds themselves.
void collectTerms(Value root, bool isRoot, SmallVectorImpl<Value> &terms,
                  SmallVectorImpl<arith::AddFOp> &adds) {
  auto add = root.getDefiningOp<arith::AddFOp>();
  if (!add || (!isRoot && !root.hasOneUse())) {
    terms.push_back(root);
    return;
  }
  adds.push_back(add);
  collectTerms(add.getLhs(), false, terms, adds);
  collectTerms(add.getRhs(), false, terms, adds);
}

/// Rows [offset, offset + count) of `source`: a weight's place in the tensor
/// it is a leading-row slice of (itself at 0 otherwise).
struct RowRange {
  Value source;
  int64_t offset = 0, count = 0;
};

RowRange getRowRange(Value weight) {
  const int64_t rows = cast<RankedTensorType>(weight.getType()).getDimSize(0);
  auto slice = weight.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || !slice.getSourceType().hasStaticShape() ||
      slice.getSourceType().getRank() != 2 || !slice.hasUnitStride() ||
      !slice.getOffsets().empty() || slice.getStaticOffsets()[1] != 0 ||
      slice.getStaticSizes()[1] != slice.getSourceType().getDimSize(1))
    return {weight, 0, rows};
  return {slice.getSource(), slice.getStaticOffsets()[0], rows};
}

/// Rows [offset, offset + count) of a static 2-D `source` (itself when
/// that is all of it).
Value sliceRows(OpBuilder &builder, Location loc, Value source, int64_t offset,
                int64_t count) {
  auto type = cast<RankedTensorType>(source.getType());
  if (offset == 0 && count == type.getDimSize(0))
    return source;
  auto result =
      RankedTensorType::get({count, type.getDimSize(1)}, type.getElementType());
  SmallVector<int64_t> offsets = {offset, 0},
                       sizes = {count, type.getDimSize(1)}, strides = {1, 1};
  return tensor::ExtractSliceOp::create(builder, loc, result, source,
                                        ValueRange{}, ValueRange{},
                                        ValueRange{}, offsets, sizes, strides);
}

/// A zero tensor of `type`, its dynamic sizes given.
Value zeros(OpBuilder &builder, Location loc, RankedTensorType type,
            ValueRange dynamicSizes) {
  Value zero = arith::ConstantOp::create(
      builder, loc, builder.getFloatAttr(type.getElementType(), 0.0));
  return tensor::SplatOp::create(builder, loc, zero, type, dynamicSizes);
}

/// The features of a token of `cotangent`: every dimension after the
/// first, static (0 when one is dynamic).
int64_t getTokenFeatures(Value cotangent) {
  auto type = cast<RankedTensorType>(cotangent.getType());
  int64_t features = 1;
  for (int64_t d = 1; d < type.getRank(); ++d)
    features *= type.isDynamicDim(d) ? 0 : type.getDimSize(d);
  return type.getRank() < 2 ? 0 : features;
}

/// True when `grad` may join a stacked linear_grad: its cotangent is a
/// value that its kernel writes with a row stride and that nothing else
/// reads, with static features per token, and its weight is static 2-D.
bool isStackable(LinearGradOp grad) {
  Value cotangent = grad.getYGrad();
  auto weight = dyn_cast<RankedTensorType>(grad.getWeight().getType());
  return kernel::writesStridedRows(cotangent) && cotangent.hasOneUse() &&
         getTokenFeatures(cotangent) > 0 && weight && weight.getRank() == 2 &&
         weight.hasStaticShape();
}

/// True when `a` and `b` can share one stacked linear_grad.
bool areCompatible(LinearGradOp a, LinearGradOp b) {
  auto dyA = cast<RankedTensorType>(a.getYGrad().getType());
  auto dyB = cast<RankedTensorType>(b.getYGrad().getType());
  auto wA = cast<RankedTensorType>(a.getWeight().getType());
  auto wB = cast<RankedTensorType>(b.getWeight().getType());
  return a->getBlock() == b->getBlock() &&
         a.getXGrad().getType() == b.getXGrad().getType() &&
         dyA.getElementType() == dyB.getElementType() &&
         dyA.getEncoding() == dyB.getEncoding() &&
         dyA.getDimSize(0) == dyB.getDimSize(0) &&
         wA.getElementType() == wB.getElementType() &&
         wA.getDimSize(1) == wB.getDimSize(1) &&
         a.getWeightGrad().getType().getElementType() ==
             b.getWeightGrad().getType().getElementType();
}

class Merger {
public:
  explicit Merger(ArrayRef<LinearGradOp> group) : group(group) {}

  /// True when every cotangent's columns in the stack, and the stack's
  /// rows, start where its kernel can write them
  /// (kernel::getStridedRowsAlignment): else the target would copy them.
  bool isAligned() const;

  /// True when no member reads what another member computes (through any
  /// chain of ops): the merged op needs every member's operands at once.
  bool isIndependent() const;

  /// Replaces the group with one stacked linear_grad; returns its weight
  /// gradient.
  Value run();

private:
  /// The group ordered so that weights slicing one tensor come together,
  /// by first appearance of that tensor, then row.
  SmallVector<std::pair<LinearGradOp, RowRange>> ordered() const;
  Value stackWeights(OpBuilder &builder, Location loc,
                     ArrayRef<std::pair<LinearGradOp, RowRange>> members);
  Value stackCotangents(OpBuilder &builder, Location loc,
                        ArrayRef<std::pair<LinearGradOp, RowRange>> members);

  ArrayRef<LinearGradOp> group;
};

bool Merger::isAligned() const {
  const int64_t elementBytes =
      kernel::getElementBytes(LinearGradOp(group.front()).getYGrad().getType());
  int64_t column = 0, rowAlignment = 1;
  for (const auto &member : ordered()) {
    Value cotangent = LinearGradOp(member.first).getYGrad();
    const int64_t alignment = kernel::getStridedRowsAlignment(cotangent);
    if (column * elementBytes % alignment != 0)
      return false;
    rowAlignment = std::max(rowAlignment, alignment);
    column += getTokenFeatures(cotangent);
  }
  return column * elementBytes % rowAlignment == 0;
}

bool Merger::isIndependent() const {
  for (LinearGradOp grad : group) {
    SetVector<Operation *> reads;
    BackwardSliceOptions options;
    options.omitBlockArguments = true;
    if (failed(getBackwardSlice(grad.getOperation(), &reads, options)))
      return false;
    if (llvm::any_of(group, [&](LinearGradOp other) {
          return reads.contains(other.getOperation());
        }))
      return false;
  }
  return true;
}

SmallVector<std::pair<LinearGradOp, RowRange>> Merger::ordered() const {
  llvm::MapVector<Value, SmallVector<std::pair<LinearGradOp, RowRange>>>
      bySource;
  for (LinearGradOp grad : group) {
    RowRange rows = getRowRange(grad.getWeight());
    bySource[rows.source].push_back({grad, rows});
  }
  SmallVector<std::pair<LinearGradOp, RowRange>> members;
  for (auto &entry : bySource) {
    llvm::stable_sort(entry.second, [](const auto &a, const auto &b) {
      return a.second.offset < b.second.offset;
    });
    llvm::append_range(members, entry.second);
  }
  return members;
}

Value Merger::stackWeights(
    OpBuilder &builder, Location loc,
    ArrayRef<std::pair<LinearGradOp, RowRange>> members) {
  // Runs of consecutive rows of one tensor are one slice of it.
  SmallVector<RowRange> runs;
  for (const auto &[grad, rows] : members) {
    if (!runs.empty() && runs.back().source == rows.source &&
        runs.back().offset + runs.back().count == rows.offset) {
      runs.back().count += rows.count;
      continue;
    }
    runs.push_back(rows);
  }
  auto weightType = cast<RankedTensorType>(
      LinearGradOp(members.front().first).getWeight().getType());
  if (runs.size() == 1)
    return sliceRows(builder, loc, runs.front().source, runs.front().offset,
                     runs.front().count);
  int64_t total = 0;
  for (const RowRange &run : runs)
    total += run.count;
  Value stacked = zeros(builder, loc,
                        RankedTensorType::get({total, weightType.getDimSize(1)},
                                              weightType.getElementType()),
                        ValueRange{});
  int64_t row = 0;
  for (const RowRange &run : runs) {
    Value part = sliceRows(builder, loc, run.source, run.offset, run.count);
    SmallVector<int64_t> offsets = {row, 0},
                         sizes = {run.count, weightType.getDimSize(1)},
                         strides = {1, 1};
    stacked = tensor::InsertSliceOp::create(
        builder, loc, part, stacked, ValueRange{}, ValueRange{}, ValueRange{},
        offsets, sizes, strides);
    row += run.count;
  }
  return stacked;
}

Value Merger::stackCotangents(
    OpBuilder &builder, Location loc,
    ArrayRef<std::pair<LinearGradOp, RowRange>> members) {
  Value first = LinearGradOp(members.front().first).getYGrad();
  auto firstType = cast<RankedTensorType>(first.getType());
  int64_t columns = 0;
  for (const auto &member : members)
    columns += getTokenFeatures(LinearGradOp(member.first).getYGrad());
  SmallVector<Value> dynamicSizes;
  OpFoldResult tokens = builder.getIndexAttr(firstType.getDimSize(0));
  if (firstType.isDynamicDim(0)) {
    // x's tokens (linear_grad's dy and x share them): a use of a cotangent
    // would keep its kernel from writing it into the stack.
    Value dim = tensor::DimOp::create(
        builder, loc, LinearGradOp(members.front().first).getX(), 0);
    dynamicSizes.push_back(dim);
    tokens = dim;
  }
  // The stack keeps the cotangents' sequence layout (their encoding).
  Value stacked =
      zeros(builder, loc,
            RankedTensorType::get({firstType.getDimSize(0), columns},
                                  firstType.getElementType(),
                                  firstType.getEncoding()),
            dynamicSizes);
  int64_t column = 0;
  for (const auto &member : members) {
    Value cotangent = LinearGradOp(member.first).getYGrad();
    const int64_t width = getTokenFeatures(cotangent);
    // A token's features as one row: [T, d1, d2, ...] -> [T, d1 d2 ...].
    auto type = cast<RankedTensorType>(cotangent.getType());
    if (type.getRank() > 2) {
      ReassociationIndices features;
      for (int64_t d = 1; d < type.getRank(); ++d)
        features.push_back(d);
      cotangent = tensor::CollapseShapeOp::create(
          builder, loc,
          RankedTensorType::get({type.getDimSize(0), width},
                                type.getElementType(), type.getEncoding()),
          cotangent, ArrayRef<ReassociationIndices>{{0}, features});
    }
    SmallVector<OpFoldResult> offsets = {builder.getIndexAttr(0),
                                         builder.getIndexAttr(column)},
                              sizes = {tokens, builder.getIndexAttr(width)},
                              strides = {builder.getIndexAttr(1),
                                         builder.getIndexAttr(1)};
    stacked = tensor::InsertSliceOp::create(builder, loc, cotangent, stacked,
                                            offsets, sizes, strides);
    column += width;
  }
  return stacked;
}

Value Merger::run() {
  SmallVector<std::pair<LinearGradOp, RowRange>> members = ordered();
  // Every operand of every member is defined before the last member.
  LinearGradOp last = group.front();
  for (LinearGradOp grad : group)
    if (last->isBeforeInBlock(grad))
      last = grad;
  OpBuilder builder(last);
  Location loc = last.getLoc();
  Value weight = stackWeights(builder, loc, members);
  Value cotangent = stackCotangents(builder, loc, members);
  auto weightType = cast<RankedTensorType>(weight.getType());
  auto merged = LinearGradOp::create(
      builder, loc, last.getXGrad().getType(),
      RankedTensorType::get(weightType.getShape(),
                            last.getWeightGrad().getType().getElementType()),
      cotangent, last.getX(), weight);

  // Each weight gradient is its rows of the merged one.
  int64_t row = 0;
  for (auto [grad, rows] : members) {
    grad.getWeightGrad().replaceAllUsesWith(
        sliceRows(builder, loc, merged.getWeightGrad(), row, rows.count));
    row += rows.count;
  }

  // The sum of the x gradients: the merged one, then the other terms in
  // their order.
  Value root = getSumRoot(LinearGradOp(group.front()).getXGrad());
  SmallVector<Value> terms;
  SmallVector<arith::AddFOp> adds;
  collectTerms(root, true, terms, adds);
  builder.setInsertionPoint(root.getDefiningOp());
  Value sum = merged.getXGrad();
  for (Value term : terms)
    if (!llvm::any_of(group,
                      [&](LinearGradOp g) { return g.getXGrad() == term; }))
      sum = arith::AddFOp::create(builder, root.getLoc(), sum, term);
  root.replaceAllUsesWith(sum);
  for (arith::AddFOp add : adds) // root first: users before their operands
    add.erase();
  for (LinearGradOp grad : group)
    grad.erase();
  return merged.getWeightGrad();
}

/// A chain of leading-row insertions into a zero tensor that puts back
/// consecutive rows of one tensor S, rows [delta + r, ...) at row r, and
/// covers every row, is rows [delta, delta + rows) of S. Folded where S is
/// a merged weight gradient (`merged`).
bool foldRestackedRows(tensor::InsertSliceOp last,
                       const llvm::SmallPtrSetImpl<Value> &merged) {
  auto destType = last.getDestType();
  if (!destType.hasStaticShape() || destType.getRank() != 2)
    return false;
  SmallVector<tensor::InsertSliceOp> chain;
  Value link = last.getResult();
  for (auto insert = last; insert;
       insert = insert.getDest().getDefiningOp<tensor::InsertSliceOp>()) {
    if (insert != last && !insert.getResult().hasOneUse())
      return false;
    chain.push_back(insert);
    link = insert.getDest();
  }
  Operation *fill = link.getDefiningOp();
  if (!fill || !isa<tensor::SplatOp, arith::ConstantOp>(fill))
    return false;
  Value source;
  std::optional<int64_t> delta;
  int64_t covered = 0;
  for (tensor::InsertSliceOp insert : llvm::reverse(chain)) {
    auto part = insert.getSource().getDefiningOp<tensor::ExtractSliceOp>();
    if (!part || !insert.hasUnitStride() || !insert.getOffsets().empty() ||
        insert.getStaticOffsets()[1] != 0 ||
        insert.getStaticOffsets()[0] != covered)
      return false;
    RowRange rows = getRowRange(part.getResult());
    if (rows.source == part.getResult() ||
        cast<RankedTensorType>(rows.source.getType()).getDimSize(1) !=
            destType.getDimSize(1) ||
        !merged.contains(rows.source) || (source && rows.source != source) ||
        (delta && rows.offset - covered != *delta))
      return false;
    source = rows.source;
    delta = rows.offset - covered;
    covered += rows.count;
  }
  if (covered != destType.getDimSize(0) ||
      cast<RankedTensorType>(source.getType()).getElementType() !=
          destType.getElementType())
    return false;
  OpBuilder builder(last);
  last.getResult().replaceAllUsesWith(
      sliceRows(builder, last.getLoc(), source, *delta, covered));
  for (tensor::InsertSliceOp insert : chain)
    insert.erase();
  if (fill->use_empty())
    fill->erase();
  return true;
}

struct MergeProjectionGradsPass
    : public mlir::gdn::impl::GdnMergeProjectionGradsBase<
          MergeProjectionGradsPass> {
  void runOnOperation() override {
    // Groups: the stackable linear_grads of one x whose x gradients are
    // terms of one sum.
    llvm::MapVector<std::pair<Value, Value>, SmallVector<LinearGradOp>> groups;
    getOperation()->walk([&](LinearGradOp grad) {
      Value root = getSumRoot(grad.getXGrad());
      if (root != grad.getXGrad() && isStackable(grad))
        groups[{grad.getX(), root}].push_back(grad);
    });
    SetVector<Block *> changed;
    llvm::SmallPtrSet<Value, 4> mergedWeightGrads;
    for (auto &entry : groups) {
      SmallVector<LinearGradOp> &group = entry.second;
      const LinearGradOp first = group.front();
      llvm::erase_if(group, [&](LinearGradOp grad) {
        return !areCompatible(grad, first);
      });
      Merger merger(group);
      if (group.size() < 2 || !merger.isAligned() || !merger.isIndependent())
        continue;
      changed.insert(group.front()->getBlock());
      numMerged += group.size();
      mergedWeightGrads.insert(merger.run());
    }
    for (Block *block : changed) {
      SmallVector<tensor::InsertSliceOp> lasts;
      for (auto insert : block->getOps<tensor::InsertSliceOp>())
        if (!(insert.getResult().hasOneUse() &&
              isa<tensor::InsertSliceOp>(
                  *insert.getResult().getUsers().begin())))
          lasts.push_back(insert);
      for (tensor::InsertSliceOp last : lasts)
        foldRestackedRows(last, mergedWeightGrads);
      // The merged op sits at the group's last member; users of the
      // other members' weight gradients may come before it. The members
      // are independent (isIndependent), so an order exists.
      [[maybe_unused]] const bool sorted = sortTopologically(block);
      assert(sorted && "independent members always have an order");
    }
  }
};

} // namespace
