//===- GenerateBackward.cpp - the gdn-generate-backward pass --------------===//
//
// For a forward function @f, builds @f_backward by reverse-mode
// differentiation over its ops (BackwardBuilder.h holds the machinery, the
// emitters hold one VJP per op) and @f_forward, which is @f returning the
// values @f_backward takes as saved. The backward's signature is
//
//   @f_backward(f's arguments..., saved values..., cotangents of f's float
//               results...) -> gradients of f's float arguments...
//
// and in a P-rank program the cotangents and gradients of tensors without a
// token layout are replicated on every rank (docs/backward.md).
//
//===----------------------------------------------------------------------===//

#include "BackwardBuilder.h"

#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"
#include "gdn/Dialect/Gdn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNGENERATEBACKWARD
#include "gdn/Dialect/Gdn/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

/// The attributes that mark generated functions and name their source.
static constexpr StringLiteral kForwardOf = "gdn.forward_of";
static constexpr StringLiteral kBackwardOf = "gdn.backward_of";
static constexpr StringLiteral kSavePolicy = "gdn.save";

namespace {

/// Bytes of one element of `type`.
int64_t getElementBytes(RankedTensorType type) {
  return (type.getElementTypeBitWidth() + 7) / 8;
}

/// The static token count of `function`'s packings, if one is static.
std::optional<int64_t> findStaticTokens(func::FuncOp function) {
  std::optional<int64_t> tokens;
  function.walk([&](PackingOp packing) {
    if (packing.getPacking().getType().hasStaticTokens())
      tokens = packing.getPacking().getType().getTokens();
  });
  return tokens;
}

/// report-memory: the saved values' bytes per token row (values indexed by
/// tokens: a dynamic or token-count first dimension, or a token shard) and
/// the bytes of the rest.
void reportSavedMemory(func::FuncOp function, ArrayRef<Value> saved,
                       StringRef policy) {
  std::optional<int64_t> tokens = findStaticTokens(function);
  int64_t perToken = 0, fixed = 0;
  std::string list;
  llvm::raw_string_ostream os(list);
  for (Value value : saved) {
    auto type = cast<RankedTensorType>(value.getType());
    const bool tokenIndexed =
        type.getRank() >= 1 &&
        (type.isDynamicDim(0) || getSequenceLayout(type) ||
         (tokens && type.getDimSize(0) == *tokens));
    int64_t elements = 1;
    for (int64_t dim = tokenIndexed ? 1 : 0; dim < type.getRank(); ++dim)
      elements *= type.getDimSize(dim);
    (tokenIndexed ? perToken : fixed) += elements * getElementBytes(type);
    os << (list.empty() ? "" : ", ") << type;
  }
  function.emitRemark() << llvm::formatv(
      "save={0}: @{1}_forward saves {2} value(s), {3} bytes per token and "
      "{4} bytes besides{5}{6}",
      policy, function.getName(), saved.size(), perToken, fixed,
      saved.empty() ? "" : ": ", list);
}

struct GenerateBackwardPass
    : public gdn::impl::GdnGenerateBackwardBase<GenerateBackwardPass> {
  using GdnGenerateBackwardBase::GdnGenerateBackwardBase;

  void runOnOperation() override;

  LogicalResult generate(func::FuncOp function, SavePolicy policy);
};

} // namespace

LogicalResult GenerateBackwardPass::generate(func::FuncOp function,
                                             SavePolicy policy) {
  MLIRContext *context = function.getContext();
  auto module = function->getParentOfType<ModuleOp>();
  const std::string forwardName = (function.getName() + "_forward").str();
  const std::string backwardName = (function.getName() + "_backward").str();
  for (const std::string &name : {forwardName, backwardName})
    if (SymbolTable::lookupSymbolIn(module, name))
      return function.emitOpError()
             << "cannot get a backward: the module already has @" << name;
  if (!function.getBody().hasOneBlock())
    return function.emitOpError()
           << "has " << function.getBody().getBlocks().size()
           << " blocks; gdn-generate-backward differentiates straight-line "
              "functions";
  Block &body = function.getBody().front();
  Activity activity(function);
  for (Operation &op : body.without_terminator()) {
    if (op.getNumRegions() != 0 && activity.isActive(&op))
      return op.emitOpError() << "has regions; gdn-generate-backward "
                                 "differentiates straight-line code";
    if (activity.isActive(&op) && failed(checkDifferentiable(&op)))
      return failure();
  }

  // @f_backward(args..., cotangents...); saved values are inserted between.
  FunctionType type = function.getFunctionType();
  SmallVector<Type> inputs(type.getInputs());
  SmallVector<unsigned> floatResults;
  for (auto [index, result] : llvm::enumerate(type.getResults()))
    if (isDifferentiableType(result)) {
      floatResults.push_back(index);
      inputs.push_back(result);
    }
  OpBuilder moduleBuilder(context);
  moduleBuilder.setInsertionPointAfter(function);
  auto backward =
      func::FuncOp::create(moduleBuilder, function.getLoc(), backwardName,
                           FunctionType::get(context, inputs, {}));
  Block *entry = backward.addEntryBlock();
  BackwardBuilder builder(function, backward, policy, activity);
  OpBuilder &b = builder.getBuilder();

  // Seed: the cotangent of each float result. One every rank holds whole
  // counts once, as partial sums over the ranks.
  SmallVector<comm::GroupAttr> groups = findProcessGroups(function);
  Operation *terminator = body.getTerminator();
  for (auto [position, index] : llvm::enumerate(floatResults)) {
    Value cotangent = entry->getArgument(type.getNumInputs() + position);
    if (!getSequenceLayout(cotangent.getType()))
      for (comm::GroupAttr group : groups)
        cotangent = comm::ReplicatedToPartialOp::create(
            b, function.getLoc(), cotangent.getType(), cotangent, group);
    builder.addCotangent(terminator->getOperand(index), cotangent);
  }

  for (Operation &op : llvm::reverse(body.without_terminator()))
    if (activity.isActive(&op) && failed(emitGradient(&op, builder))) {
      backward.erase();
      return failure();
    }

  // The gradient of every float argument; those every rank holds whole sum
  // their ranks' partial sums.
  SmallVector<Value> gradients;
  for (BlockArgument argument : body.getArguments()) {
    if (!isDifferentiableType(argument.getType()))
      continue;
    Value gradient = builder.getCotangent(argument);
    if (!gradient)
      gradient = builder.zerosLike(entry->getArgument(argument.getArgNumber()));
    else if (!getSequenceLayout(argument.getType()))
      for (comm::GroupAttr group : groups)
        gradient = comm::AllReduceOp::create(
            b, function.getLoc(), gradient.getType(), gradient, group);
    gradients.push_back(gradient);
  }
  func::ReturnOp::create(b, function.getLoc(), gradients);
  backward.setFunctionType(FunctionType::get(context, entry->getArgumentTypes(),
                                             ValueRange(gradients).getTypes()));
  backward->setAttr(kBackwardOf, FlatSymbolRefAttr::get(function));
  backward->setAttr(kSavePolicy, StringAttr::get(context, save.getValue()));

  // @f_forward: @f that also returns the saved values.
  IRMapping mapping;
  auto forward = cast<func::FuncOp>(function->clone(mapping));
  forward.setName(forwardName);
  moduleBuilder.insert(forward);
  forward->moveBefore(backward);
  Operation *forwardReturn = forward.getBody().front().getTerminator();
  SmallVector<Value> results(forwardReturn->getOperands());
  for (Value value : builder.getSaved())
    results.push_back(mapping.lookup(value));
  forwardReturn->setOperands(results);
  forward.setFunctionType(FunctionType::get(context, type.getInputs(),
                                            ValueRange(results).getTypes()));
  forward->setAttr(kForwardOf, FlatSymbolRefAttr::get(function));
  forward->setAttr(kSavePolicy, StringAttr::get(context, save.getValue()));

  ++numFunctions;
  numSaved += builder.getNumSaved();
  if (reportMemory)
    reportSavedMemory(function, builder.getSaved(), save.getValue());
  return success();
}

void GenerateBackwardPass::runOnOperation() {
  ModuleOp module = getOperation();
  std::optional<SavePolicy> policy =
      llvm::StringSwitch<std::optional<SavePolicy>>(save)
          .Case("activations", SavePolicy::Activations)
          .Case("inputs", SavePolicy::Inputs)
          .Case("operands", SavePolicy::Operands)
          .Case("none", SavePolicy::None)
          .Default(std::nullopt);
  if (!policy) {
    module.emitError() << "gdn-generate-backward: unknown save='" << save
                       << "'; expected activations, operands, inputs or none";
    return signalPassFailure();
  }
  SmallVector<func::FuncOp> targets;
  if (functions.empty()) {
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isExternal() && !function->hasAttr(kForwardOf) &&
          !function->hasAttr(kBackwardOf))
        targets.push_back(function);
  } else {
    for (const std::string &name : functions) {
      auto function = module.lookupSymbol<func::FuncOp>(name);
      if (!function || function.isExternal()) {
        module.emitError() << "gdn-generate-backward: functions= names @"
                           << name
                           << ", which is not a function with a body "
                              "in this module";
        return signalPassFailure();
      }
      targets.push_back(function);
    }
  }
  for (func::FuncOp function : targets)
    if (failed(generate(function, *policy)))
      return signalPassFailure();
}
