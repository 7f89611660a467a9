//===- ContextParallelCost.h - mode=auto's cost model -------------*- C++ -*-===//
//
// What one rank pays under each context-parallel mode for one GDN core, from
// its shapes, the token count and the group size. See docs/parallel.md
// ("The cost model of mode=auto") for the derivation and the table it gives
// for the example layers.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_TRANSFORMS_CONTEXTPARALLELCOST_H
#define GDN_LIB_TRANSFORMS_CONTEXTPARALLELCOST_H

#include <cstdint>
#include <string>

namespace mlir::gdn::cp {

/// The shapes of a core that the costs depend on.
struct CoreShape {
  int64_t keyHeads, valueHeads, headDimK, headDimV;
  int64_t convChannels, convWidth;
  int64_t convInputBytes;  ///< bytes per conv input element (mixed_qkv)
  int64_t activationBytes; ///< bytes per gate input and output element
  int64_t stateBytes;      ///< bytes per state element (4 for fp32)
};

/// The machine the model prices bytes and FLOPs on.
struct Machine {
  double linkBytesPerSecond; ///< per rank, one direction
  double flopsPerSecond;     ///< sustained tensor-core rate of the core
  double collectiveSeconds;  ///< latency of one collective
};

enum class Mode { Headwise, Chunkwise };

struct ModeCost {
  double bytes = 0;   ///< bytes one rank sends
  double flops = 0;   ///< FLOPs one rank computes beyond the P = 1 share
  int collectives = 0;
  double seconds = 0; ///< bytes, FLOPs and latencies priced on the machine
};

struct CostEstimate {
  ModeCost headwise, chunkwise;
  /// Headwise needs H and HV divisible by the ranks.
  bool headwisePossible;
  Mode choice;
};

/// The costs of both modes for `tokens` tokens (all ranks together) over
/// `ranks` ranks, and the cheaper one (chunkwise when headwise is impossible;
/// headwise on a tie, as the simpler program).
CostEstimate estimateCost(const CoreShape &shape, int64_t tokens,
                          int64_t ranks, bool scanChain,
                          const Machine &machine);

const char *getModeName(Mode mode);

/// How chunkwise CP chains the summaries: the one all-gather (P - 1
/// summaries sent, one collective) or the log-depth scan (log2 P summaries
/// and one state, log2 P + 1 point-to-point rounds), whichever the machine
/// prices lower; the all-gather on a tie. With the default machine and
/// gqa16x32's 4 MB summaries the scan wins at 16 ranks, not at 8.
bool prefersScanChain(const CoreShape &shape, int64_t ranks,
                      const Machine &machine);

} // namespace mlir::gdn::cp

#endif // GDN_LIB_TRANSFORMS_CONTEXTPARALLELCOST_H
