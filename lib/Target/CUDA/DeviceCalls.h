//===- DeviceCalls.h - ops an entry point runs as small kernels -*- C++ -*-===//
//
// Some ops are neither kernels of their own nor gdnrt calls: chunkwise
// CP's per-rank bookkeeping (the shard's packings, the continuing
// sequence's states, the summary runs' initial states, and their
// gradients), the owners' halves of gather_sequence_states and
// reduce_sequence_states, the zigzag conversions, zero fills, slices,
// sums of cotangents and L2 norms outside a layer. Each runs as a launch of
// a small kernel of the device header library (gdn/device/chunkwise.cuh,
// zigzag.cuh, elementwise.cuh, l2norm.cuh),
// sometimes beside a gdnrt collective. RuntimeCalls.cpp dispatches here for
// them; the interface is its.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_TARGET_CUDA_DEVICECALLS_H
#define GDN_LIB_TARGET_CUDA_DEVICECALLS_H

#include "KernelPrinters.h"

#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::gdn::cuda {

/// True for the ops printed here.
bool isDeviceCall(Operation *op);

/// Ops that only give other ops sizes and scalars (tensor.dim, a scalar
/// arith.constant): no step of their own.
bool isShapeHelper(Operation *op);

/// True for the ops whose result is a packing computed on the device
/// (gdn_comm.local_packing, gdn_comm.summary_packing).
bool isDerivedPacking(Operation *op);

/// Why `op` cannot run here (a dtype the kernels do not take, a slice that
/// is not a block of leading rows); empty when it can.
std::string getDeviceCallLimitation(Operation *op);

/// What the shapes of these ops depend on beyond their tensor operands:
/// the sequence count of a packing, the value of an index.
struct ShapeContext {
  llvm::function_ref<std::string(Value)> seqsOf;
  llvm::function_ref<std::string(Value)> indexOf;
};

/// The result shapes (the conditions go to `conditions`).
std::vector<ShapeExprs>
getDeviceCallShapes(Operation *op, ArrayRef<ShapeExprs> operands,
                    const ShapeContext &context,
                    std::vector<std::string> &conditions);

/// As getStagingOperands / getStagingQuery of RuntimeCalls.h.
SmallVector<Value, 2> getDeviceCallStagingOperands(Operation *op);
std::string getDeviceCallStagingQuery(Operation *op,
                                      ArrayRef<std::string> tensors);

/// The bytes of a derived packing's workspace, as an expression of its
/// sequence count `seqs`.
std::string getDerivedPackingBytes(Operation *op, StringRef seqs);

/// `rank_sp` or `rank_cp`: the variable holding this rank in `group`.
std::string getRankVariable(comm::GroupAttr group);

/// Prints the statements that run `op` (see printRuntimeCall). `place`
/// also names packings (their gdn_packing_t).
void printDeviceCall(Operation *op,
                     llvm::function_ref<std::string(Value)> place,
                     StringRef staging, llvm::raw_ostream &os);

} // namespace mlir::gdn::cuda

#endif // GDN_LIB_TARGET_CUDA_DEVICECALLS_H
