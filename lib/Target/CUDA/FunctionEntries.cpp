//===- FunctionEntries.cpp - whole-function entry points ------------------===//
//
// Every tensor of a function has a place at run time: an argument, a result,
// or a temporary in the caller's workspace, laid out after the packing
// metadata, with the kernels' scratch and the collectives' staging after
// the temporaries. Shapes are C++ expressions of the arguments' shapes, so
// the workspace and the results can be sized before anything runs. The
// entry point checks everything it can (tensors, shape conditions, the
// communicators bound to the context, every kernel's operands) before it
// enqueues anything, then runs the steps in program order on the context's
// stream.
//
//===----------------------------------------------------------------------===//

#include "FunctionEntries.h"
#include "GradientSums.h"
#include "InsertChains.h"
#include "NormRecomputation.h"
#include "RuntimeCalls.h"
#include "SliceViews.h"

#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"
#include "gdn/Dialect/GdnKernel/IR/GdnKernelDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::cuda;

namespace {

/// Where every tensor of the function lives at run time, and its shape.
class FunctionLayout {
public:
  /// A value that lives at an offset into another value's buffer.
  struct View {
    Value value, buffer;
    int64_t offsetBytes;
  };

  explicit FunctionLayout(const FunctionPlan &plan) : plan(plan) {
    Block &body = plan.function.getBody().front();
    for (auto [index, argument] : llvm::enumerate(body.getArguments())) {
      auto type = cast<RankedTensorType>(argument.getType());
      // _check_args holds every argument to its type's static sizes.
      ShapeExprs dims;
      for (int64_t d = 0; d < type.getRank(); ++d)
        dims.push_back(type.isDynamicDim(d)
                           ? "args[" + std::to_string(index) + "].shape[" +
                                 std::to_string(d) + "]"
                           : std::to_string(type.getDimSize(d)));
      shapes[argument] = dims;
      places[argument] = "args[" + std::to_string(index) + "]";
    }
    for (auto [index, result] :
         llvm::enumerate(body.getTerminator()->getOperands()))
      if (!places.count(result))
        places[result] = "results[" + std::to_string(index) + "]";
    unsigned packingIndex = 0;
    auto addPacking = [&](Value packing) {
      std::string name = "p" + std::to_string(packingIndex++);
      packings[packing] = name;
      places[packing] = name;
    };
    for (PackingOp packing : body.getOps<PackingOp>())
      addPacking(packing.getPacking());
    for (Operation *op : plan.steps)
      if (isDerivedPacking(op))
        addPacking(op->getResult(0));
    for (const KernelContext &k : plan.kernels)
      kernelOf[k.op] = &k;
    // Sizes that shape helpers give: a tensor's dimension, a constant.
    auto indexOf = [&](Value index) -> std::string {
      if (auto dim = index.getDefiningOp<tensor::DimOp>())
        if (std::optional<int64_t> d = dim.getConstantIndex())
          if (shapes.count(dim.getSource()))
            return shapes[dim.getSource()][*d];
      if (auto constant = index.getDefiningOp<arith::ConstantIndexOp>())
        return std::to_string(constant.value());
      return "0";
    };
    auto seqsOf = [&](Value packing) { return seqsExpr(packing); };
    const ShapeContext context{seqsOf, indexOf};
    for (Operation *op : plan.steps) {
      std::vector<ShapeExprs> operandShapes;
      for (Value operand : getKernelTensorOperands(op))
        operandShapes.push_back(shapes[operand]);
      std::vector<ShapeExprs> resultShapes;
      if (const KernelContext *k = kernelOf.lookup(op)) {
        if (usesScratch(op)) {
          scratch.push_back(k);
          scratchRows[k] = operandShapes.front()[0];
        }
        std::string seqs = "0";
        for (Value operand : op->getOperands())
          if (isa<PackingType>(operand.getType())) {
            seqs = seqsExpr(operand);
            tokensOf.try_emplace(operand, operandShapes.front()[0]);
          }
        resultShapes = getResultShapes(op, operandShapes, seqs);
      } else {
        RuntimeCallShapes call =
            getRuntimeCallShapes(op, operandShapes, context);
        for (std::string &condition : call.conditions)
          if (!llvm::is_contained(conditions, condition))
            conditions.push_back(std::move(condition));
        resultShapes = std::move(call.results);
        if (!getStagingOperands(op).empty())
          staging.push_back(op);
        if (comm::GroupAttr group = getRuntimeCallGroup(op))
          groups.insert(group);
        // A layout conversion (only zigzag ones lower) reads the global
        // packing of the shard it converts: P times its rows.
        if (auto convert = dyn_cast<ConvertLayoutOp>(op))
          tokensOf.try_emplace(
              convert.getPacking(),
              "(" + operandShapes.front()[0] + " * " +
                  std::to_string(getLayoutRanks(convert.getX().getType())) +
                  ")");
      }
      for (auto [result, dims] : llvm::zip(op->getResults(), resultShapes)) {
        shapes[result] = dims;
        if (places.count(result))
          continue;
        // A slice read in place of its source, and a part that its op
        // writes straight into an insertion chain's rows, take no
        // workspace of their own (SliceViews.h, InsertChains.h).
        if (std::optional<View> view = getView(result)) {
          places[result] = "view" + std::to_string(views.size());
          views.push_back(*view);
          continue;
        }
        // The terms of a folded sum of input gradients are written where the
        // sum lives (GradientSums.h), and a zero fill and the insertions that
        // continue it where the last insertion lives (InsertChains.h); the
        // first gives it its place.
        Value storage = getGradientSumStorage(getInsertChainStorage(result));
        if (!places.count(storage)) {
          places[storage] = "temp" + std::to_string(temps.size());
          temps.push_back(storage);
          shapes[storage] = dims;
        }
        places[result] = places[storage];
      }
    }
    // Chunkwise CP: no kernel reads the global packing, only its shard's
    // packings, whose rows are a 1/P share of the global buffer.
    for (auto &[packing, name] : packings)
      if (Operation *op = packing.getDefiningOp(); op && isDerivedPacking(op)) {
        Value global = op->getOperand(0);
        const int64_t ranks =
            op->getAttrOfType<comm::GroupAttr>("group").getRanks();
        auto it = tokensOf.find(packing);
        if (it != tokensOf.end() && !tokensOf.count(global) &&
            !cast<PackingType>(global.getType()).hasStaticTokens())
          tokensOf[global] =
              "(" + it->second + " * " + std::to_string(ranks) + ")";
      }
    for (auto &[packing, name] : packings)
      if (Operation *op = packing.getDefiningOp(); op && isDerivedPacking(op))
        if (!tokensOf.count(packing)) {
          const int64_t ranks =
              op->getAttrOfType<comm::GroupAttr>("group").getRanks();
          tokensOf[packing] = "(" + tokensExpr(op->getOperand(0)) + " / " +
                              std::to_string(ranks) + ")";
        }
  }

  /// Prints a static function that fills `offsets` with each workspace
  /// slot's start and, last, the total; returns the total.
  void printLayoutFunction(llvm::raw_ostream &os) const {
    os << "static size_t " << plan.prefix
       << "_layout(const gdn_tensor_t *args, size_t *offsets) {\n"
       << "  size_t bytes = 0;\n";
    unsigned slot = 0;
    for (auto &[packing, name] : packings) {
      os << "  offsets[" << slot++ << "] = bytes; // packing " << name << "\n"
         << "  bytes += gdn::alignWorkspace(";
      if (Operation *op = packing.getDefiningOp(); op && isDerivedPacking(op))
        os << getDerivedPackingBytes(op, seqsExpr(packing));
      else
        os << "gdn::device::PackingWorkspace::bytes()";
      os << ");\n";
    }
    for (Value temp : temps) {
      auto type = cast<RankedTensorType>(temp.getType());
      os << "  offsets[" << slot++ << "] = bytes; // " << places.lookup(temp)
         << "\n  bytes += gdn::alignWorkspace(sizeof("
         << getDeviceType(type.getElementType()) << ")";
      for (const std::string &dim : shapes.lookup(temp))
        os << " * static_cast<size_t>(" << dim << ")";
      os << ");\n";
    }
    for (const KernelContext *k : scratch) {
      // A kernel without a packing (the gated RMSNorm backward) sizes its
      // scratch from its rows, passed as the counts' tokens.
      Value packing = packingOf(*k);
      os << "  offsets[" << slot++ << "] = bytes; // scratch of "
         << k->entryName << "\n"
         << "  {\n    const gdn_packing_t counts = {nullptr, nullptr, "
         << "static_cast<int32_t>(" << (packing ? seqsExpr(packing) : "0")
         << "), static_cast<int32_t>("
         << (packing ? tokensExpr(packing) : scratchRows.lookup(k))
         << "), nullptr};\n    bytes += gdn::alignWorkspace(" << k->entryName
         << "_scratch_bytes(&counts));\n  }\n";
    }
    // gdnrt sizes the staging of its collectives from the tensors' shapes.
    for (Operation *op : staging) {
      os << "  offsets[" << slot++ << "] = bytes; // staging of "
         << op->getName() << " at " << op->getLoc() << "\n  {\n";
      std::vector<std::string> tensors;
      for (Value operand : getStagingOperands(op)) {
        auto type = cast<RankedTensorType>(operand.getType());
        tensors.push_back("tensor" + std::to_string(tensors.size()));
        os << "    const gdn_tensor_t " << tensors.back()
           << " = gdn::shapeOnlyTensor(" << getAbiDtype(type.getElementType())
           << ", {";
        llvm::interleaveComma(shapes.lookup(operand), os);
        os << "});\n";
      }
      os << "    bytes += gdn::alignWorkspace(" << getStagingQuery(op, tensors)
         << ");\n  }\n";
    }
    os << "  offsets[" << slot << "] = bytes;\n"
       << "  return bytes;\n}\n\n";
  }

  /// The packing a kernel op reads.
  static Value packingOf(const KernelContext &k) {
    for (Value operand : k.op->getOperands())
      if (isa<PackingType>(operand.getType()))
        return operand;
    return {};
  }

  /// The packing's sequence count: the length of its cu_seqlens minus one
  /// (a shard's packing has its global packing's sequences; the summary's
  /// two).
  std::string seqsExpr(Value packing) const {
    if (isa_and_nonnull<comm::SummaryPackingOp>(packing.getDefiningOp()))
      return "2";
    if (auto local = packing.getDefiningOp<comm::LocalPackingOp>())
      return seqsExpr(local.getPacking());
    auto op = packing.getDefiningOp<PackingOp>();
    return "(" + shapes.lookup(op.getCuSeqlens())[0] + " - 1)";
  }

  /// Where `value` lives in another value's buffer, if it does.
  static std::optional<View> getView(Value value) {
    if (auto slice = value.getDefiningOp<tensor::ExtractSliceOp>();
        slice && isSliceView(slice))
      return View{value, slice.getSource(),
                  getLeadingRowsOffsetBytes(slice, slice.getSourceType())};
    if (tensor::InsertSliceOp insert = getInsertionOf(value);
        insert && isWrittenByProducer(insert))
      return View{
          value, getInsertChainStorage(insert.getResult()),
          isColumnsSlice(insert, insert.getDestType())
              ? getColumnsOffsetBytes(insert, insert.getDestType())
              : getLeadingRowsOffsetBytes(insert, insert.getDestType())};
    // Flattened rows, where they are a view (SliceViews.h).
    if (auto collapse = value.getDefiningOp<tensor::CollapseShapeOp>();
        collapse && isReshapeView(collapse))
      return View{value, collapse.getSrc(), 0};
    return std::nullopt;
  }

  size_t getNumSlots() const {
    return packings.size() + temps.size() + scratch.size() + staging.size();
  }

  std::string tokensExpr(Value packing) const {
    auto type = cast<PackingType>(packing.getType());
    if (type.hasStaticTokens())
      return std::to_string(type.getTokens());
    auto it = tokensOf.find(packing);
    return it == tokensOf.end() ? std::string("0") : it->second;
  }

  const FunctionPlan &plan;
  llvm::MapVector<Value, std::string> packings;
  llvm::DenseMap<Value, std::string> tokensOf;
  llvm::DenseMap<Value, ShapeExprs> shapes;
  llvm::DenseMap<Value, std::string> places;
  llvm::DenseMap<Operation *, const KernelContext *> kernelOf;
  std::vector<Value> temps;
  /// Values that live at an offset into another's buffer, in program
  /// order: each one's buffer has its place before it.
  std::vector<View> views;
  /// Kernels that take scratch, in the order of their workspace slots.
  std::vector<const KernelContext *> scratch;
  /// The rows (first dimension of the first operand) of each of them.
  llvm::DenseMap<const KernelContext *, std::string> scratchRows;
  /// Runtime calls that take staging, in the order of their slots.
  std::vector<Operation *> staging;
  /// What the arguments' shapes must satisfy beyond their types.
  std::vector<std::string> conditions;
  /// The process groups the steps run on.
  llvm::SetVector<comm::GroupAttr> groups;
};

//===----------------------------------------------------------------------===//
// Roles
//===----------------------------------------------------------------------===//

/// Ops whose result indexes what their input indexes (tokens, sequences or
/// parameter rows): collectives and permutations move data, not meaning.
bool keepsRole(Operation *op) {
  return isa<RegroupSectionsOp, arith::AddFOp, L2NormOp, L2NormGradOp,
             comm::LocalShardOp, comm::AllGatherOp, comm::ReduceScatterOp, comm::AllToAllOp,
             comm::AllReduceOp, comm::LocalUnshardOp,
             comm::ReplicatedToPartialOp>(op);
}

/// The role of a value the function takes, from the first use that tells.
std::optional<StringRef> roleOfUses(Value value) {
  for (OpOperand &use : value.getUses()) {
    Operation *owner = use.getOwner();
    if (isa<PackingOp>(owner))
      return use.getOperandNumber() == 0 ? "GDN_ROLE_CU_SEQLENS"
                                         : "GDN_ROLE_CU_PADDED";
    if (auto prologue = dyn_cast<kernel::PrologueOp>(owner)) {
      if (value == prologue.getMixedQkv() || value == prologue.getA() ||
          value == prologue.getB())
        return StringRef("GDN_ROLE_TOKENS");
      if (value == prologue.getConvInitialState())
        return StringRef("GDN_ROLE_PER_SEQUENCE");
      return StringRef("GDN_ROLE_PARAMETER");
    }
    if (auto norm = dyn_cast<kernel::GatedRMSNormOp>(owner))
      return value == norm.getWeight() ? "GDN_ROLE_PARAMETER"
                                       : "GDN_ROLE_TOKENS";
    if (auto norm = dyn_cast<kernel::GatedRMSNormGradOp>(owner))
      return value == norm.getWeight() ? "GDN_ROLE_PARAMETER"
                                       : "GDN_ROLE_TOKENS";
    if (auto grad = dyn_cast<kernel::PrologueGradOp>(owner)) {
      if (value == grad.getConvInitialState() ||
          value == grad.getConvFinalStateGrad())
        return StringRef("GDN_ROLE_PER_SEQUENCE");
      if (value == grad.getConvWeight() || value == grad.getConvBias() ||
          value == grad.getALog() || value == grad.getDtBias())
        return StringRef("GDN_ROLE_PARAMETER");
      return StringRef("GDN_ROLE_TOKENS");
    }
    if (auto rule = dyn_cast<kernel::DeltaRuleOp>(owner))
      return value == rule.getInitialState() ? "GDN_ROLE_PER_SEQUENCE"
                                             : "GDN_ROLE_TOKENS";
    if (auto grad = dyn_cast<kernel::DeltaRuleGradOp>(owner))
      return value == grad.getInitialState() ||
                     value == grad.getFinalStateGrad()
                 ? "GDN_ROLE_PER_SEQUENCE"
                 : "GDN_ROLE_TOKENS";
    if (auto linear = dyn_cast<LinearOp>(owner))
      return value == linear.getWeight() ? "GDN_ROLE_PARAMETER"
                                         : "GDN_ROLE_TOKENS";
    if (auto grad = dyn_cast<LinearGradOp>(owner))
      return value == grad.getWeight() ? "GDN_ROLE_PARAMETER"
                                       : "GDN_ROLE_TOKENS";
    if (isa<SplitQkvzOp, MergeQkvzOp, MergeQkvOp, comm::HaloExchangeOp,
            ConvertLayoutOp>(owner))
      return StringRef("GDN_ROLE_TOKENS");
    // Chunkwise CP's per-rank ops take per-sequence states (and a halo or
    // an incoming state, which no argument is).
    if (isa<comm::ContinueConvStateOp, comm::ContinueStateOp,
            comm::SummaryInitialStatesOp, comm::GatherSequenceStatesOp,
            comm::ReduceSequenceStatesOp, comm::ContinueStateGradOp,
            comm::ContinueConvStateGradOp>(owner))
      return StringRef("GDN_ROLE_PER_SEQUENCE");
    if (keepsRole(owner))
      if (std::optional<StringRef> role = roleOfUses(owner->getResult(0)))
        return role;
  }
  return std::nullopt;
}

std::string argumentRole(Value argument) {
  if (std::optional<StringRef> role = roleOfUses(argument))
    return role->str();
  // A token or head shard is an activation even where no op tells.
  return getSequenceLayout(argument.getType()) ? "GDN_ROLE_TOKENS"
                                               : "GDN_ROLE_PARAMETER";
}

/// The role of a value the function returns, from where it comes from.
std::string resultRole(Value value) {
  if (isa<BlockArgument>(value))
    return argumentRole(value);
  Operation *producer = value.getDefiningOp();
  if (keepsRole(producer))
    return resultRole(producer->getOperand(0));
  // A slice has its source's role; an insertion the role of what it
  // inserts (gdn-split-projections stacks weight gradients into zeros).
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(producer))
    return resultRole(slice.getSource());
  if (auto slice = dyn_cast<tensor::InsertSliceOp>(producer))
    return resultRole(slice.getSource());
  if (auto prologue = dyn_cast<kernel::PrologueOp>(producer))
    if (value == prologue.getConvFinalState())
      return "GDN_ROLE_PER_SEQUENCE";
  if (auto rule = dyn_cast<kernel::DeltaRuleOp>(producer))
    if (value == rule.getFinalState())
      return "GDN_ROLE_PER_SEQUENCE";
  if (auto grad = dyn_cast<kernel::DeltaRuleGradOp>(producer))
    if (value == grad.getInitialStateGrad())
      return "GDN_ROLE_PER_SEQUENCE";
  // Parameter gradients have their parameters' shapes.
  if (auto grad = dyn_cast<kernel::PrologueGradOp>(producer)) {
    if (value == grad.getConvInitialStateGrad())
      return "GDN_ROLE_PER_SEQUENCE";
    if (value == grad.getConvWeightGrad() || value == grad.getConvBiasGrad() ||
        value == grad.getALogGrad() || value == grad.getDtBiasGrad())
      return "GDN_ROLE_PARAMETER";
  }
  if (auto grad = dyn_cast<kernel::GatedRMSNormGradOp>(producer))
    if (value == grad.getWeightGrad())
      return "GDN_ROLE_PARAMETER";
  if (auto grad = dyn_cast<LinearGradOp>(producer))
    if (value == grad.getWeightGrad())
      return "GDN_ROLE_PARAMETER";
  if (isa<comm::GatherSequenceStatesOp, comm::ReduceSequenceStatesOp,
          comm::ContinueConvStateOp, comm::ContinueStateOp,
          comm::SummaryInitialStatesGradOp>(producer))
    return "GDN_ROLE_PER_SEQUENCE";
  if (auto grad = dyn_cast<comm::ContinueStateGradOp>(producer))
    return value == grad.getInitialStateGrad() ? "GDN_ROLE_PER_SEQUENCE"
                                               : "GDN_ROLE_PARAMETER";
  if (auto grad = dyn_cast<comm::ContinueConvStateGradOp>(producer))
    return value == grad.getInitialStateGrad() ? "GDN_ROLE_PER_SEQUENCE"
                                               : "GDN_ROLE_PARAMETER";
  // A halo's rows and an incoming state are whole tensors of one rank, not
  // rows of the pack: tools must not slice them by sequence.
  if (isa<comm::HaloExchangeOp, comm::StateExchangeOp,
          comm::ReverseStateExchangeOp>(producer))
    return "GDN_ROLE_PARAMETER";
  // A returned halo lands in the shard's cotangent, rows of the pack.
  if (auto halo = dyn_cast<comm::ReturnHaloOp>(producer))
    return resultRole(halo.getDest());
  return "GDN_ROLE_TOKENS";
}

void printSignature(const FunctionPlan &plan, const FunctionLayout &layout,
                    llvm::raw_ostream &os) {
  FunctionType type = plan.function.getFunctionType();
  Block &body = plan.function.getBody().front();
  auto printArray = [&](StringRef ctype, StringRef suffix,
                        ArrayRef<std::string> values) {
    os << "static const " << ctype << " " << plan.prefix << "_" << suffix
       << "[] = {";
    llvm::interleaveComma(values, os);
    if (values.empty())
      os << "(" << ctype << ")0";
    os << "};\n";
  };
  std::vector<std::string> argDtypes, argRanks, argRoles, resDtypes, resRanks,
      resRoles;
  for (auto [argument, t] : llvm::zip(body.getArguments(), type.getInputs())) {
    auto tensor = cast<RankedTensorType>(t);
    argDtypes.push_back(getAbiDtype(tensor.getElementType()));
    argRanks.push_back(std::to_string(tensor.getRank()));
    argRoles.push_back(argumentRole(argument));
  }
  for (auto [value, t] :
       llvm::zip(body.getTerminator()->getOperands(), type.getResults())) {
    auto tensor = cast<RankedTensorType>(t);
    resDtypes.push_back(getAbiDtype(tensor.getElementType()));
    resRanks.push_back(std::to_string(tensor.getRank()));
    resRoles.push_back(resultRole(value));
  }
  printArray("gdn_dtype_t", "arg_dtypes", argDtypes);
  printArray("int32_t", "arg_ranks", argRanks);
  printArray("gdn_role_t", "arg_roles", argRoles);
  printArray("gdn_dtype_t", "result_dtypes", resDtypes);
  printArray("int32_t", "result_ranks", resRanks);
  printArray("gdn_role_t", "result_roles", resRoles);
  int64_t groupRanks[2] = {0, 0}; // SP, CP
  for (comm::GroupAttr group : layout.groups)
    groupRanks[group.getKind() == comm::GroupKind::CP] = group.getRanks();
  os << "extern \"C\" const gdn_signature_t " << plan.prefix
     << "_signature = {\"" << plan.function.getName() << "\", "
     << type.getNumInputs() << ", " << type.getNumResults() << ", "
     << plan.prefix << "_arg_dtypes, " << plan.prefix << "_arg_ranks, "
     << plan.prefix << "_arg_roles, " << plan.prefix << "_result_dtypes, "
     << plan.prefix << "_result_ranks, " << plan.prefix << "_result_roles, "
     << groupRanks[0] << ", " << groupRanks[1] << "};\n\n";
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

void printCheckArgs(const FunctionPlan &plan, const FunctionLayout &layout,
                    llvm::raw_ostream &os) {
  Block &body = plan.function.getBody().front();
  // Argument checks: dtype and rank, and static sizes.
  os << "static int " << plan.prefix
     << "_check_args(const gdn_tensor_t *args) {\n"
     << "  if (!args)\n    return GDN_ERROR_INVALID_ARGUMENT;\n";
  for (auto [index, argument] : llvm::enumerate(body.getArguments())) {
    auto type = cast<RankedTensorType>(argument.getType());
    os << "  if (!gdn::checkTensor(args[" << index << "], "
       << getAbiDtype(type.getElementType()) << ", {";
    for (int64_t d = 0; d < type.getRank(); ++d)
      os << (d ? ", " : "")
         << (type.isDynamicDim(d) ? std::string("gdn::kAnySize")
                                  : std::to_string(type.getDimSize(d)));
    os << "}))\n    return GDN_ERROR_INVALID_ARGUMENT;\n";
  }
  // Packings: at least one offset, cu_padded as long as cu_seqlens, and
  // counts that fit the kernels' int32 offsets.
  for (auto &[value, name] : layout.packings) {
    auto packing = dyn_cast<PackingOp>(value.getDefiningOp());
    if (!packing)
      continue; // computed on the device from one of these
    std::string cu = layout.places.lookup(packing.getCuSeqlens());
    os << "  if (" << cu << ".shape[0] < 1 || " << cu
       << ".shape[0] > INT32_MAX)\n    return GDN_ERROR_INVALID_ARGUMENT;\n";
    if (packing.getCuPadded())
      os << "  if (" << layout.places.lookup(packing.getCuPadded())
         << ".shape[0] != " << cu
         << ".shape[0])\n    return GDN_ERROR_INVALID_ARGUMENT;\n";
    os << "  if (static_cast<int64_t>(" << layout.tokensExpr(value)
       << ") > INT32_MAX)\n    return GDN_ERROR_INVALID_ARGUMENT;\n";
  }
  // What the runtime calls need of dynamic sizes (a token count that a
  // reduce_scatter divides), so that none fails halfway through the steps.
  for (const std::string &condition : layout.conditions)
    os << "  if (!(" << condition
       << "))\n    return GDN_ERROR_INVALID_ARGUMENT;\n";
  os << "  return GDN_SUCCESS;\n}\n\n";
}

void printQueries(const FunctionPlan &plan, const FunctionLayout &layout,
                  llvm::raw_ostream &os) {
  Block &body = plan.function.getBody().front();
  os << "extern \"C\" size_t " << plan.prefix
     << "_workspace_bytes(const gdn_tensor_t *args) {\n"
     << "  size_t offsets[" << layout.getNumSlots() + 1 << "];\n"
     << "  return " << plan.prefix << "_check_args(args) == GDN_SUCCESS ? "
     << plan.prefix << "_layout(args, offsets) : 0;\n}\n\n";

  os << "extern \"C\" int " << plan.prefix
     << "_result_shapes(const gdn_tensor_t *args, gdn_tensor_t *results) {\n"
     << "  if (int error = " << plan.prefix << "_check_args(args))\n"
     << "    return error;\n"
     << "  if (!results)\n    return GDN_ERROR_INVALID_ARGUMENT;\n";
  for (auto [index, value] :
       llvm::enumerate(body.getTerminator()->getOperands())) {
    auto type = cast<RankedTensorType>(value.getType());
    os << "  results[" << index << "].rank = " << type.getRank() << ";\n"
       << "  results[" << index
       << "].dtype = " << getAbiDtype(type.getElementType()) << ";\n";
    for (auto [d, dim] : llvm::enumerate(layout.shapes.lookup(value)))
      os << "  results[" << index << "].shape[" << d << "] = " << dim << ";\n";
  }
  os << "  return GDN_SUCCESS;\n}\n\n";

  // The same sizes as text, for callers that must know result shapes
  // before there are sizes to call _result_shapes with (a tracer's symbolic
  // token count: gdn_torch under torch.compile).
  os << "extern \"C\" const char *" << plan.prefix
     << "_result_dims(void) {\n  return \"";
  for (auto [index, value] :
       llvm::enumerate(body.getTerminator()->getOperands())) {
    os << (index ? ";" : "");
    llvm::interleave(layout.shapes.lookup(value), os, ",");
  }
  os << "\";\n}\n\n";
}

/// Prints the whole-function entry point: checks, then the steps.
void printRun(const FunctionPlan &plan, const FunctionLayout &layout,
              llvm::raw_ostream &os) {
  Block &body = plan.function.getBody().front();
  const size_t slots = layout.getNumSlots();
  os << "extern \"C\" int " << plan.prefix
     << "(const gdn_tensor_t *args, gdn_tensor_t *results, void *workspace,\n"
     << "    gdnrt_context_t *context) {\n"
     << "  if (int error = " << plan.prefix << "_check_args(args))\n"
     << "    return error;\n"
     << "  size_t offsets[" << slots + 1 << "];\n"
     << "  const size_t bytes = " << plan.prefix
     << "_layout(args, offsets);\n"
     // A function that needs no workspace (for these shapes) accepts none.
     << "  if (!results || !context || (bytes && !workspace))\n"
     << "    return GDN_ERROR_INVALID_ARGUMENT;\n";
  // Kernels, packing metadata and copies enqueue on the context's stream;
  // gdnrt calls take the context itself.
  const bool usesStream =
      !layout.packings.empty() || llvm::any_of(plan.steps, [&](Operation *op) {
        return layout.kernelOf.count(op) || !getStridedCopies(op).empty() ||
               isDeviceCall(op);
      });
  if (usesStream)
    os << "  cudaStream_t stream = gdnrt_context_stream(context);\n";
  if (slots > 0)
    os << "  char *base = static_cast<char *>(workspace);\n";
  unsigned slot = 0;
  for (auto &[value, name] : layout.packings) {
    auto packing = dyn_cast<PackingOp>(value.getDefiningOp());
    if (!packing) {
      // A shard's packing: offsets in its workspace, after the status.
      const bool padded = cast<PackingType>(value.getType()).getPadded();
      const std::string at = "base + offsets[" + std::to_string(slot++) + "]";
      const std::string seqs = layout.seqsExpr(value);
      os << "  gdn_packing_t " << name
         << " = {gdn::device::DerivedPackingWorkspace::cuSeqlens(" << at
         << "), "
         << (padded ? "gdn::device::DerivedPackingWorkspace::cuPadded(" + at +
                          ", " + seqs + ")"
                    : std::string("nullptr"))
         << ", static_cast<int32_t>(" << seqs << "), static_cast<int32_t>("
         << layout.tokensExpr(value) << "), " << at << "};\n";
      continue;
    }
    std::string cu = layout.places.lookup(packing.getCuSeqlens());
    os << "  gdn_packing_t " << name << " = {static_cast<const int32_t *>("
       << cu << ".data), ";
    if (packing.getCuPadded())
      os << "static_cast<const int32_t *>("
         << layout.places.lookup(packing.getCuPadded()) << ".data), ";
    else
      os << "nullptr, ";
    os << "static_cast<int32_t>(" << cu
       << ".shape[0] - 1), static_cast<int32_t>(" << layout.tokensExpr(value)
       << "), base + offsets[" << slot++ << "]};\n";
  }
  for (Value temp : layout.temps) {
    auto type = cast<RankedTensorType>(temp.getType());
    std::string name = layout.places.lookup(temp);
    os << "  gdn_tensor_t " << name << " = {base + offsets[" << slot++
       << "], {";
    llvm::interleaveComma(layout.shapes.lookup(temp), os);
    os << "}, " << type.getRank() << ", " << getAbiDtype(type.getElementType())
       << "};\n";
  }
  for (const FunctionLayout::View &view : layout.views) {
    auto type = cast<RankedTensorType>(view.value.getType());
    // The flattened rows of a part written in place: only an insertion
    // that copies nothing names them.
    os << (view.value.getDefiningOp<tensor::CollapseShapeOp>()
               ? "  [[maybe_unused]] gdn_tensor_t "
               : "  gdn_tensor_t ")
       << layout.places.lookup(view.value) << " = {static_cast<char *>("
       << layout.places.lookup(view.buffer) << ".data) + " << view.offsetBytes
       << ", {";
    llvm::interleaveComma(layout.shapes.lookup(view.value), os);
    os << "}, " << type.getRank() << ", " << getAbiDtype(type.getElementType())
       << "};\n";
  }
  llvm::DenseMap<const KernelContext *, std::string> scratchOf;
  for (const KernelContext *k : layout.scratch) {
    std::string name = "scratch" + std::to_string(scratchOf.size());
    os << "  void *" << name << " = base + offsets[" << slot++ << "];\n";
    scratchOf[k] = name;
  }
  // gdnrt takes a null staging pointer where it asked for no bytes.
  llvm::DenseMap<Operation *, std::string> stagingOf;
  for (Operation *op : layout.staging) {
    std::string name = "staging" + std::to_string(stagingOf.size());
    os << "  void *" << name << " = offsets[" << slot + 1 << "] > offsets["
       << slot << "] ? base + offsets[" << slot << "] : nullptr;\n";
    ++slot;
    stagingOf[op] = name;
  }
  for (auto [index, value] :
       llvm::enumerate(body.getTerminator()->getOperands())) {
    // The caller allocated results from _result_shapes; make sure it did.
    auto type = cast<RankedTensorType>(value.getType());
    os << "  if (!gdn::checkTensor(results[" << index << "], "
       << getAbiDtype(type.getElementType()) << ", {";
    llvm::interleaveComma(layout.shapes.lookup(value), os);
    os << "}))\n    return GDN_ERROR_INVALID_ARGUMENT;\n";
  }
  // A collective fails on a group without a communicator of the compiled
  // size; asking first keeps the steps before it from running.
  // This rank's place in each group, for the per-rank steps.
  for (comm::GroupAttr group : layout.groups)
    os << "  [[maybe_unused]] int " << getRankVariable(group) << " = 0;\n"
       << "  if (int error = gdnrt_group_rank(context, " << getGroupRole(group)
       << ", " << group.getRanks() << ", &" << getRankVariable(group)
       << "))\n    return error;\n";

  // Every kernel's tensors are checked before anything is enqueued, so an
  // error leaves the results untouched.
  auto printKernelCall = [&](const KernelContext &k, bool launch) {
    os << "  {\n    const gdn_tensor_t operands[] = {";
    llvm::interleaveComma(getKernelTensorOperands(k.op), os,
                          [&](Value v) { os << layout.places.lookup(v); });
    os << "};\n    const gdn_tensor_t outputs[] = {";
    SmallVector<Value> outputs(k.op->getResults());
    // A norm backward that also writes the recomputed norm's output
    // (NormRecomputation.h) takes its buffer last.
    if (auto grad = dyn_cast<kernel::GatedRMSNormGradOp>(k.op))
      if (kernel::GatedRMSNormOp norm = getFoldedRecomputation(grad))
        outputs.push_back(norm.getY());
    llvm::interleaveComma(outputs, os,
                          [&](Value v) { os << layout.places.lookup(v); });
    os << "};\n    if (int error = " << k.entryName
       << (launch ? "" : "_validate") << "(operands, outputs";
    for (Value operand : k.op->getOperands())
      if (layout.packings.count(operand))
        os << ", &" << layout.packings.lookup(operand);
    if (usesScratch(k.op))
      os << ", " << scratchOf.lookup(&k);
    os << (launch ? ", stream" : "") << "))\n      return error;\n  }\n";
  };
  // A recomputed norm that its backward writes (NormRecomputation.h) does
  // not run: nothing to check.
  auto runs = [](const KernelContext &k) {
    auto norm = dyn_cast<kernel::GatedRMSNormOp>(k.op);
    return !norm || !getFoldingBackward(norm);
  };
  for (const KernelContext &k : plan.kernels)
    if (runs(k))
      printKernelCall(k, /*launch=*/false);
  // The packing's first consumer validates the offsets and writes the status
  // record that later kernels read: the prologue kernel and its backward do
  // both themselves (in every block, docs/codegen.md), which saves a launch
  // in front of them;
  // before any other first consumer, a one-block validation kernel runs.
  auto firstConsumer = [&](Value packing) -> Operation * {
    for (Operation *op : plan.steps)
      if (llvm::is_contained(op->getOperands(), packing))
        return op;
    return nullptr;
  };
  for (auto &[value, name] : layout.packings) {
    if (!isa_and_nonnull<PackingOp>(value.getDefiningOp()))
      continue; // built by its own step, from a validated packing
    if (Operation *first = firstConsumer(value);
        first && isa<kernel::PrologueOp, kernel::PrologueGradOp>(first)) {
      os << "  // " << name << ": validated by its first consumer, "
         << layout.kernelOf.lookup(first)->entryName << "\n";
      continue;
    }
    os << "  if (gdn::device::buildPackingMetadata({" << name << ".cu_seqlens, "
       << name << ".cu_padded, " << name << ".num_seqs, " << name
       << ".buffer_tokens}, gdn::device::PackingWorkspace::carve(" << name
       << ".workspace), stream) != cudaSuccess)\n"
       << "    return GDN_ERROR_CUDA;\n";
  }
  auto place = [&](Value value) { return layout.places.lookup(value); };
  for (Operation *op : plan.steps) {
    const KernelContext *k = layout.kernelOf.lookup(op);
    if (k && !runs(*k)) {
      os << "  // " << k->entryName
         << " does not run: the norm backward below writes its output\n";
      continue;
    }
    if (k)
      printKernelCall(*k, /*launch=*/true);
    else
      printRuntimeCall(op, place, stagingOf.lookup(op), os);
    printWeightGradientAfter(op, place, os);
  }
  os << "  return GDN_SUCCESS;\n}\n\n";
}

void printCheck(const FunctionPlan &plan, const FunctionLayout &layout,
                llvm::raw_ostream &os) {
  os << "extern \"C\" int " << plan.prefix
     << "_check(const gdn_tensor_t *args, const void *workspace,\n"
     << "    gdnrt_context_t *context, char *message, size_t size) {\n"
     << "  size_t offsets[" << layout.getNumSlots() + 1 << "];\n"
     << "  if (!context || " << plan.prefix << "_check_args(args))\n"
     << "    return GDN_ERROR_INVALID_ARGUMENT;\n"
     << "  if (" << plan.prefix << "_layout(args, offsets) && !workspace)\n"
     << "    return GDN_ERROR_INVALID_ARGUMENT;\n"
     << "  cudaStream_t stream = gdnrt_context_stream(context);\n";
  // A dead peer would leave the collectives' kernels waiting forever: wait
  // through each communicator's watchdog (its timeout) before synchronising.
  llvm::SmallSetVector<StringRef, 2> roles;
  plan.function.walk([&](Operation *op) {
    if (comm::GroupAttr group = getRuntimeCallGroup(op))
      roles.insert(group.getKind() == comm::GroupKind::CP ? "GDNRT_GROUP_CP"
                                                          : "GDNRT_GROUP_SP");
  });
  for (StringRef role : roles)
    os << "  if (gdnrt_comm_t *comm = gdnrt_context_comm(context, " << role
       << "))\n"
       << "    if (int error = gdnrt_comm_wait(comm, context))\n"
       << "      return error;\n";
  for (unsigned slot = 0; slot < layout.packings.size(); ++slot)
    os << "  if (int error = gdn::device::describePackingStatus(\n"
       << "          reinterpret_cast<const gdn_status_t *>(static_cast<const "
          "char *>(workspace) + offsets["
       << slot << "]),\n          stream, message, size))\n"
       << "    return error;\n";
  if (layout.packings.empty())
    os << "  if (cudaStreamSynchronize(stream) != cudaSuccess)\n"
       << "    return GDN_ERROR_CUDA;\n";
  os << "  return GDN_SUCCESS;\n}\n\n";
}

} // namespace

void mlir::gdn::cuda::printFunctionEntries(const FunctionPlan &plan,
                                           llvm::raw_ostream &os) {
  FunctionLayout layout(plan);
  os << "//===--- @" << plan.function.getName() << ": whole-function entry "
     << "points ---===//\n\n";
  printSignature(plan, layout, os);
  layout.printLayoutFunction(os);
  printCheckArgs(plan, layout, os);
  printQueries(plan, layout, os);
  printRun(plan, layout, os);
  printCheck(plan, layout, os);
}

void mlir::gdn::cuda::printFunctionPrototypes(const FunctionPlan &plan,
                                              llvm::raw_ostream &os) {
  os << "/* @" << plan.function.getName() << " */\n";
  for (const KernelContext &k : plan.kernels) {
    printKernelPrototype(k, os);
    os << ";\n";
  }
  if (!plan.notEmittable.empty()) {
    os << "/* No whole-function entry point for @" << plan.function.getName()
       << ": " << plan.notEmittable << ". */\n\n";
    return;
  }
  os << "extern const gdn_signature_t " << plan.prefix << "_signature;\n"
     << "size_t " << plan.prefix
     << "_workspace_bytes(const gdn_tensor_t *args);\n"
     << "int " << plan.prefix
     << "_result_shapes(const gdn_tensor_t *args, gdn_tensor_t *results);\n"
     << "const char *" << plan.prefix << "_result_dims(void);\n"
     << "int " << plan.prefix
     << "(const gdn_tensor_t *args, gdn_tensor_t *results, void *workspace,\n"
     << "    gdnrt_context_t *context);\n"
     << "int " << plan.prefix
     << "_check(const gdn_tensor_t *args, const void *workspace,\n"
     << "    gdnrt_context_t *context, char *message, size_t size);\n\n";
}
