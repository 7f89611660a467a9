//===- RuntimeCalls.h - ops an entry point runs as calls --------*- C++ -*-===//
//
// Between the kernels of a whole-function entry point run the ops that are
// not kernels of ours: gdn.linear, gdn.linear_grad and the gdn_comm
// collectives (and their transposes in a backward) become gdnrt calls
// (cuBLASLt, NCCL or gdnrt's threads backend), a sum of linear_grad
// input gradients runs inside their GEMMs, gdn.split_qkvz,
// gdn.regroup_sections and the merges become strided device copies. For each
// such op this file knows the result shapes, the run-time conditions on the
// arguments' shapes, the staging workspace its gdnrt call takes, and how to
// print the call. FunctionEntries.cpp strings them together with the kernels.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_TARGET_CUDA_RUNTIMECALLS_H
#define GDN_LIB_TARGET_CUDA_RUNTIMECALLS_H

#include "DeviceCalls.h"
#include "KernelPrinters.h"

#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::gdn::cuda {

/// True for the ops a whole-function entry point runs as gdnrt calls or
/// device copies.
bool isRuntimeCall(Operation *op);

/// Why `op` cannot run as a call (an element type gdnrt does not take, a
/// dynamic size other than the token dimension); empty when it can.
std::string getRuntimeCallLimitation(Operation *op);

/// The shapes of a call's results, as expressions of the function
/// arguments' shapes, and the conditions those shapes must meet for the call
/// to succeed (a dynamic token count that a reduce_scatter divides by its
/// ranks), checked before anything is enqueued.
struct RuntimeCallShapes {
  std::vector<ShapeExprs> results;
  std::vector<std::string> conditions;
};
RuntimeCallShapes getRuntimeCallShapes(Operation *op,
                                       ArrayRef<ShapeExprs> operands,
                                       const ShapeContext &context);

/// The operands whose descriptors the op's `gdnrt_*_workspace_bytes` query
/// reads (most take one, return_halo two), or none when the call takes no
/// staging workspace.
SmallVector<Value, 2> getStagingOperands(Operation *op);

/// The staging query of `op` given descriptors `tensors` of its staging
/// operands: `gdnrt_all_gather_workspace_bytes(&tensor0, 2, 0)`.
std::string getStagingQuery(Operation *op, ArrayRef<std::string> tensors);

/// The process group `op` runs on; null for ops without one.
comm::GroupAttr getRuntimeCallGroup(Operation *op);

/// `GDNRT_GROUP_SP` or `GDNRT_GROUP_CP`.
std::string getGroupRole(comm::GroupAttr group);

/// A block copy between an operand and a result of a data-movement op
/// (gdn.split_qkvz, gdn.merge_qkvz, gdn.merge_qkv, gdn.regroup_sections):
/// for every slice s and row r,
/// `width` bytes from source + sourceOffset + s * sourceSlicePitch +
/// r * sourceRowPitch to the same place in the target. Everything is static
/// except the slice count, the product of the source's first `sliceDims`
/// sizes (the tokens, or whatever precedes a regrouped dimension).
struct StridedCopy {
  unsigned source; ///< operand index
  unsigned target; ///< result index
  int64_t sourceOffset, targetOffset, width;
  int64_t rows, sourceRowPitch, targetRowPitch;
  unsigned sliceDims;
  int64_t sourceSlicePitch, targetSlicePitch;
};

/// The copies that together compute a data-movement op's results (empty for
/// other ops). Every result byte is written by exactly one copy.
std::vector<StridedCopy> getStridedCopies(Operation *op);

/// Prints the statements that run `op` on the context's stream and return
/// the error code from the enclosing function when a call fails. `place`
/// names the gdn_tensor_t holding a value (`args[0]`, `temp3`); `staging`
/// is the staging pointer (null at run time when the query said 0 bytes).
void printRuntimeCall(Operation *op,
                      llvm::function_ref<std::string(Value)> place,
                      StringRef staging, llvm::raw_ostream &os);

/// Prints the weight GEMM of the gdn.linear_grad whose data GEMM ran before
/// `grad`, the norm backward that writes that projection's x
/// (NormRecomputation.h); nothing for any other op.
void printWeightGradientAfter(Operation *grad,
                              llvm::function_ref<std::string(Value)> place,
                              llvm::raw_ostream &os);

} // namespace mlir::gdn::cuda

#endif // GDN_LIB_TARGET_CUDA_RUNTIMECALLS_H
