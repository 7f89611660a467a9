//===- RuntimeCalls.cpp - ops a whole-function entry runs as calls --------===//
//
// gdn.linear, gdn.linear_grad and the gdn_comm collectives map one to one
// onto gdnrt calls with the IR's group role, ranks and dimensions; a sum of
// linear_grad input gradients (arith.addf) runs inside their GEMMs
// (GradientSums.h). gdn.split_qkvz, gdn.regroup_sections and the inverse
// copies of the backward (gdn.merge_qkvz, gdn.merge_qkv) only move data:
// each is a few strided block copies (StridedCopy), printed as one
// gdn::stridedCopies call (gdn/device/strided_copies.cuh: one kernel).
// Shapes are C++ expressions of the function arguments' shapes, folded to
// numbers where the types are static.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "DeviceCalls.h"
#include "GradientSums.h"
#include "NormRecomputation.h"

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <numeric>
#include <optional>

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::cuda;

namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

int64_t elementBytes(Value value) {
  return tensorType(value).getElementTypeBitWidth() / 8;
}

//===----------------------------------------------------------------------===//
// Shape expressions
//===----------------------------------------------------------------------===//

std::optional<int64_t> literal(StringRef expr) {
  int64_t value;
  if (expr.getAsInteger(10, value))
    return std::nullopt;
  return value;
}

/// A size as `base * num / den`, so that a gather's factor and a scatter's
/// divisor over the same group cancel (`T * 2 / 2` is `T`). Parses only the
/// forms `print` produces; anything else is an opaque base.
struct Extent {
  std::string base; ///< empty for a number
  int64_t num = 1, den = 1;

  static Extent parse(StringRef expr) {
    if (std::optional<int64_t> value = literal(expr))
      return {"", *value, 1};
    Extent extent{expr.str()};
    if (!expr.consume_front("(") || !expr.consume_back(")"))
      return extent;
    auto [rest, divisor] = expr.rsplit(" / ");
    int64_t den = 1, num = 1;
    if (!divisor.empty() && !divisor.getAsInteger(10, den))
      expr = rest;
    auto [base, factor] = expr.rsplit(" * ");
    if (!factor.empty() && !factor.getAsInteger(10, num))
      expr = base;
    if (num == 1 && den == 1)
      return extent;
    return {expr.str(), num, den};
  }

  std::string print() const {
    if (base.empty())
      return std::to_string(num / den);
    if (num == 1 && den == 1)
      return base;
    std::string text = "(" + base;
    if (num != 1)
      text += " * " + std::to_string(num);
    if (den != 1)
      text += " / " + std::to_string(den);
    return text + ")";
  }

  Extent scaled(int64_t factor, int64_t divisor) const {
    Extent result = *this;
    result.num *= factor;
    result.den *= divisor;
    const int64_t common = std::gcd(result.num, result.den);
    result.num /= common;
    result.den /= common;
    return result;
  }
};

std::string times(const std::string &expr, int64_t factor) {
  return Extent::parse(expr).scaled(factor, 1).print();
}

/// `expr / divisor`; a dynamic `expr` must divide, which the caller checks
/// at run time (the condition joins `conditions`).
std::string dividedBy(const std::string &expr, int64_t divisor,
                      std::vector<std::string> &conditions) {
  Extent extent = Extent::parse(expr).scaled(1, divisor);
  if (!extent.base.empty() && extent.den != 1)
    conditions.push_back(extent.base + " % " + std::to_string(extent.den) +
                         " == 0");
  return extent.print();
}

/// `[tokens, the type's static sizes...]`.
ShapeExprs withTokens(Value value, const std::string &tokens) {
  auto type = tensorType(value);
  ShapeExprs dims{tokens};
  for (int64_t d = 1; d < type.getRank(); ++d)
    dims.push_back(std::to_string(type.getDimSize(d)));
  return dims;
}

/// Asks that every operand has the first one's token count (dimension 0)
/// where the expressions differ (two arguments' dynamic sizes).
void sameTokens(ArrayRef<ShapeExprs> operands,
                std::vector<std::string> &conditions) {
  for (const ShapeExprs &operand : operands.drop_front()) {
    std::string condition = operands[0][0] + " == " + operand[0];
    if (operand[0] != operands[0][0] &&
        !llvm::is_contained(conditions, condition))
      conditions.push_back(condition);
  }
}

/// The result shapes by each op's definition, from its operands' shapes.
std::vector<ShapeExprs> deriveShapes(Operation *op,
                                     ArrayRef<ShapeExprs> operands,
                                     std::vector<std::string> &conditions) {
  auto ranksOf = [](comm::GroupAttr group) { return group.getRanks(); };
  return llvm::TypeSwitch<Operation *, std::vector<ShapeExprs>>(op)
      .Case([&](LinearOp linear) {
        return std::vector<ShapeExprs>{
            withTokens(linear.getY(), operands[0][0])};
      })
      .Case([&](LinearGradOp) {
        sameTokens(operands.take_front(2), conditions); // dy and x
        return std::vector<ShapeExprs>{operands[1], operands[2]};
      })
      .Case<SplitQkvzOp, MergeQkvzOp, MergeQkvOp>([&](Operation *copies) {
        // Every tensor of these ops is [tokens, ...] with one token count.
        std::vector<ShapeExprs> shapes;
        for (Value result : copies->getResults())
          shapes.push_back(withTokens(result, operands[0][0]));
        sameTokens(operands, conditions);
        return shapes;
      })
      .Case([&](arith::AddFOp) {
        sameTokens(operands, conditions);
        return std::vector<ShapeExprs>{operands[0]};
      })
      .Case([&](RegroupSectionsOp regroup) {
        int64_t total = 0;
        for (int64_t size : regroup.getSectionSizes())
          total += size;
        const std::string &extent = operands[0][regroup.getDim()];
        if (!literal(extent))
          conditions.push_back(extent + " == " + std::to_string(total));
        return std::vector<ShapeExprs>{operands[0]};
      })
      .Case([&](comm::AllGatherOp gather) {
        ShapeExprs dims = operands[0];
        dims[gather.getDim()] =
            times(dims[gather.getDim()], ranksOf(gather.getGroup()));
        return std::vector<ShapeExprs>{dims};
      })
      .Case([&](comm::ReduceScatterOp scatter) {
        ShapeExprs dims = operands[0];
        dims[scatter.getDim()] = dividedBy(
            dims[scatter.getDim()], ranksOf(scatter.getGroup()), conditions);
        return std::vector<ShapeExprs>{dims};
      })
      .Case([&](comm::AllToAllOp exchange) {
        const int64_t ranks = ranksOf(exchange.getGroup());
        ShapeExprs dims = operands[0];
        dims[exchange.getSplitDim()] =
            dividedBy(dims[exchange.getSplitDim()], ranks, conditions);
        dims[exchange.getConcatDim()] =
            times(dims[exchange.getConcatDim()], ranks);
        return std::vector<ShapeExprs>{dims};
      })
      .Case([&](comm::HaloExchangeOp halo) {
        ShapeExprs dims = operands[0];
        dims[0] = std::to_string(halo.getTokens());
        return std::vector<ShapeExprs>{dims};
      })
      .Case([&](comm::StateExchangeOp exchange) {
        return std::vector<ShapeExprs>{operands[1]};
      })
      .Case([&](comm::LocalShardOp shard) {
        ShapeExprs dims = operands[0];
        dims[shard.getDim()] = dividedBy(dims[shard.getDim()],
                                         ranksOf(shard.getGroup()), conditions);
        return std::vector<ShapeExprs>{dims};
      })
      .Case([&](comm::LocalUnshardOp unshard) {
        ShapeExprs dims = operands[0];
        dims[unshard.getDim()] =
            times(dims[unshard.getDim()], ranksOf(unshard.getGroup()));
        return std::vector<ShapeExprs>{dims};
      })
      .Case<comm::AllReduceOp, comm::ReplicatedToPartialOp>(
          [&](Operation *) { return std::vector<ShapeExprs>{operands[0]}; })
      .Case([&](comm::ReturnHaloOp) {
        return std::vector<ShapeExprs>{operands[1]}; // dest's
      })
      .Case([&](comm::ReverseStateExchangeOp) {
        return std::vector<ShapeExprs>{operands[1], operands[2]};
      })
      .Default([](Operation *) { return std::vector<ShapeExprs>{}; });
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

std::string chainName(comm::ChainKind chain) {
  return chain == comm::ChainKind::Scan ? "GDNRT_CHAIN_SCAN"
                                        : "GDNRT_CHAIN_ALL_GATHER";
}

/// `if (int error = <call>)\n    return error;` with the call's arguments.
void printChecked(llvm::raw_ostream &os, StringRef function,
                  ArrayRef<std::string> arguments) {
  os << "  if (int error = " << function << "(";
  llvm::interleaveComma(arguments, os);
  os << "))\n    return error;\n";
}

/// Prints an op's copies as one `gdn::stridedCopies` call (one kernel; see
/// gdn/device/strided_copies.cuh), inside a block that holds their
/// descriptors.
void printStridedCopies(ArrayRef<StridedCopy> copies, Operation *op,
                        llvm::function_ref<std::string(Value)> place,
                        llvm::raw_ostream &os) {
  os << "  {\n    const gdn::StridedCopy copies[] = {\n";
  for (const StridedCopy &copy : copies) {
    std::string from = place(op->getOperand(copy.source));
    std::string to = place(op->getResult(copy.target));
    // The slice count is read from the source tensor, which every step
    // checked before anything was enqueued.
    SmallVector<std::string> factors;
    for (unsigned d = 0; d < copy.sliceDims; ++d)
      factors.push_back("static_cast<size_t>(" + from + ".shape[" +
                        std::to_string(d) + "])");
    std::string slices = factors.empty() ? "1" : llvm::join(factors, " * ");
    os << "        {static_cast<char *>(" << to << ".data) + "
       << copy.targetOffset << ", " << copy.targetRowPitch << ", "
       << copy.targetSlicePitch << ", static_cast<const char *>(" << from
       << ".data) + " << copy.sourceOffset << ", " << copy.sourceRowPitch
       << ", " << copy.sourceSlicePitch << ", " << copy.width << ", "
       << copy.rows << ", " << slices << "},\n";
  }
  os << "    };\n    if (gdn::stridedCopies(copies, " << copies.size()
     << ", stream) != cudaSuccess)\n      return GDN_ERROR_CUDA;\n  }\n";
}

} // namespace

//===----------------------------------------------------------------------===//
// Queries
//===----------------------------------------------------------------------===//

bool mlir::gdn::cuda::isRuntimeCall(Operation *op) {
  if (isDeviceCall(op))
    return true;
  if (auto add = dyn_cast<arith::AddFOp>(op))
    return isa<RankedTensorType>(add.getType());
  return isa<LinearOp, LinearGradOp, SplitQkvzOp, MergeQkvzOp, MergeQkvOp,
             RegroupSectionsOp, comm::AllGatherOp, comm::ReduceScatterOp,
             comm::AllToAllOp, comm::HaloExchangeOp, comm::StateExchangeOp,
             comm::LocalShardOp, comm::RankOp, comm::AllReduceOp,
             comm::LocalUnshardOp, comm::ReplicatedToPartialOp,
             comm::ReturnHaloOp, comm::ReverseStateExchangeOp>(op);
}

std::string mlir::gdn::cuda::getRuntimeCallLimitation(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  const std::string name = op->getName().getStringRef().str();
  for (Type type :
       llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor)
      continue;
    if (tensor.getRank() > 6) {
      os << name << " on " << type
         << " has no CUDA lowering (gdn_tensor_t holds at most 6 dimensions)";
      return text;
    }
    for (int64_t d = 1; d < tensor.getRank(); ++d)
      if (tensor.isDynamicDim(d)) {
        os << name << " on " << type
           << " has no CUDA lowering (static sizes are needed except the "
              "token dimension)";
        return text;
      }
  }
  if (auto linear = dyn_cast<LinearOp>(op)) {
    Type element = linear.getX().getType().getElementType();
    Type output = linear.getY().getType().getElementType();
    // An f32 output of 16-bit operands is an f32 projection output.
    if (element != linear.getWeight().getType().getElementType() ||
        (output != element && !output.isF32()) ||
        !(element.isBF16() || element.isF16() || element.isF32()))
      os << name << " of " << linear.getX().getType() << " by "
         << linear.getWeight().getType() << " into " << linear.getY().getType()
         << " has no CUDA lowering (gdnrt_linear takes x and the weight in "
            "one element type among bf16, f16 and f32, and y in it or f32)";
  }
  if (auto grad = dyn_cast<LinearGradOp>(op)) {
    Type element = grad.getX().getType().getElementType();
    auto sameElement = [&](Type type) {
      return cast<RankedTensorType>(type).getElementType() == element;
    };
    if (!llvm::all_of(op->getOperandTypes(), sameElement) ||
        !llvm::all_of(op->getResultTypes(), sameElement) ||
        !(element.isBF16() || element.isF16() || element.isF32()))
      os << name << " of " << grad.getYGrad().getType() << " and "
         << grad.getX().getType() << " by " << grad.getWeight().getType()
         << " has no CUDA lowering (gdnrt_linear_grad takes one element type "
            "among bf16, f16 and f32)";
  }
  if (isDeviceCall(op))
    return getDeviceCallLimitation(op);
  // The verifiers already hold the copies' and state_exchange's element
  // types to what the lowering needs.
  return text;
}

RuntimeCallShapes mlir::gdn::cuda::getRuntimeCallShapes(
    Operation *op, ArrayRef<ShapeExprs> operands, const ShapeContext &context) {
  RuntimeCallShapes shapes;
  shapes.results =
      isDeviceCall(op)
          ? getDeviceCallShapes(op, operands, context, shapes.conditions)
          : deriveShapes(op, operands, shapes.conditions);
  // A static size in a result type must be what the definition gives; it is
  // known here when the operands' sizes are, and checked at run time when
  // they are not (a dynamic token count meeting a static result).
  for (auto [result, dims] : llvm::zip(op->getResults(), shapes.results)) {
    auto type = tensorType(result);
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (type.isDynamicDim(d) || literal(dims[d]))
        continue;
      shapes.conditions.push_back(dims[d] +
                                  " == " + std::to_string(type.getDimSize(d)));
      dims[d] = std::to_string(type.getDimSize(d));
    }
  }
  return shapes;
}

SmallVector<Value, 2> mlir::gdn::cuda::getStagingOperands(Operation *op) {
  if (isDeviceCall(op))
    return getDeviceCallStagingOperands(op);
  return llvm::TypeSwitch<Operation *, SmallVector<Value, 2>>(op)
      .Case<comm::AllGatherOp, comm::ReduceScatterOp, comm::AllToAllOp,
            comm::AllReduceOp>([](auto collective) {
        return SmallVector<Value, 2>{collective.getInput()};
      })
      .Case<comm::StateExchangeOp, comm::ReverseStateExchangeOp>(
          [](auto exchange) {
            return SmallVector<Value, 2>{exchange.getPartialState()};
          })
      .Case([](comm::ReturnHaloOp halo) {
        return SmallVector<Value, 2>{halo.getHaloGrad(), halo.getDest()};
      })
      .Default([](Operation *) { return SmallVector<Value, 2>(); });
}

std::string mlir::gdn::cuda::getStagingQuery(Operation *op,
                                             ArrayRef<std::string> tensors) {
  if (isDeviceCall(op))
    return getDeviceCallStagingQuery(op, tensors);
  std::string text;
  llvm::raw_string_ostream os(text);
  const std::string ranks = std::to_string(getRuntimeCallGroup(op).getRanks());
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](comm::AllGatherOp gather) {
        os << "gdnrt_all_gather_workspace_bytes(&" << tensors[0] << ", "
           << ranks << ", " << gather.getDim() << ")";
      })
      .Case([&](comm::ReduceScatterOp scatter) {
        os << "gdnrt_reduce_scatter_workspace_bytes(&" << tensors[0] << ", "
           << ranks << ", " << scatter.getDim() << ")";
      })
      .Case([&](comm::AllToAllOp exchange) {
        os << "gdnrt_all_to_all_workspace_bytes(&" << tensors[0] << ", "
           << ranks << ", " << exchange.getSplitDim() << ", "
           << exchange.getConcatDim() << ")";
      })
      .Case([&](comm::AllReduceOp) {
        os << "gdnrt_all_reduce_workspace_bytes(&" << tensors[0] << ", "
           << ranks << ")";
      })
      .Case([&](comm::StateExchangeOp exchange) {
        os << "gdnrt_state_exchange_workspace_bytes(&" << tensors[0] << ", "
           << ranks << ", " << chainName(exchange.getChain()) << ")";
      })
      .Case([&](comm::ReverseStateExchangeOp exchange) {
        os << "gdnrt_reverse_state_exchange_workspace_bytes(&" << tensors[0]
           << ", " << ranks << ", " << chainName(exchange.getChain()) << ")";
      })
      .Case([&](comm::ReturnHaloOp) {
        os << "gdnrt_return_halo_workspace_bytes(&" << tensors[0] << ", &"
           << tensors[1] << ", " << ranks << ")";
      });
  return text;
}

comm::GroupAttr mlir::gdn::cuda::getRuntimeCallGroup(Operation *op) {
  // A zigzag conversion moves rows within the CP group its shards name.
  if (auto convert = dyn_cast<ConvertLayoutOp>(op))
    for (Value value : {convert.getX(), convert.getY()})
      if (auto seq = dyn_cast_or_null<SeqLayoutAttr>(
              getSequenceLayout(value.getType())))
        return comm::GroupAttr::get(op->getContext(), comm::GroupKind::CP,
                                    seq.getRanks());
  return op->getAttrOfType<comm::GroupAttr>("group");
}

std::string mlir::gdn::cuda::getGroupRole(comm::GroupAttr group) {
  return group.getKind() == comm::GroupKind::CP ? "GDNRT_GROUP_CP"
                                                : "GDNRT_GROUP_SP";
}

//===----------------------------------------------------------------------===//
// Copies
//===----------------------------------------------------------------------===//

namespace {

/// The copies of Qwen3-Next's split, from qkvz (operand 0) and ba (operand
/// 1) to mixed_qkv, z, b and a (results 0-3). Per token and key-head group
/// g, qkvz holds [q | k | v (r*V) | z (r*V)] and ba holds [b (r) | a (r)];
/// each part goes to its own result, group g's block after group g-1's.
std::vector<StridedCopy> getSplitQkvzCopies(int64_t heads, int64_t headK,
                                            RankedTensorType zType, int64_t e,
                                            int64_t g) {
  std::vector<StridedCopy> copies;
  const int64_t valueHeads = zType.getDimSize(1);
  const int64_t groupV = valueHeads / heads * zType.getDimSize(2);
  const int64_t ratio = valueHeads / heads;
  const int64_t groupWidth = (2 * headK + 2 * groupV) * e;
  const int64_t channels = (2 * heads * headK + heads * groupV) * e;
  auto part = [&](unsigned target, int64_t from, int64_t to, int64_t width,
                  int64_t targetRow) {
    copies.push_back({0, target, from, to, width, heads, groupWidth, targetRow,
                      1, heads * groupWidth,
                      target == 0 ? channels : heads * groupV * e});
  };
  part(0, 0, 0, headK * e, headK * e);                         // q
  part(0, headK * e, heads * headK * e, headK * e, headK * e); // k
  part(0, 2 * headK * e, 2 * heads * headK * e, groupV * e,    // v
       groupV * e);
  part(1, (2 * headK + groupV) * e, 0, groupV * e, groupV * e); // z
  for (unsigned target : {2u, 3u})                              // b, then a
    copies.push_back({1, target, target == 2 ? 0 : ratio * g, 0, ratio * g,
                      heads, 2 * ratio * g, ratio * g, 1, 2 * valueHeads * g,
                      valueHeads * g});
  return copies;
}

/// The same bytes moved the other way: the copy from `target` to `source`.
StridedCopy invert(const StridedCopy &copy) {
  return {copy.target,           copy.source,          copy.targetOffset,
          copy.sourceOffset,     copy.width,           copy.rows,
          copy.targetRowPitch,   copy.sourceRowPitch,  copy.sliceDims,
          copy.targetSlicePitch, copy.sourceSlicePitch};
}

} // namespace

std::vector<StridedCopy> mlir::gdn::cuda::getStridedCopies(Operation *op) {
  std::vector<StridedCopy> copies;
  if (auto split = dyn_cast<SplitQkvzOp>(op))
    return getSplitQkvzCopies(
        split.getKeyHeads(), split.getHeadDimK(), tensorType(split.getZ()),
        elementBytes(split.getQkvz()), elementBytes(split.getBa()));
  if (auto merge = dyn_cast<MergeQkvzOp>(op)) {
    // The split's copies reversed: split operand i is merge result i, split
    // result j merge operand j.
    for (const StridedCopy &copy : getSplitQkvzCopies(
             merge.getKeyHeads(), merge.getHeadDimK(), tensorType(merge.getZ()),
             elementBytes(merge.getQkvz()), elementBytes(merge.getBa())))
      copies.push_back(invert(copy));
    return copies;
  }
  if (auto merge = dyn_cast<MergeQkvOp>(op)) {
    // Per token, [q (H*K) | k (H*K) | v (HV*V)]: one block copy over the
    // tokens per part.
    const int64_t e = elementBytes(merge.getMixedQkv());
    const int64_t channels = tensorType(merge.getMixedQkv()).getDimSize(1) * e;
    int64_t offset = 0;
    for (auto [index, part] : llvm::enumerate(merge->getOperands())) {
      auto type = tensorType(part);
      const int64_t width = type.getDimSize(1) * type.getDimSize(2) * e;
      copies.push_back({static_cast<unsigned>(index), 0, 0, offset, width, 1,
                        width, channels, 1, width, channels});
      offset += width;
    }
    return copies;
  }
  auto regroup = dyn_cast<RegroupSectionsOp>(op);
  if (!regroup)
    return copies;
  // Along `dim`, section s's part g moves between [start_s + g * part_s] (the
  // sections in order) and [g * total / groups + sum of the earlier parts]
  // (grouped); every index before `dim` is a slice.
  auto type = tensorType(regroup.getX());
  const int64_t dim = regroup.getDim(), groups = regroup.getGroups();
  int64_t inner = elementBytes(regroup.getX());
  for (int64_t d = dim + 1; d < type.getRank(); ++d)
    inner *= type.getDimSize(d);
  int64_t total = 0;
  for (int64_t size : regroup.getSectionSizes())
    total += size;
  int64_t start = 0, before = 0;
  for (int64_t size : regroup.getSectionSizes()) {
    const int64_t part = size / groups;
    StridedCopy copy{0,
                     0,
                     start * inner,
                     before * inner,
                     part * inner,
                     groups,
                     part * inner,
                     total / groups * inner,
                     static_cast<unsigned>(dim),
                     total * inner,
                     total * inner};
    if (regroup.getInverse()) {
      std::swap(copy.sourceOffset, copy.targetOffset);
      std::swap(copy.sourceRowPitch, copy.targetRowPitch);
    }
    copies.push_back(copy);
    start += size;
    before += part;
  }
  return copies;
}

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

void mlir::gdn::cuda::printWeightGradientAfter(
    Operation *op, llvm::function_ref<std::string(Value)> place,
    llvm::raw_ostream &os) {
  auto grad = dyn_cast<kernel::GatedRMSNormGradOp>(op);
  kernel::GatedRMSNormOp norm = grad ? getFoldedRecomputation(grad) : nullptr;
  if (!norm)
    return;
  auto projection = cast<LinearGradOp>(*norm.getY().getUsers().begin());
  os << "  // the weight GEMM of the gdn.linear_grad at " << projection.getLoc()
     << ", on the x written above\n";
  printChecked(os, "gdnrt_linear_weight_grad",
               {"context", "&" + place(projection.getYGrad()),
                "&" + place(projection.getX()),
                "&" + place(projection.getWeightGrad())});
}

void mlir::gdn::cuda::printRuntimeCall(
    Operation *op, llvm::function_ref<std::string(Value)> place,
    StringRef staging, llvm::raw_ostream &os) {
  if (isDeviceCall(op))
    return printDeviceCall(op, place, staging, os);
  auto ref = [&](Value value) { return "&" + place(value); };
  comm::GroupAttr group = getRuntimeCallGroup(op);
  std::string role = group ? getGroupRole(group) : "";
  std::string ranks = group ? std::to_string(group.getRanks()) : "";
  std::string stagingArg = staging.str();
  os << "  // " << op->getName() << " at " << op->getLoc() << "\n";
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](LinearOp linear) {
        printChecked(os, "gdnrt_linear",
                     {"context", ref(linear.getX()), ref(linear.getWeight()),
                      ref(linear.getY())});
      })
      .Case([&](LinearGradOp grad) {
        // x is written by the norm backward that needs dx: the data GEMM
        // now, the weight GEMM after that backward (NormRecomputation.h).
        if (getSplittingBackward(grad)) {
          os << "  // the data GEMM; the weight GEMM follows the norm backward "
                "that writes x\n";
          printChecked(os, "gdnrt_linear_data_grad",
                       {"context", ref(grad.getYGrad()), ref(grad.getWeight()),
                        ref(grad.getXGrad())});
          return;
        }
        // A term of a folded sum after the first adds onto the sum's buffer.
        const bool accumulate = accumulatesInputGradient(grad);
        if (accumulate)
          os << "  // dx accumulates onto the sum of input gradients\n";
        printChecked(os,
                     accumulate ? "gdnrt_linear_grad_accumulate"
                                : "gdnrt_linear_grad",
                     {"context", ref(grad.getYGrad()), ref(grad.getX()),
                      ref(grad.getWeight()), ref(grad.getXGrad()),
                      ref(grad.getWeightGrad())});
      })
      .Case([&](arith::AddFOp) {
        os << "  // summed in place by the gdn.linear_grad calls of its "
              "terms\n";
      })
      .Case([&](comm::AllGatherOp gather) {
        printChecked(os, "gdnrt_all_gather",
                     {"context", role, ranks, ref(gather.getInput()),
                      ref(gather.getResult()), std::to_string(gather.getDim()),
                      stagingArg});
      })
      .Case([&](comm::ReduceScatterOp scatter) {
        printChecked(os, "gdnrt_reduce_scatter",
                     {"context", role, ranks, ref(scatter.getInput()),
                      ref(scatter.getResult()),
                      std::to_string(scatter.getDim()), stagingArg});
      })
      .Case([&](comm::AllToAllOp exchange) {
        printChecked(os, "gdnrt_all_to_all",
                     {"context", role, ranks, ref(exchange.getInput()),
                      ref(exchange.getResult()),
                      std::to_string(exchange.getSplitDim()),
                      std::to_string(exchange.getConcatDim()), stagingArg});
      })
      .Case([&](comm::HaloExchangeOp halo) {
        printChecked(os, "gdnrt_halo_exchange",
                     {"context", role, ranks, ref(halo.getInput()),
                      ref(halo.getHalo())});
      })
      .Case([&](comm::StateExchangeOp exchange) {
        printChecked(os, "gdnrt_state_exchange",
                     {"context", role, ranks, ref(exchange.getTransition()),
                      ref(exchange.getPartialState()),
                      ref(exchange.getIncomingState()),
                      chainName(exchange.getChain()), stagingArg});
      })
      .Case([&](comm::LocalShardOp shard) {
        printChecked(os, "gdnrt_local_shard",
                     {"context", role, ranks, ref(shard.getInput()),
                      ref(shard.getResult()), std::to_string(shard.getDim())});
      })
      .Case([&](comm::AllReduceOp reduce) {
        printChecked(os, "gdnrt_all_reduce",
                     {"context", role, ranks, ref(reduce.getInput()),
                      ref(reduce.getResult()), stagingArg});
      })
      .Case([&](comm::LocalUnshardOp unshard) {
        printChecked(os, "gdnrt_local_unshard",
                     {"context", role, ranks, ref(unshard.getInput()),
                      ref(unshard.getResult()),
                      std::to_string(unshard.getDim())});
      })
      .Case([&](comm::ReplicatedToPartialOp partial) {
        printChecked(os, "gdnrt_replicated_to_partial",
                     {"context", role, ranks, ref(partial.getInput()),
                      ref(partial.getResult())});
      })
      .Case([&](comm::ReturnHaloOp halo) {
        printChecked(os, "gdnrt_return_halo",
                     {"context", role, ranks, ref(halo.getHaloGrad()),
                      ref(halo.getDest()), ref(halo.getResult()), stagingArg});
      })
      .Case([&](comm::ReverseStateExchangeOp exchange) {
        printChecked(
            os, "gdnrt_reverse_state_exchange",
            {"context", role, ranks, ref(exchange.getIncomingStateGrad()),
             ref(exchange.getTransition()), ref(exchange.getPartialState()),
             ref(exchange.getTransitionGrad()),
             ref(exchange.getPartialStateGrad()),
             chainName(exchange.getChain()), stagingArg});
      })
      .Case([&](comm::RankOp) {
        // The index has no consumer a whole-function entry point can hold;
        // the query still checks the group's binding where the IR asks.
        os << "  {\n    int rank = 0;\n";
        os << "    if (int error = gdnrt_group_rank(context, " << role << ", "
           << ranks << ", &rank))\n      return error;\n  }\n";
      })
      .Case<SplitQkvzOp, MergeQkvzOp, MergeQkvOp, RegroupSectionsOp>(
          [&](Operation *copyOp) {
            // Statically empty copies (a zero-width section) print nothing.
            std::vector<StridedCopy> copies;
            for (const StridedCopy &copy : getStridedCopies(copyOp))
              if (copy.width != 0 && copy.rows != 0)
                copies.push_back(copy);
            if (!copies.empty())
              printStridedCopies(copies, copyOp, place, os);
          });
}
