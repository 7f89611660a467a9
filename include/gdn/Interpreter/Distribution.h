//===- Distribution.h - global tensors to rank-local shards -----*- C++ -*-===//
//
// A tensor's layout encoding says how the global tensor is spread over ranks.
// These functions move between the two views: the interpreter uses them to
// scatter a program's global inputs, gather its outputs, and to execute
// gdn.convert_layout. Zigzag layouts cut each sequence's slot into 2P pieces,
// so they need the global packing.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_INTERPRETER_DISTRIBUTION_H
#define GDN_INTERPRETER_DISTRIBUTION_H

#include "gdn/Interpreter/Packing.h"
#include "gdn/Interpreter/Tensor.h"

#include "mlir/IR/BuiltinTypes.h"

namespace mlir::gdn::interp {

/// The global shape of a value whose rank-local type is `localType` (known
/// dimensions only; dynamic ones stay dynamic).
std::vector<int64_t> getGlobalShape(RankedTensorType localType);

/// Each rank's share of `global` under `localType`'s layout. Tensors without
/// a layout are replicated. `packing` is required for zigzag layouts.
llvm::Expected<std::vector<Tensor>> scatterToRanks(const Tensor &global,
                                                   RankedTensorType localType,
                                                   int64_t ranks,
                                                   const PackingInfo *packing);

/// The inverse of scatterToRanks. Tensors without a layout must be equal on
/// all ranks (the result is rank 0's); a difference is reported.
llvm::Expected<Tensor> gatherFromRanks(llvm::ArrayRef<Tensor> locals,
                                       RankedTensorType localType,
                                       const PackingInfo *packing);

/// Global token rows held by `rank` under a zigzag layout, in local order.
llvm::Expected<std::vector<int64_t>> getZigzagRows(const PackingInfo &packing,
                                                   int64_t ranks, int64_t rank);

} // namespace mlir::gdn::interp

#endif // GDN_INTERPRETER_DISTRIBUTION_H
