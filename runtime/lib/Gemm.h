//===- Gemm.h - one cuBLASLt call, its algorithm cached per problem -*- C++ -*-===//

#ifndef GDN_RUNTIME_LIB_GEMM_H
#define GDN_RUNTIME_LIB_GEMM_H

#include "Internal.h"
#include "Plan.h"

namespace gdnrt {

/// D = op(A) * op(B) + beta * C in cuBLASLt's column-major terms, batched
/// with strides (in elements). A, B, C and D share `dtype` (C and D may be
/// f32 instead, f32Output); the accumulation
/// is fp32 for 16- and 32-bit types (never TF32) and fp64 for f64. C may be D
/// (beta = 1 accumulates in place). For one algorithm the result is the same
/// bit for bit on every run: cuBLASLt's split-K reductions are ordered (in
/// place behind counters, or through the workspace), never atomic, and the
/// context fixes the algorithm per problem after its first heuristic query.
struct ColumnMajorGemm {
  gdn_dtype_t dtype;
  bool transposeA;
  int64_t m, n, k, batch;
  const void *a;
  int64_t lda, strideA;
  const void *b;
  int64_t ldb, strideB;
  const void *c;
  int64_t ldc, strideC;
  void *d;
  int64_t ldd, strideD;
  double beta;
  /// op(B) = B^T, B stored n x k (the weight gradient's dy^T).
  bool transposeB = false;
  /// C and D in f32 while A and B are bf16 or f16: a projection output kept
  /// in f32 for the precision of what reads it (docs/precision.md).
  bool f32Output = false;
  /// The n columns of op(B), C and D are tokens (a projection's y or dx):
  /// the algorithm is the one the heuristic picks for
  /// kAlgorithmSearchTokens columns, whatever n is, so a token's column is
  /// the same bits in a pack as alone. The heuristic's pick for the call's
  /// own n may differ with n (another tile or split of k), and with it the
  /// order of the sums over k.
  bool tokenColumns = false;
};

/// The token count token-column algorithms are searched for: a training
/// pack's order of magnitude, so packs get the heuristic's own pick.
constexpr int64_t kAlgorithmSearchTokens = 32768;

/// Enqueues the GEMM on the context's stream.
int runGemm(gdnrt_context_t *context, const ColumnMajorGemm &gemm,
            const std::string &call);

/// The sizes of a projection y[T, Out] = x[T, In] W^T (W stored [Out, In];
/// x and y may have more dimensions, flattened after the first).
struct ProjectionSizes {
  int64_t tokens, in, out;
};

/// What the messages of checkProjectionShapes call the three tensors: the
/// caller's names (y of gdnrt_linear is dy in its backward; a half of the
/// backward takes x's shape from dx and the weight's from dweight).
struct ProjectionNames {
  const char *x, *weight, *y;
};

/// Checks that the weight is [Out, In] for x's features and y's; false with
/// a message naming the mismatch otherwise.
bool checkProjectionShapes(const Shape &x, const Shape &weight, const Shape &y,
                           const ProjectionNames &names, ProjectionSizes &sizes,
                           std::string &error);

} // namespace gdnrt

#endif // GDN_RUNTIME_LIB_GEMM_H
