//===- EmitCUDA.cpp - kernel-level IR to CUDA C++ -------------------------===//
//
// Walks each function: every gdn_kernel op becomes a Config struct and a C
// entry point (KernelPrinters.cpp). A function whose other ops all run as
// gdnrt calls or device copies (RuntimeCalls.cpp) also gets whole-function
// entry points (FunctionEntries.cpp), so generic callers (the GPU test
// harness, the PyTorch extension) can run it. Functions that still hold ops
// without a CUDA lowering get their kernels only, and a comment saying what
// is missing.
//
//===----------------------------------------------------------------------===//

#include "FunctionEntries.h"
#include "RuntimeCalls.h"

#include "gdn/Dialect/GdnKernel/IR/GdnKernelDialect.h"
#include "gdn/Target/CUDA.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::cuda;

namespace {

/// A C identifier from a symbol name.
std::string sanitize(StringRef name) {
  std::string id;
  for (char c : name)
    id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return id;
}

FunctionPlan planFunction(func::FuncOp function) {
  FunctionPlan plan;
  plan.function = function;
  plan.prefix = "gdn_" + sanitize(function.getName());
  if (function.isExternal()) {
    plan.notEmittable = "it is a declaration";
    return plan;
  }
  unsigned index = 0;
  llvm::DenseMap<int, int64_t> groupRanks; ///< group kind -> its ranks
  for (Operation &op : function.getBody().front()) {
    if (isa<kernel::GdnKernelDialect>(op.getDialect())) {
      std::string mnemonic = sanitize(op.getName().stripDialect());
      std::string entry =
          plan.prefix + "_k" + std::to_string(index++) + "_" + mnemonic;
      plan.kernels.push_back({&op, entry, entry + "_config"});
      plan.steps.push_back(&op);
      continue;
    }
    if (isRuntimeCall(&op)) {
      std::string limitation = getRuntimeCallLimitation(&op);
      if (plan.notEmittable.empty())
        plan.notEmittable = limitation;
      // A context binds one communicator per kind of group.
      if (comm::GroupAttr group = getRuntimeCallGroup(&op)) {
        auto [known, inserted] = groupRanks.try_emplace(
            static_cast<int>(group.getKind()), group.getRanks());
        if (!inserted && known->second != group.getRanks() &&
            plan.notEmittable.empty())
          plan.notEmittable =
              "it uses " + comm::stringifyGroupKind(group.getKind()).str() +
              " groups of " + std::to_string(known->second) + " and " +
              std::to_string(group.getRanks()) +
              " ranks (a context binds one communicator per kind)";
      }
      plan.steps.push_back(&op);
      continue;
    }
    if (isa<PackingOp, func::ReturnOp>(op) || isShapeHelper(&op))
      continue;
    if (plan.notEmittable.empty())
      plan.notEmittable =
          op.getName().getStringRef().str() + " has no CUDA lowering yet";
  }
  // The whole-function ABI passes tensors only; a !gdn.packing argument
  // would have no gdn_tensor_t to come from.
  auto describe = [](StringRef what, size_t index, Type type) {
    std::string text;
    llvm::raw_string_ostream(text) << what << " #" << index << " has type "
                                   << type << ", not a ranked tensor";
    return text;
  };
  for (auto [index, type] : llvm::enumerate(function.getArgumentTypes()))
    if (plan.notEmittable.empty() && !isa<RankedTensorType>(type))
      plan.notEmittable = describe("argument", index, type);
  for (auto [index, type] : llvm::enumerate(function.getResultTypes()))
    if (plan.notEmittable.empty() && !isa<RankedTensorType>(type))
      plan.notEmittable = describe("result", index, type);
  llvm::SmallPtrSet<Value, 8> returned;
  if (plan.notEmittable.empty())
    for (Value result :
         function.getBody().front().getTerminator()->getOperands()) {
      if (isa<BlockArgument>(result))
        plan.notEmittable = "it returns an argument unchanged";
      else if (!returned.insert(result).second)
        plan.notEmittable = "it returns one value twice";
      if (!plan.notEmittable.empty())
        break;
    }
  if (plan.notEmittable.empty())
    for (PackingOp packing : function.getBody().getOps<PackingOp>())
      if (!isa<BlockArgument>(packing.getCuSeqlens()) ||
          (packing.getCuPadded() && !isa<BlockArgument>(packing.getCuPadded())))
        plan.notEmittable = "its cu_seqlens are not function arguments";
  return plan;
}

/// Checks what the printers assume: static sizes except the token or
/// sequence dimension 0.
LogicalResult checkKernelTypes(Operation *op) {
  for (Type type :
       llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor)
      continue;
    for (int64_t d = 1; d < tensor.getRank(); ++d)
      if (tensor.isDynamicDim(d))
        return op->emitError() << "the CUDA emitter needs static sizes except "
                                  "the token dimension, found "
                               << type;
  }
  return success();
}

/// Checks that the generated code can count every tensor's bytes: the
/// static sizes times the element's bytes within 2^62 (host code adds and
/// multiplies such counts in int64 and size_t; a dynamic size is checked at
/// run time by the entry point).
LogicalResult checkTensorBytes(ModuleOp module) {
  constexpr int64_t kMaxBytes = int64_t(1) << 62;
  auto check = [&](Type type, Location loc) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor)
      return success();
    Type element = tensor.getElementType();
    int64_t bytes =
        element.isIntOrFloat()
            ? std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8)
            : 8;
    for (int64_t size : tensor.getShape())
      if (!ShapedType::isDynamic(size) &&
          (llvm::MulOverflow(bytes, size, bytes) || bytes > kMaxBytes))
        return emitError(loc)
               << "the CUDA emitter counts bytes in int64, and " << type
               << " holds more than 2^62 of them; give it smaller static "
                  "sizes (its token dimension may be dynamic)";
    return success();
  };
  WalkResult walk = module.walk([&](Operation *op) {
    for (Value value : op->getResults())
      if (failed(check(value.getType(), op->getLoc())))
        return WalkResult::interrupt();
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument argument : block.getArguments())
          if (failed(check(argument.getType(), argument.getLoc())))
            return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

/// What both translations need before planning: the process groups the
/// emitter names (a layout conversion's group is made from its shards'
/// layout, even in a module that never mentions gdn_comm, whose dialect
/// must then be loaded first), and byte counts that fit (checkTensorBytes).
LogicalResult prepareModule(ModuleOp module) {
  module.getContext()->getOrLoadDialect<comm::GdnCommDialect>();
  return checkTensorBytes(module);
}

void printPreamble(ModuleOp module, llvm::raw_ostream &os, bool header) {
  os << "// Generated by gdn-translate --gdn-to-cuda"
     << (header ? "-header" : "")
     << ". Do not edit: change the IR or the emitter.\n";
  if (header) {
    os << "#pragma once\n\n#include \"gdn/runtime/gdnrt.h\"\n\n"
       << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
    return;
  }
  os << "#include \"gdn/device/chunkwise.cuh\"\n"
     << "#include \"gdn/device/delta_rule.cuh\"\n"
     << "#include \"gdn/device/delta_rule_backward.cuh\"\n"
     << "#include \"gdn/device/elementwise.cuh\"\n"
     << "#include \"gdn/device/epilogue.cuh\"\n"
     << "#include \"gdn/device/epilogue_backward.cuh\"\n"
     << "#include \"gdn/device/l2norm.cuh\"\n"
     << "#include \"gdn/device/packing.cuh\"\n"
     << "#include \"gdn/device/prologue.cuh\"\n"
     << "#include \"gdn/device/prologue_backward.cuh\"\n"
     << "#include \"gdn/device/strided_copies.cuh\"\n"
     << "#include \"gdn/device/zigzag.cuh\"\n"
     << "#include \"gdn/runtime/gdnrt.h\"\n"
     << "#include \"gdn/runtime/host_checks.h\"\n\n";
}

} // namespace

LogicalResult mlir::gdn::translateToCudaSource(ModuleOp module,
                                               llvm::raw_ostream &os) {
  if (failed(prepareModule(module)))
    return failure();
  printPreamble(module, os, /*header=*/false);
  for (func::FuncOp function : module.getOps<func::FuncOp>()) {
    FunctionPlan plan = planFunction(function);
    for (const KernelContext &k : plan.kernels)
      if (failed(checkKernelTypes(k.op)))
        return failure();
    os << "//===----------------------------------------------------------===//"
          "\n"
       << "// @" << function.getName() << ": " << plan.kernels.size()
       << " kernel(s)\n"
       << "//===----------------------------------------------------------===//"
          "\n\n";
    if (!plan.notEmittable.empty())
      os << "// No whole-function entry point: " << plan.notEmittable
         << ".\n\n";
    for (const KernelContext &k : plan.kernels)
      printKernelConfig(k, os);
    for (const KernelContext &k : plan.kernels) {
      printKernelEntry(k, os);
    }
    if (plan.notEmittable.empty())
      printFunctionEntries(plan, os);
  }
  return success();
}

LogicalResult mlir::gdn::translateToCudaHeader(ModuleOp module,
                                               llvm::raw_ostream &os) {
  if (failed(prepareModule(module)))
    return failure();
  printPreamble(module, os, /*header=*/true);
  for (func::FuncOp function : module.getOps<func::FuncOp>())
    printFunctionPrototypes(planFunction(function), os);
  os << "#ifdef __cplusplus\n}\n#endif\n";
  return success();
}
