//===- BackwardOracle.h - the interpreter's VJPs on plain vectors ---------===//
//
// The backward emulation test compiles the device headers against the CUDA
// stand-ins of shim/, which do not mix with MLIR's headers; this bridge
// (compiled apart, BackwardOracle.cpp) hands it the float64 gradients of
// gdn-run's own rules (lib/Interpreter/Gradients) on plain vectors, so the
// kernels are checked against the project's oracle, not a second copy of
// the formulas.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_UNITTESTS_BACKWARDORACLE_H
#define GDN_UNITTESTS_BACKWARDORACLE_H

#include <cstdint>
#include <vector>

namespace gdn::test {

/// One fused prologue (gdn_kernel.prologue) and the cotangents of its
/// results. Optional tensors are empty when absent; cuPadded is empty for
/// an unpadded pack.
struct PrologueProblem {
  int keyHeads, valueHeads, headDimK, headDimV, width;
  bool silu, negEigval;
  double normEps;
  std::vector<int64_t> cuSeqlens, cuPadded;
  std::vector<double> mixed, weight, bias, initialState, a, b, aLog, dtBias;
  std::vector<double> dq, dk, dv, dg, dbeta, dfinalState;
};

struct PrologueGradients {
  std::vector<double> dmixed, dweight, dbias, dinitialState, da, db, daLog,
      ddtBias;
};

/// The gradients gdn-run computes for gdn_kernel.prologue
/// (CompositeGradients.cpp: the conv output in float64, then the gates',
/// L2 norms', split's and conv's VJPs).
PrologueGradients prologueGradients(const PrologueProblem &problem);

struct EpilogueGradients {
  std::vector<double> dx, dz, dweight;
};

/// gatedRMSNormVJP over rows of `headDim` channels.
EpilogueGradients epilogueGradients(const std::vector<double> &x,
                                    const std::vector<double> &z,
                                    const std::vector<double> &weight,
                                    const std::vector<double> &dy, int headDim,
                                    double eps);

/// gdn.l2norm and its VJP (gdn.l2norm_grad) over rows of `dim` values.
std::vector<double> l2normRows(const std::vector<double> &x, int dim, double eps);
std::vector<double> l2normRowsGradient(const std::vector<double> &x,
                                       const std::vector<double> &dy, int dim,
                                       double eps);

} // namespace gdn::test

#endif // GDN_UNITTESTS_BACKWARDORACLE_H
