//===- DeviceCalls.cpp - ops an entry point runs as small kernels ---------===//
//
// Prints the launches of the device header library's small kernels for
// chunkwise CP's per-rank ops, the owners' masks of the per-sequence
// collectives, the zigzag conversions, zero fills, slices, sums of
// cotangents and L2 norms outside a layer (DeviceCalls.h). Every kernel
// that reads a packing takes its status record: given invalid offsets it
// writes NaN, never numbers.
//
//===----------------------------------------------------------------------===//

#include "DeviceCalls.h"

#include "GradientSums.h"
#include "InsertChains.h"
#include "RuntimeCalls.h"
#include "SliceViews.h"

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::cuda;

namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// The product of a tensor's static sizes from `from` on.
int64_t staticElements(Value value, unsigned from) {
  int64_t n = 1;
  auto type = tensorType(value);
  for (int64_t d = from; d < type.getRank(); ++d)
    n *= type.getDimSize(d);
  return n;
}

/// True for a zero constant: a scalar 0.0 or a dense splat of it.
bool isZeroConstant(Value value) {
  return matchPattern(value, m_AnyZeroFloat());
}

/// Adds the run-time condition that `rows` (the sliced tensor's leading
/// size) holds the slice's rows, when the verifier could not check it.
void rowsHoldSlice(OffsetSizeAndStrideOpInterface slice,
                   const std::string &rows,
                   std::vector<std::string> &conditions) {
  const int64_t end = slice.getStaticOffsets()[0] + slice.getStaticSizes()[0];
  int64_t staticRows;
  if (!llvm::StringRef(rows).getAsInteger(10, staticRows))
    return; // a static size the verifier checked
  conditions.push_back(std::to_string(end) + " <= " + rows);
}

/// A block of columns inserted into a tensor spans all of its rows: a
/// run-time condition where either count is dynamic.
void columnsSpanRows(const std::string &sourceRows, const std::string &destRows,
                     std::vector<std::string> &conditions) {
  if (sourceRows != destRows)
    conditions.push_back(sourceRows + " == " + destRows);
}

/// `gdn::device::PackingView{...}` of a gdn_packing_t.
std::string packingView(const std::string &p) {
  return "gdn::device::PackingView{" + p + ".cu_seqlens, " + p +
         ".cu_padded, " + p + ".num_seqs, " + p + ".buffer_tokens}";
}

std::string packingStatus(const std::string &p) {
  return "gdn::device::PackingWorkspace::carve(" + p + ".workspace).status";
}

std::string typed(Value value, const std::string &place, bool isConst) {
  return "static_cast<" + std::string(isConst ? "const " : "") +
         getDeviceType(tensorType(value).getElementType()) + " *>(" + place +
         ".data)";
}

/// An f64 attribute as a float literal of C++ (as the kernels' Configs
/// print their eps).
std::string floatLiteral(APFloat value) {
  return llvm::formatv("{0:e}f", value.convertToDouble()).str();
}

/// `if (<launch> != cudaSuccess) return GDN_ERROR_CUDA;`
void printLaunch(llvm::raw_ostream &os, const std::string &launch) {
  os << "  if (" << launch << " != cudaSuccess)\n"
     << "    return GDN_ERROR_CUDA;\n";
}

/// The per-sequence entries [N, ...] of `value` as the mask kernel's
/// arguments, from `in` to `out`.
void printOwnedSequences(llvm::raw_ostream &os, Value value,
                         const std::string &packing, comm::GroupAttr group,
                         const std::string &in, const std::string &out) {
  const std::string type = getDeviceType(tensorType(value).getElementType());
  printLaunch(os, "gdn::device::keepOwnedSequences<" + type + ">({" +
                      packingView(packing) + ", " + packingStatus(packing) +
                      ", " + getRankVariable(group) + ", " +
                      std::to_string(group.getRanks()) + ", " +
                      std::to_string(staticElements(value, 1)) +
                      ", static_cast<const " + type + " *>(" + in +
                      ".data), static_cast<" + type + " *>(" + out +
                      ".data)}, stream)");
}

/// Bytes of one row of `value`: the static sizes after its leading one.
int64_t rowBytes(Value value) {
  return staticElements(value, 1) * tensorType(value).getElementTypeBitWidth() /
         8;
}

/// Elements of `value` at run time: its leading size (dynamic or not) times
/// the static rest; 1 for a scalar.
std::string elementsOf(Value value, const std::string &place) {
  if (tensorType(value).getRank() == 0)
    return "int64_t{1}";
  return "static_cast<int64_t>(" + place + ".shape[0]) * " +
         std::to_string(staticElements(value, 1));
}

/// Bytes of `value` at run time.
std::string bytesOf(Value value, const std::string &place) {
  return "static_cast<size_t>(" + elementsOf(value, place) + ") * " +
         std::to_string(tensorType(value).getElementTypeBitWidth() / 8);
}

} // namespace

bool mlir::gdn::cuda::isDeviceCall(Operation *op) {
  if (auto constant = dyn_cast<arith::ConstantOp>(op))
    return isa<RankedTensorType>(constant.getType());
  if (auto add = dyn_cast<arith::AddFOp>(op))
    return isa<RankedTensorType>(add.getType()) && !isFoldedGradientSum(add);
  return isa<comm::LocalPackingOp, comm::SummaryPackingOp,
             comm::ContinueConvStateOp, comm::ContinueStateOp,
             comm::ContinueConvStateGradOp, comm::ContinueStateGradOp,
             comm::SummaryInitialStatesOp, comm::SummaryInitialStatesGradOp,
             comm::GatherSequenceStatesOp, comm::ReduceSequenceStatesOp,
             ConvertLayoutOp, L2NormOp, L2NormGradOp, tensor::SplatOp,
             tensor::ExtractSliceOp, tensor::InsertSliceOp,
             tensor::CollapseShapeOp>(op);
}

bool mlir::gdn::cuda::isShapeHelper(Operation *op) {
  if (auto constant = dyn_cast<arith::ConstantOp>(op))
    return !isa<RankedTensorType>(constant.getType());
  return isa<tensor::DimOp>(op);
}

bool mlir::gdn::cuda::isDerivedPacking(Operation *op) {
  return isa<comm::LocalPackingOp, comm::SummaryPackingOp>(op);
}

std::string mlir::gdn::cuda::getDeviceCallLimitation(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  const std::string name = op->getName().getStringRef().str();
  auto floatOf = [](Value value) {
    Type element = tensorType(value).getElementType();
    return element.isBF16() || element.isF16() || element.isF32();
  };
  for (Value value : llvm::concat<Value>(op->getOperands(), op->getResults()))
    if (isa<RankedTensorType>(value.getType()) && !floatOf(value)) {
      os << name << " on " << value.getType()
         << " has no CUDA lowering (its kernels take bf16, f16 or f32)";
      return text;
    }
  if (auto constant = dyn_cast<arith::ConstantOp>(op);
      constant && !isZeroConstant(constant.getResult()))
    os << name << " " << constant.getValue()
       << " has no CUDA lowering (only zero tensors run, as fills)";
  if (auto splat = dyn_cast<tensor::SplatOp>(op);
      splat && !isZeroConstant(splat.getInput()))
    os << name
       << " of a non-zero scalar has no CUDA lowering (only zero "
          "tensors run, as fills)";
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op);
      slice && !isLeadingRowsSlice(slice, slice.getSourceType()))
    os << name << " " << slice.getType()
       << " has no CUDA lowering (slices run as copies of leading rows: an "
          "offset and extent along dimension 0 only)";
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    SmallVector<ReassociationIndices> groups =
        collapse.getReassociationIndices();
    if (groups.size() != 2 || groups[0].size() != 1 ||
        ShapedType::isDynamic(collapse.getResultType().getDimSize(1)))
      os << name << " " << collapse.getSrcType()
         << " has no CUDA lowering (collapses run as a token's features "
            "flattened into one row: [[0], [1, ...]], static)";
  }
  if (auto slice = dyn_cast<tensor::InsertSliceOp>(op);
      slice && !isLeadingRowsSlice(slice, slice.getDestType()) &&
      !isColumnsSlice(slice, slice.getDestType()))
    os << name << " " << slice.getDestType()
       << " has no CUDA lowering (insertions run as copies of leading rows, an "
          "offset and extent along dimension 0 only, or of a block of columns "
          "of a 2-D tensor, every row)";
  if (isa<comm::ContinueStateGradOp, comm::ContinueConvStateGradOp>(op) &&
      !tensorType(op->getResult(0)).hasStaticShape())
    os << name << " returning " << op->getResult(0).getType()
       << " has no CUDA lowering (its kernel takes the incoming state's or "
          "the halo's cotangent with static sizes)";
  if (auto splat = dyn_cast<tensor::SplatOp>(op))
    for (Value size : splat.getDynamicSizes()) {
      auto dim = size.getDefiningOp<tensor::DimOp>();
      if (!(dim && dim.getConstantIndex()) &&
          !size.getDefiningOp<arith::ConstantIndexOp>())
        os << name << " " << splat.getType()
           << " has no CUDA lowering (a dynamic size must be a tensor.dim "
              "of a constant index or a constant, which the entry point can "
              "size)";
    }
  if (auto convert = dyn_cast<ConvertLayoutOp>(op)) {
    auto from = dyn_cast_or_null<SeqLayoutAttr>(
        getSequenceLayout(convert.getX().getType()));
    auto to = dyn_cast_or_null<SeqLayoutAttr>(
        getSequenceLayout(convert.getY().getType()));
    const bool zigzagPair = from && to && from.getRanks() == to.getRanks() &&
                            from.getInner() == 1 && to.getInner() == 1 &&
                            (from.getKind() == SeqLayoutKind::Zigzag) !=
                                (to.getKind() == SeqLayoutKind::Zigzag);
    if (!zigzagPair)
      os << name << " from " << convert.getX().getType() << " to "
         << convert.getY().getType()
         << " has no CUDA lowering (conversions run between a zigzag and a "
            "contiguous token shard of one group)";
  }
  return text;
}

std::vector<ShapeExprs> mlir::gdn::cuda::getDeviceCallShapes(
    Operation *op, ArrayRef<ShapeExprs> operands, const ShapeContext &context,
    std::vector<std::string> &conditions) {
  // Per-sequence results have the packing's sequence count first, then the
  // type's static sizes.
  auto perSequence = [&](Value result, Value packing) {
    ShapeExprs dims{context.seqsOf(packing)};
    auto type = tensorType(result);
    for (int64_t d = 1; d < type.getRank(); ++d)
      dims.push_back(std::to_string(type.getDimSize(d)));
    return dims;
  };
  auto staticShape = [](Value result) {
    ShapeExprs dims;
    for (int64_t size : tensorType(result).getShape())
      dims.push_back(std::to_string(size));
    return dims;
  };
  auto sameRows = [&](ArrayRef<ShapeExprs> pair) {
    if (pair.size() == 2 && pair[0][0] != pair[1][0])
      conditions.push_back(pair[0][0] + " == " + pair[1][0]);
  };
  return llvm::TypeSwitch<Operation *, std::vector<ShapeExprs>>(op)
      .Case([&](comm::ContinueConvStateOp conv) {
        return std::vector<ShapeExprs>{
            perSequence(conv.getState(), conv.getPacking())};
      })
      .Case([&](comm::ContinueStateOp state) {
        return std::vector<ShapeExprs>{
            perSequence(state.getState(), state.getPacking())};
      })
      .Case([&](comm::ContinueStateGradOp grad) {
        std::vector<ShapeExprs> shapes{staticShape(grad.getIncomingGrad())};
        if (Value initial = grad.getInitialStateGrad())
          shapes.push_back(perSequence(initial, grad.getPacking()));
        return shapes;
      })
      .Case([&](comm::ContinueConvStateGradOp grad) {
        std::vector<ShapeExprs> shapes{staticShape(grad.getHaloGrad())};
        if (Value initial = grad.getInitialStateGrad())
          shapes.push_back(perSequence(initial, grad.getPacking()));
        return shapes;
      })
      .Case([&](comm::SummaryInitialStatesOp states) {
        return std::vector<ShapeExprs>{staticShape(states.getPartial()),
                                       staticShape(states.getTransition())};
      })
      .Case([&](comm::SummaryInitialStatesGradOp grad) {
        return std::vector<ShapeExprs>{
            perSequence(grad.getInitialStateGrad(), grad.getPacking())};
      })
      .Case<comm::GatherSequenceStatesOp, comm::ReduceSequenceStatesOp,
            ConvertLayoutOp>(
          [&](Operation *) { return std::vector<ShapeExprs>{operands[0]}; })
      .Case([&](arith::ConstantOp constant) {
        return std::vector<ShapeExprs>{staticShape(constant.getResult())};
      })
      .Case([&](tensor::SplatOp splat) {
        ShapeExprs dims;
        auto type = splat.getType();
        unsigned dynamic = 0;
        for (int64_t d = 0; d < type.getRank(); ++d)
          dims.push_back(
              type.isDynamicDim(d)
                  ? context.indexOf(splat.getDynamicSizes()[dynamic++])
                  : std::to_string(type.getDimSize(d)));
        return std::vector<ShapeExprs>{dims};
      })
      .Case([&](tensor::ExtractSliceOp slice) {
        // Static sizes only (isLeadingRowsSlice), so the result type is
        // static; a dynamic source must hold the rows the slice reads.
        rowsHoldSlice(slice, operands[0][0], conditions);
        return std::vector<ShapeExprs>{staticShape(slice.getResult())};
      })
      .Case([&](tensor::CollapseShapeOp collapse) {
        // A token's features into one row (getDeviceCallLimitation).
        return std::vector<ShapeExprs>{
            {operands[0][0],
             std::to_string(staticElements(collapse.getResult(), 1))}};
      })
      .Case([&](tensor::InsertSliceOp slice) {
        if (isColumnsSlice(slice, slice.getDestType()))
          columnsSpanRows(operands[0][0], operands[1][0], conditions);
        else
          rowsHoldSlice(slice, operands[1][0], conditions);
        return std::vector<ShapeExprs>{operands[1]};
      })
      .Case([&](arith::AddFOp) {
        sameRows(operands);
        return std::vector<ShapeExprs>{operands[0]};
      })
      .Case([&](L2NormOp) { return std::vector<ShapeExprs>{operands[0]}; })
      .Case([&](L2NormGradOp) {
        sameRows(operands);
        return std::vector<ShapeExprs>{operands[1]};
      })
      .Default([](Operation *) { return std::vector<ShapeExprs>{}; });
}

SmallVector<Value, 2>
mlir::gdn::cuda::getDeviceCallStagingOperands(Operation *op) {
  return llvm::TypeSwitch<Operation *, SmallVector<Value, 2>>(op)
      .Case<comm::GatherSequenceStatesOp, comm::ReduceSequenceStatesOp>(
          [](auto collective) {
            return SmallVector<Value, 2>{collective.getInput()};
          })
      .Case([](ConvertLayoutOp convert) {
        return SmallVector<Value, 2>{convert.getX()};
      })
      .Default([](Operation *) { return SmallVector<Value, 2>(); });
}

std::string
mlir::gdn::cuda::getDeviceCallStagingQuery(Operation *op,
                                           ArrayRef<std::string> tensors) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::TypeSwitch<Operation *>(op)
      .Case<comm::GatherSequenceStatesOp, comm::ReduceSequenceStatesOp>(
          [&](auto collective) {
            os << "gdnrt_all_reduce_workspace_bytes(&" << tensors[0] << ", "
               << collective.getGroup().getRanks() << ")";
          })
      .Case([&](ConvertLayoutOp convert) {
        // The gathered shards of every rank, then the all-gather's staging.
        const int64_t ranks = getRuntimeCallGroup(convert).getRanks();
        os << "gdn::alignWorkspace(" << ranks << " * gdn::tensorBytes(&"
           << tensors[0] << ")) + gdnrt_all_gather_workspace_bytes(&"
           << tensors[0] << ", " << ranks << ", 0)";
      });
  return text;
}

std::string mlir::gdn::cuda::getDerivedPackingBytes(Operation *op,
                                                    StringRef seqs) {
  const bool padded = cast<PackingType>(op->getResult(0).getType()).getPadded();
  return "gdn::device::DerivedPackingWorkspace::bytes(" + seqs.str() + ", " +
         (padded ? "true" : "false") + ")";
}

std::string mlir::gdn::cuda::getRankVariable(comm::GroupAttr group) {
  return group.getKind() == comm::GroupKind::CP ? "rank_cp" : "rank_sp";
}

void mlir::gdn::cuda::printDeviceCall(
    Operation *op, llvm::function_ref<std::string(Value)> place,
    StringRef staging, llvm::raw_ostream &os) {
  os << "  // " << op->getName() << " at " << op->getLoc() << "\n";
  auto group = op->getAttrOfType<comm::GroupAttr>("group");
  auto rankArgs = [&](comm::GroupAttr g) {
    return getRankVariable(g) + ", " + std::to_string(g.getRanks());
  };
  auto orNull = [&](Value value, bool isConst) {
    return value ? typed(value, place(value), isConst) : std::string("nullptr");
  };
  llvm::TypeSwitch<Operation *>(op)
      .Case<comm::LocalPackingOp, comm::SummaryPackingOp>([&](Operation *) {
        // The derived packing's offsets live in its workspace, after its
        // status record.
        const std::string global = place(op->getOperand(0));
        const std::string derived = place(op->getResult(0));
        const bool padded =
            cast<PackingType>(op->getResult(0).getType()).getPadded();
        const bool summary = isa<comm::SummaryPackingOp>(op);
        os << "  if (gdn::device::"
           << (summary ? "buildSummaryPacking" : "buildLocalPacking") << "({"
           << packingView(global) << ", " << packingStatus(global) << ", "
           << rankArgs(group) << ",\n"
           << "          const_cast<int32_t *>(" << derived << ".cu_seqlens), "
           << (padded ? "const_cast<int32_t *>(" + derived + ".cu_padded)"
                      : std::string("nullptr"))
           << ", " << packingStatus(derived) << "}, stream) != cudaSuccess)\n"
           << "    return GDN_ERROR_CUDA;\n";
      })
      .Case([&](comm::ContinueConvStateOp conv) {
        auto state = tensorType(conv.getState());
        printLaunch(os,
                    "gdn::device::continueConvState<" +
                        getDeviceType(state.getElementType()) + ">({" +
                        packingView(place(conv.getPacking())) + ", " +
                        packingStatus(place(conv.getPacking())) + ", " +
                        rankArgs(group) + ", " +
                        typed(conv.getHalo(), place(conv.getHalo()), true) +
                        ", " + orNull(conv.getInitialState(), true) + ", " +
                        typed(conv.getState(), place(conv.getState()), false) +
                        ", " + std::to_string(state.getDimSize(1)) + ", " +
                        std::to_string(state.getDimSize(2)) + "}, stream)");
      })
      .Case([&](comm::ContinueConvStateGradOp grad) {
        auto state = tensorType(grad.getStateGrad());
        const std::string p = place(grad.getPacking());
        printLaunch(
            os,
            "gdn::device::continueConvStateGrad<" +
                getDeviceType(state.getElementType()) + ", " +
                getDeviceType(tensorType(grad.getHaloGrad()).getElementType()) +
                ">({" + packingView(p) + ", " + packingStatus(p) + ", " +
                rankArgs(group) + ", " +
                typed(grad.getStateGrad(), place(grad.getStateGrad()), true) +
                ", " +
                typed(grad.getHaloGrad(), place(grad.getHaloGrad()), false) +
                ", " + orNull(grad.getInitialStateGrad(), false) + ", " +
                std::to_string(state.getDimSize(1)) + ", " +
                std::to_string(state.getDimSize(2)) + "}, stream)");
      })
      .Case<comm::ContinueStateOp, comm::ContinueStateGradOp>([&](Operation *) {
        auto forward = dyn_cast<comm::ContinueStateOp>(op);
        auto backward = dyn_cast<comm::ContinueStateGradOp>(op);
        Value packing = forward ? forward.getPacking() : backward.getPacking();
        Value perSequence =
            forward ? forward.getState() : backward.getStateGrad();
        const std::string type =
            getDeviceType(tensorType(perSequence).getElementType());
        const std::string p = place(packing);
        os << "  {\n    gdn::device::ContinueStateArgs<" << type
           << "> step = {};\n"
           << "    step.global = " << packingView(p) << ";\n"
           << "    step.status = " << packingStatus(p) << ";\n"
           << "    step.rank = " << getRankVariable(group) << ";\n"
           << "    step.ranks = " << group.getRanks() << ";\n"
           << "    step.entry = " << staticElements(perSequence, 1) << ";\n";
        if (forward)
          os << "    step.incoming = "
             << typed(forward.getIncoming(), place(forward.getIncoming()), true)
             << ";\n    step.initial = "
             << orNull(forward.getInitialState(), true) << ";\n    step.out = "
             << typed(forward.getState(), place(forward.getState()), false)
             << ";\n";
        else
          os << "    step.gradient = true;\n    step.stateGrad = "
             << typed(backward.getStateGrad(), place(backward.getStateGrad()),
                      true)
             << ";\n    step.incomingGrad = "
             << typed(backward.getIncomingGrad(),
                      place(backward.getIncomingGrad()), false)
             << ";\n    step.initialGrad = "
             << orNull(backward.getInitialStateGrad(), false) << ";\n";
        os << "    if (gdn::device::continueState(step, stream) != "
              "cudaSuccess)\n      return GDN_ERROR_CUDA;\n  }\n";
      })
      .Case<comm::SummaryInitialStatesOp, comm::SummaryInitialStatesGradOp>(
          [&](Operation *) {
            auto forward = dyn_cast<comm::SummaryInitialStatesOp>(op);
            auto backward = dyn_cast<comm::SummaryInitialStatesGradOp>(op);
            Value partial =
                forward ? forward.getPartial() : backward.getPartialGrad();
            auto type = tensorType(partial);
            const std::string element = getDeviceType(type.getElementType());
            const std::string p =
                place(forward ? forward.getPacking() : backward.getPacking());
            os << "  {\n    gdn::device::SummaryStatesArgs<" << element
               << "> step = {};\n"
               << "    step.global = " << packingView(p) << ";\n"
               << "    step.status = " << packingStatus(p) << ";\n"
               << "    step.rank = " << getRankVariable(group) << ";\n"
               << "    step.ranks = " << group.getRanks() << ";\n"
               << "    step.valueHeads = " << type.getDimSize(1) << ";\n"
               << "    step.keyDim = " << type.getDimSize(2) << ";\n"
               << "    step.valueDim = " << type.getDimSize(3) << ";\n";
            if (forward)
              os << "    step.initial = "
                 << orNull(forward.getInitialState(), true)
                 << ";\n    step.incoming = "
                 << orNull(forward.getIncoming(), true)
                 << ";\n    step.partial = "
                 << typed(forward.getPartial(), place(forward.getPartial()),
                          false)
                 << ";\n    step.transition = "
                 << typed(forward.getTransition(),
                          place(forward.getTransition()), false)
                 << ";\n";
            else
              os << "    step.gradient = true;\n    step.partialInitialGrad = "
                 << typed(backward.getPartialGrad(),
                          place(backward.getPartialGrad()), true)
                 << ";\n    step.initialGrad = "
                 << typed(backward.getInitialStateGrad(),
                          place(backward.getInitialStateGrad()), false)
                 << ";\n";
            os << "    if (gdn::device::summaryStates(step, stream) != "
                  "cudaSuccess)\n      return GDN_ERROR_CUDA;\n  }\n";
          })
      .Case([&](comm::GatherSequenceStatesOp gather) {
        // Each entry from the rank that ends its sequence: the others'
        // entries zeroed, then summed over the group (exact: one term each).
        const std::string out = place(gather.getResult());
        printOwnedSequences(os, gather.getInput(), place(gather.getPacking()),
                            group, place(gather.getInput()), out);
        os << "  if (int error = gdnrt_all_reduce(context, "
           << getGroupRole(group) << ", " << group.getRanks() << ", &" << out
           << ", &" << out << ", " << staging << "))\n    return error;\n";
      })
      .Case([&](comm::ReduceSequenceStatesOp reduce) {
        const std::string out = place(reduce.getResult());
        os << "  if (int error = gdnrt_all_reduce(context, "
           << getGroupRole(group) << ", " << group.getRanks() << ", &"
           << place(reduce.getInput()) << ", &" << out << ", " << staging
           << "))\n    return error;\n";
        printOwnedSequences(os, reduce.getResult(), place(reduce.getPacking()),
                            group, out, out);
      })
      .Case([&](ConvertLayoutOp convert) {
        comm::GroupAttr cp = getRuntimeCallGroup(convert);
        const bool toZigzag =
            cast<SeqLayoutAttr>(getSequenceLayout(convert.getY().getType()))
                .getKind() == SeqLayoutKind::Zigzag;
        const std::string x = place(convert.getX()), y = place(convert.getY());
        const std::string p = place(convert.getPacking());
        // Every rank's source shard, gathered into the staging; then this
        // rank's target rows picked from it by the offsets.
        os << "  {\n    gdn_tensor_t gathered = " << x << ";\n"
           << "    gathered.data = " << staging << ";\n"
           << "    gathered.shape[0] *= " << cp.getRanks() << ";\n"
           << "    void *gatherStaging = static_cast<char *>(" << staging
           << ") + gdn::alignWorkspace(gdn::tensorBytes(&gathered));\n"
           << "    if (!gdnrt_all_gather_workspace_bytes(&" << x << ", "
           << cp.getRanks() << ", 0))\n      gatherStaging = nullptr;\n"
           << "    if (int error = gdnrt_all_gather(context, "
           << getGroupRole(cp) << ", " << cp.getRanks() << ", &" << x
           << ", &gathered, 0, gatherStaging))\n      return error;\n"
           << "    const gdn::device::ZigzagRowsArgs rows = {" << packingView(p)
           << ", " << packingStatus(p) << ", " << getRankVariable(cp) << ", "
           << cp.getRanks() << ",\n        static_cast<int32_t>(" << y
           << ".shape[0]), " << (toZigzag ? "true" : "false")
           << ", gathered.data, " << y << ".data, " << rowBytes(convert.getY())
           << "};\n"
           << "    if (gdn::device::selectZigzagRows(rows, " << packingStatus(p)
           << ", stream) != cudaSuccess)\n      return GDN_ERROR_CUDA;\n  }\n";
      })
      .Case<arith::ConstantOp, tensor::SplatOp>([&](Operation *) {
        const std::string out = place(op->getResult(0));
        if (isOverwrittenFill(op)) {
          os << "  // every row is written by the insertions that follow, in place\n";
          return;
        }
        os << "  if (cudaMemsetAsync(" << out << ".data, 0, "
           << bytesOf(op->getResult(0), out) << ", stream) != cudaSuccess)\n"
           << "    return GDN_ERROR_CUDA;\n";
      })
      .Case([&](tensor::ExtractSliceOp slice) {
        const std::string out = place(slice.getResult());
        const std::string from = place(slice.getSource());
        if (isSliceView(slice)) {
          os << "  // " << out << ": rows of " << from << ", read in place\n";
          return;
        }
        const int64_t row = rowBytes(slice.getSource());
        os << "  if (cudaMemcpyAsync(" << out << ".data, static_cast<const "
           << "char *>(" << from << ".data) + "
           << slice.getStaticOffsets()[0] * row << ", "
           << slice.getStaticSizes()[0] * row
           << ", cudaMemcpyDeviceToDevice, stream) != cudaSuccess)\n"
           << "    return GDN_ERROR_CUDA;\n";
      })
      .Case([&](tensor::CollapseShapeOp collapse) {
        const std::string out = place(collapse.getResult());
        const std::string from = place(collapse.getSrc());
        if (isReshapeView(collapse)) {
          os << "  // " << out << ": the rows of " << from
             << ", flattened, in place\n";
          return;
        }
        os << "  if (cudaMemcpyAsync(" << out << ".data, " << from << ".data, "
           << bytesOf(collapse.getSrc(), from)
           << ", cudaMemcpyDeviceToDevice, stream) != cudaSuccess)\n"
           << "    return GDN_ERROR_CUDA;\n";
      })
      .Case([&](tensor::InsertSliceOp slice) {
        const std::string out = place(slice.getResult());
        const std::string dest = place(slice.getDest());
        const std::string from = place(slice.getSource());
        const int64_t row = rowBytes(slice.getDest());
        const bool columns = isColumnsSlice(slice, slice.getDestType());
        // The source's rows into the result (a block of columns: each row
        // at its place in the result's rows); in place (InsertChains.h) the
        // destination's buffer is the result's, else the destination is
        // copied first.
        std::string rows =
            columns
                ? "cudaMemcpy2DAsync(static_cast<char *>(" + out + ".data) + " +
                      std::to_string(
                          getColumnsOffsetBytes(slice, slice.getDestType())) +
                      ", " + std::to_string(row) + ", " + from + ".data, " +
                      std::to_string(rowBytes(slice.getSource())) + ", " +
                      std::to_string(rowBytes(slice.getSource())) + ", " +
                      from +
                      ".shape[0], cudaMemcpyDeviceToDevice, stream) != "
                      "cudaSuccess"
                : "cudaMemcpyAsync(static_cast<char *>(" + out + ".data) + " +
                      std::to_string(slice.getStaticOffsets()[0] * row) + ", " +
                      from + ".data, " +
                      std::to_string(slice.getStaticSizes()[0] * row) +
                      ", cudaMemcpyDeviceToDevice, stream) != cudaSuccess";
        if (isWrittenByProducer(slice)) {
          os << "  // " << from << ": " << (columns ? "columns" : "rows")
             << " of " << out << ", written in place by its op\n";
          return;
        }
        if (insertsInPlace(slice))
          os << "  // in place\n  if (" << rows << ")\n";
        else
          os << "  if (cudaMemcpyAsync(" << out << ".data, " << dest << ".data, "
             << bytesOf(slice.getDest(), dest)
             << ", cudaMemcpyDeviceToDevice, stream) != cudaSuccess ||\n      " << rows
             << ")\n";
        os << "    return GDN_ERROR_CUDA;\n";
      })
      .Case([&](arith::AddFOp add) {
        const std::string out = place(add.getResult());
        printLaunch(os, "gdn::device::addTensors<" +
                            getDeviceType(
                                tensorType(add.getResult()).getElementType()) +
                            ">(" + place(add.getLhs()) + ".data, " +
                            place(add.getRhs()) + ".data, " + out + ".data, " +
                            elementsOf(add.getResult(), out) + ", stream)");
      })
      .Case([&](L2NormOp norm) {
        const std::string out = place(norm.getResult());
        auto type = tensorType(norm.getResult());
        printLaunch(os, "gdn::device::l2normRows<" +
                            getDeviceType(type.getElementType()) + ">(" +
                            place(norm.getX()) + ".data, " + out + ".data, " +
                            elementsOf(norm.getResult(), out) + ", " +
                            std::to_string(type.getShape().back()) + ", " +
                            floatLiteral(norm.getEps()) + ", stream)");
      })
      .Case([&](L2NormGradOp grad) {
        const std::string out = place(grad.getXGrad());
        auto type = tensorType(grad.getXGrad());
        printLaunch(os, "gdn::device::l2normRowsGrad<" +
                            getDeviceType(type.getElementType()) + ">(" +
                            place(grad.getYGrad()) + ".data, " +
                            place(grad.getX()) + ".data, " + out + ".data, " +
                            elementsOf(grad.getXGrad(), out) + ", " +
                            std::to_string(type.getShape().back()) + ", " +
                            floatLiteral(grad.getEps()) + ", stream)");
      });
}
