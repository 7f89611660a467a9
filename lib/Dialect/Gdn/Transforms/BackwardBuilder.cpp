//===- BackwardBuilder.cpp - forward values and cotangents in a backward --===//
//
// The two services a gradient emitter uses: the backward's copy of a
// forward value, chosen by the save policy (a saved value becomes an
// argument of the backward and a result of the forward; anything else is
// recomputed by cloning its defining op, as late as it is first needed),
// and cotangents that add up over a value's uses.
//
//===----------------------------------------------------------------------===//

#include "BackwardBuilder.h"

#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::gdn;

//===----------------------------------------------------------------------===//
// What is recomputed
//===----------------------------------------------------------------------===//

RecomputeCost mlir::gdn::getRecomputeCost(Operation *op) {
  if (isa<PackingOp, comm::LocalPackingOp, comm::RankOp, arith::ConstantOp,
          comm::LocalShardOp, tensor::DimOp>(op))
    return RecomputeCost::Free;
  if (isa<CausalConv1dOp, L2NormOp, GatesOp, GatedRMSNormOp, SplitQkvzOp,
          SplitQkvOp, RegroupSectionsOp, tensor::CollapseShapeOp,
          tensor::ExpandShapeOp, comm::ContinueConvStateOp,
          comm::ContinueStateOp>(op))
    return RecomputeCost::Cheap;
  return RecomputeCost::Expensive;
}

/// The operand `result` is a copy of (in part), for the ops that only move
/// elements; null for any other op.
static Value movedFrom(Value result) {
  Operation *op = result.getDefiningOp();
  if (auto split = dyn_cast_or_null<SplitQkvzOp>(op))
    return result == split.getMixedQkv() || result == split.getZ()
               ? split.getQkvz()
               : split.getBa();
  if (auto split = dyn_cast_or_null<SplitQkvOp>(op))
    return split.getMixedQkv();
  if (auto regroup = dyn_cast_or_null<RegroupSectionsOp>(op))
    return regroup.getX();
  if (auto collapse = dyn_cast_or_null<tensor::CollapseShapeOp>(op))
    return collapse.getSrc();
  if (auto expand = dyn_cast_or_null<tensor::ExpandShapeOp>(op))
    return expand.getSrc();
  if (auto convert = dyn_cast_or_null<ConvertLayoutOp>(op))
    return convert.getX();
  if (isa_and_nonnull<comm::LocalShardOp, comm::AllGatherOp,
                      comm::ReduceScatterOp, comm::AllToAllOp,
                      comm::HaloExchangeOp>(op))
    return op->getOperand(0);
  return Value();
}

/// True when every use of `value` (through the ops that only move it) has
/// a gradient op that returns its cotangent in a narrower type: the conv's
/// input, the gated RMSNorm's operands, the conv state's halo.
static bool usesTakeNarrowCotangents(Value value) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (auto conv = dyn_cast<CausalConv1dOp>(user);
        conv && use.get() == conv.getX())
      continue;
    if (isa<GatedRMSNormOp>(user) && use.getOperandNumber() < 2)
      continue;
    if (auto state = dyn_cast<comm::ContinueConvStateOp>(user);
        state && use.get() == state.getHalo())
      continue;
    bool moved = false;
    for (Value result : user->getResults())
      if (movedFrom(result) == value) {
        moved = true;
        if (!usesTakeNarrowCotangents(result))
          return false;
      }
    if (!moved)
      return false;
  }
  return true;
}

RankedTensorType mlir::gdn::getCotangentType(Value primal) {
  auto type = cast<RankedTensorType>(primal.getType());
  if (auto linear = primal.getDefiningOp<LinearOp>()) {
    Type input = linear.getX().getType().getElementType();
    if (isNarrowerFloat(input, type.getElementType()) &&
        usesTakeNarrowCotangents(primal))
      return type.clone(input);
    return type;
  }
  Value source = movedFrom(primal);
  if (!source ||
      getElementTypeOrSelf(source.getType()) != type.getElementType())
    return type;
  return type.clone(getCotangentType(source).getElementType());
}

SmallVector<comm::GroupAttr>
mlir::gdn::findProcessGroups(func::FuncOp function) {
  comm::GroupAttr sp, cp;
  int64_t layoutRanks = 1;
  auto noteLayouts = [&](TypeRange types) {
    for (Type type : types)
      layoutRanks = std::max(layoutRanks, getLayoutRanks(type));
  };
  noteLayouts(function.getFunctionType().getInputs());
  noteLayouts(function.getFunctionType().getResults());
  function.walk([&](Operation *op) {
    noteLayouts(op->getResultTypes());
    if (auto group = op->getAttrOfType<comm::GroupAttr>("group"))
      (group.getKind() == comm::GroupKind::SP ? sp : cp) = group;
  });
  // gdn.convert_layout names no group: the layouts it converts between are
  // CP shards.
  if (!sp && !cp && layoutRanks > 1)
    cp = comm::GroupAttr::get(function.getContext(), comm::GroupKind::CP,
                              layoutRanks);
  SmallVector<comm::GroupAttr> groups;
  for (comm::GroupAttr group : {sp, cp})
    if (group)
      groups.push_back(group);
  return groups;
}

//===----------------------------------------------------------------------===//
// Activity
//===----------------------------------------------------------------------===//

bool mlir::gdn::isDifferentiableType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

Activity::Activity(func::FuncOp function) {
  Block &body = function.getBody().front();
  llvm::DenseSet<Value> varied, useful;
  for (BlockArgument argument : body.getArguments())
    if (isDifferentiableType(argument.getType()))
      varied.insert(argument);
  for (Operation &op : body.without_terminator())
    if (llvm::any_of(op.getOperands(),
                     [&](Value operand) { return varied.contains(operand); }))
      for (Value result : op.getResults())
        if (isDifferentiableType(result.getType()))
          varied.insert(result);
  for (Value result : body.getTerminator()->getOperands())
    if (isDifferentiableType(result.getType()))
      useful.insert(result);
  for (Operation &op : llvm::reverse(body.without_terminator()))
    if (llvm::any_of(op.getResults(),
                     [&](Value result) { return useful.contains(result); }))
      for (Value operand : op.getOperands())
        if (isDifferentiableType(operand.getType()))
          useful.insert(operand);
  for (Value value : varied)
    if (useful.contains(value))
      active.insert(value);
}

bool Activity::isActive(Operation *op) const {
  return llvm::any_of(op->getResults(),
                      [&](Value result) { return isActive(result); });
}

//===----------------------------------------------------------------------===//
// BackwardBuilder
//===----------------------------------------------------------------------===//

BackwardBuilder::BackwardBuilder(func::FuncOp forward, func::FuncOp backward,
                                 SavePolicy policy, const Activity &activity)
    : forward(forward), backward(backward), policy(policy), activity(activity),
      builder(backward.getContext()) {
  Block &entry = backward.getBody().front();
  builder.setInsertionPointToEnd(&entry);
  for (auto [index, argument] :
       llvm::enumerate(forward.getBody().front().getArguments()))
    forwardToBackward.map(argument, entry.getArgument(index));
}

bool BackwardBuilder::shouldSave(Value value) const {
  Operation *definingOp = value.getDefiningOp();
  // The split of saved projections is saved in their place: the same bytes
  // (a permutation of them), and the backward then reads its halves
  // without a copy (gdn-split-projections removes the forward's).
  if (auto split = dyn_cast<SplitQkvzOp>(definingOp)) {
    Value qkvz = split.getQkvz(), ba = split.getBa();
    if (policy != SavePolicy::Activations && qkvz.getDefiningOp() &&
        ba.getDefiningOp() && shouldSave(qkvz) && shouldSave(ba))
      return true;
  }
  switch (getRecomputeCost(definingOp)) {
  case RecomputeCost::Free:
    return false;
  case RecomputeCost::Cheap:
    // Operands: what an expensive op reads is kept with what it returns,
    // so the backward recomputes only what the cheap ops' own gradients
    // read (a fused prologue's backward recomputes that inside).
    if (policy == SavePolicy::Operands)
      return llvm::any_of(value.getUsers(), [](Operation *user) {
        return getRecomputeCost(user) == RecomputeCost::Expensive;
      });
    return policy == SavePolicy::Activations;
  case RecomputeCost::Expensive:
    return policy != SavePolicy::None;
  }
  llvm_unreachable("unknown recompute cost");
}

Value BackwardBuilder::materialize(Value value) {
  if (Value known = forwardToBackward.lookupOrNull(value))
    return known;
  Operation *op = value.getDefiningOp();
  assert(op && "the forward's arguments are mapped from the start");
  if (shouldSave(value) && isa<RankedTensorType>(value.getType())) {
    // Saved values come after the forward's arguments, in the order the
    // backward first reads them.
    Block &entry = backward.getBody().front();
    const unsigned position =
        forward.getNumArguments() + static_cast<unsigned>(saved.size());
    BlockArgument argument =
        entry.insertArgument(position, value.getType(), value.getLoc());
    saved.insert(value);
    forwardToBackward.map(value, argument);
    return argument;
  }
  // Recompute: the operands first, then a clone of the op, which maps all
  // of its results.
  for (Value operand : op->getOperands())
    materialize(operand);
  builder.clone(*op, forwardToBackward);
  return forwardToBackward.lookup(value);
}

SmallVector<Value> BackwardBuilder::materializeAll(ArrayRef<Value> values) {
  SmallVector<Value> result;
  for (Value value : values)
    result.push_back(value ? materialize(value) : Value());
  return result;
}

SmallVector<Value>
BackwardBuilder::getCotangentsOrZeros(ArrayRef<Value> values) {
  SmallVector<Value> result;
  for (Value value : values)
    result.push_back(getCotangentOrZeros(value));
  return result;
}

void BackwardBuilder::addCotangent(Value primal, Value cotangent) {
  if (!activity.isActive(primal))
    return;
  auto [it, inserted] = cotangents.try_emplace(primal, cotangent);
  if (inserted)
    return;
  it->second =
      arith::AddFOp::create(builder, cotangent.getLoc(), it->second, cotangent);
}

Value BackwardBuilder::zerosLike(Value like) {
  return zeros(cast<RankedTensorType>(like.getType()), like, like.getLoc());
}

Value BackwardBuilder::zeros(RankedTensorType type, Value sizesOf,
                             Location loc) {
  Value zero = arith::ConstantOp::create(
      builder, loc, builder.getFloatAttr(type.getElementType(), 0.0));
  SmallVector<Value> sizes;
  for (int64_t dim = 0; dim < type.getRank(); ++dim)
    if (type.isDynamicDim(dim))
      sizes.push_back(tensor::DimOp::create(builder, loc, sizesOf, dim));
  return tensor::SplatOp::create(builder, loc, zero, type, sizes);
}

Value BackwardBuilder::getCotangentOrZeros(Value primal) {
  if (Value cotangent = getCotangent(primal))
    return cotangent;
  // A static shape needs no forward value; a dynamic one reads the sizes
  // of the value itself.
  RankedTensorType type = getCotangentType(primal);
  return zeros(type, type.hasStaticShape() ? Value() : materialize(primal),
               primal.getLoc());
}

Value BackwardBuilder::takeCotangentOrZeros(Value primal) {
  Value cotangent = getCotangentOrZeros(primal);
  cotangents.erase(primal);
  return cotangent;
}
