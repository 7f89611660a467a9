//===- Gemm.cpp - cuBLASLt matmuls for projections and state chains -------===//

#include "Gemm.h"

#include <algorithm>
#include <memory>

namespace gdnrt {
namespace {

cudaDataType dataType(gdn_dtype_t dtype) {
  switch (dtype) {
  case GDN_BF16:
    return CUDA_R_16BF;
  case GDN_F16:
    return CUDA_R_16F;
  case GDN_F64:
    return CUDA_R_64F;
  default:
    return CUDA_R_32F;
  }
}

/// Owns the cuBLASLt descriptors of one call.
struct Descriptors {
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  ~Descriptors() {
    if (preference)
      cublasLtMatmulPreferenceDestroy(preference);
    for (cublasLtMatrixLayout_t layout : {a, b, c, d})
      if (layout)
        cublasLtMatrixLayoutDestroy(layout);
    if (operation)
      cublasLtMatmulDescDestroy(operation);
  }
};

cublasStatus_t makeLayout(cublasLtMatrixLayout_t *layout, cudaDataType type,
                          int64_t rows, int64_t columns, int64_t ld,
                          int64_t batch, int64_t stride) {
  if (cublasStatus_t status = cublasLtMatrixLayoutCreate(
          layout, type, static_cast<uint64_t>(rows),
          static_cast<uint64_t>(columns), ld))
    return status;
  if (batch <= 1)
    return CUBLAS_STATUS_SUCCESS;
  int32_t count = static_cast<int32_t>(batch);
  if (cublasStatus_t status = cublasLtMatrixLayoutSetAttribute(
          *layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)))
    return status;
  return cublasLtMatrixLayoutSetAttribute(
      *layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
      sizeof(stride));
}

/// The alignment cuBLASLt may assume of `pointer`: its largest power-of-two
/// divisor, up to the 256 bytes cuBLASLt assumes by default.
uint32_t alignmentOf(const void *pointer) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0)
    alignment /= 2;
  return alignment;
}

/// The layouts of `gemm` with `n` columns of op(B), C and D (the real
/// count, or the one the algorithm is searched for).
cublasStatus_t makeLayouts(Descriptors &descriptors, const ColumnMajorGemm &gemm,
                           int64_t n, cudaDataType type,
                           cudaDataType outputType, const char *&what) {
  const int64_t aRows = gemm.transposeA ? gemm.k : gemm.m;
  const int64_t aColumns = gemm.transposeA ? gemm.m : gemm.k;
  const int64_t bRows = gemm.transposeB ? n : gemm.k;
  const int64_t bColumns = gemm.transposeB ? gemm.k : n;
  struct {
    cublasLtMatrixLayout_t *layout;
    cudaDataType type;
    int64_t rows, columns, ld, stride;
    const char *what;
  } layouts[] = {
      {&descriptors.a, type, aRows, aColumns, gemm.lda, gemm.strideA,
       "cublasLtMatrixLayoutCreate(A)"},
      {&descriptors.b, type, bRows, bColumns, gemm.ldb, gemm.strideB,
       "cublasLtMatrixLayoutCreate(B)"},
      {&descriptors.c, outputType, gemm.m, n, gemm.ldc, gemm.strideC,
       "cublasLtMatrixLayoutCreate(C)"},
      {&descriptors.d, outputType, gemm.m, n, gemm.ldd, gemm.strideD,
       "cublasLtMatrixLayoutCreate(D)"},
  };
  for (auto &l : layouts) {
    if (*l.layout) {
      cublasLtMatrixLayoutDestroy(*l.layout);
      *l.layout = nullptr;
    }
    if (cublasStatus_t status = makeLayout(l.layout, l.type, l.rows, l.columns,
                                           l.ld, gemm.batch, l.stride)) {
      what = l.what;
      return status;
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

} // namespace

int runGemm(gdnrt_context_t *context, const ColumnMajorGemm &gemm,
            const std::string &call) {
  if (gemm.m == 0 || gemm.n == 0 || gemm.batch == 0)
    return GDN_SUCCESS;
  const bool f64 = gemm.dtype == GDN_F64;
  const cudaDataType type = dataType(gemm.dtype);
  const cudaDataType outputType = gemm.f32Output ? CUDA_R_32F : type;
  const cudaDataType scaleType = f64 ? CUDA_R_64F : CUDA_R_32F;
  const cublasComputeType_t compute =
      f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  Descriptors descriptors;
  auto check = [&](cublasStatus_t status, const char *what) {
    return status == CUBLAS_STATUS_SUCCESS
               ? GDN_SUCCESS
               : fail(GDN_ERROR_CUBLAS, call, describeCublas(what, status));
  };
  if (int error = check(cublasLtMatmulDescCreate(&descriptors.operation,
                                                 compute, scaleType),
                        "cublasLtMatmulDescCreate"))
    return error;
  cublasOperation_t transposeA = gemm.transposeA ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (int error = check(cublasLtMatmulDescSetAttribute(
                            descriptors.operation, CUBLASLT_MATMUL_DESC_TRANSA,
                            &transposeA, sizeof(transposeA)),
                        "cublasLtMatmulDescSetAttribute(TRANSA)"))
    return error;
  cublasOperation_t transposeB = gemm.transposeB ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (int error = check(cublasLtMatmulDescSetAttribute(
                            descriptors.operation, CUBLASLT_MATMUL_DESC_TRANSB,
                            &transposeB, sizeof(transposeB)),
                        "cublasLtMatmulDescSetAttribute(TRANSB)"))
    return error;

  // The heuristic assumes 256-byte aligned operands unless told otherwise,
  // and an algorithm that needs more alignment than a pointer has fails;
  // plans address operands at any offset of their buffers (the rows of a
  // sum, one matrix of a gathered batch). The algorithm is kept per
  // alignment too, so aligned calls keep the default's choice.
  uint32_t alignment = 256;
  for (const void *pointer :
       {gemm.a, gemm.b, gemm.c, static_cast<const void *>(gemm.d)})
    alignment = std::min(alignment, alignmentOf(pointer));
  int alignmentLog2 = 0;
  while ((1u << alignmentLog2) < alignment)
    ++alignmentLog2;
  // Token columns: the algorithm is the one searched for a fixed token
  // count, whatever the call's count, so each token's column is computed by
  // the same kernel with the same reduction over k in a pack and alone.
  const int64_t searchN =
      gemm.tokenColumns ? kAlgorithmSearchTokens : gemm.n;
  const GemmKey key{alignmentLog2 * 128 + gemm.tokenColumns * 64 +
                        static_cast<int>(gemm.dtype) * 8 +
                        gemm.f32Output * 4 + gemm.transposeA * 2 +
                        gemm.transposeB,
                    gemm.m, searchN, gemm.k, gemm.batch};
  const char *what = "";
  // Searches the heuristic's first algorithm for `n` token columns into
  // the cache under `searchKey`.
  auto search = [&](int64_t n, const GemmKey &searchKey,
                    std::map<GemmKey, cublasLtMatmulAlgo_t>::iterator &into) {
    if (cublasStatus_t status =
            makeLayouts(descriptors, gemm, n, type, outputType, what))
      return check(status, what);
    if (!descriptors.preference) {
      if (int error = check(
              cublasLtMatmulPreferenceCreate(&descriptors.preference),
              "cublasLtMatmulPreferenceCreate"))
        return error;
      size_t workspace = context->ltWorkspaceBytes;
      if (int error = check(cublasLtMatmulPreferenceSetAttribute(
                                descriptors.preference,
                                CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                &workspace, sizeof(workspace)),
                            "cublasLtMatmulPreferenceSetAttribute"))
        return error;
      if (alignment < 256)
        for (cublasLtMatmulPreferenceAttributes_t attribute :
             {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
              CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
              CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
              CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
          if (int error = check(cublasLtMatmulPreferenceSetAttribute(
                                    descriptors.preference, attribute,
                                    &alignment, sizeof(alignment)),
                                "cublasLtMatmulPreferenceSetAttribute(MIN_"
                                "ALIGNMENT)"))
            return error;
    }
    cublasLtMatmulHeuristicResult_t heuristic{};
    int returned = 0;
    if (int error = check(cublasLtMatmulAlgoGetHeuristic(
                              context->lt, descriptors.operation, descriptors.a,
                              descriptors.b, descriptors.c, descriptors.d,
                              descriptors.preference, 1, &heuristic, &returned),
                          "cublasLtMatmulAlgoGetHeuristic"))
      return error;
    if (returned == 0)
      return fail(GDN_ERROR_CUBLAS, call,
                  "cuBLASLt has no algorithm for a " + std::to_string(gemm.m) +
                      " x " + std::to_string(n) + " x " +
                      std::to_string(gemm.k) + " GEMM (batch " +
                      std::to_string(gemm.batch) + ")");
    into = context->algorithms.insert_or_assign(searchKey, heuristic.algo).first;
    return static_cast<int>(GDN_SUCCESS);
  };
  auto found = context->algorithms.find(key);
  if (found == context->algorithms.end())
    if (int error = search(searchN, key, found))
      return error;
  if (cublasStatus_t status =
          makeLayouts(descriptors, gemm, gemm.n, type, outputType, what))
    return check(status, what);
  if (searchN != gemm.n) {
    // An algorithm searched for more tokens takes fewer in the cuBLASLt
    // kernels seen so far. If one does not, this call's own search runs it
    // (correct, but a pack and its sequences alone may then differ in the
    // last bits).
    cublasLtMatmulHeuristicResult_t checked{};
    if (cublasLtMatmulAlgoCheck(context->lt, descriptors.operation,
                                descriptors.a, descriptors.b, descriptors.c,
                                descriptors.d, &found->second,
                                &checked) != CUBLAS_STATUS_SUCCESS ||
        checked.workspaceSize > context->ltWorkspaceBytes) {
      const GemmKey own{std::get<0>(key) - 64, gemm.m, gemm.n, gemm.k,
                        gemm.batch};
      found = context->algorithms.find(own);
      if (found == context->algorithms.end())
        if (int error = search(gemm.n, own, found))
          return error;
    }
  }
  const double one64 = 1.0, beta64 = gemm.beta;
  const float one32 = 1.0f, beta32 = static_cast<float>(gemm.beta);
  const void *alpha = f64 ? static_cast<const void *>(&one64) : &one32;
  const void *beta = f64 ? static_cast<const void *>(&beta64) : &beta32;
  return check(cublasLtMatmul(context->lt, descriptors.operation, alpha, gemm.a,
                              descriptors.a, gemm.b, descriptors.b, beta,
                              gemm.c, descriptors.c, gemm.d, descriptors.d,
                              &found->second, context->ltWorkspace,
                              context->ltWorkspaceBytes, context->stream),
               "cublasLtMatmul");
}

bool checkProjectionShapes(const Shape &x, const Shape &weight, const Shape &y,
                           const ProjectionNames &names, ProjectionSizes &sizes,
                           std::string &error) {
  const std::string xName = names.x, weightName = names.weight;
  if (weight.dims.size() != 2) {
    error = weightName + " has rank " + std::to_string(weight.dims.size()) +
            "; it must be [Out, In]";
    return false;
  }
  sizes.tokens = x.dims[0];
  sizes.in = x.product(1, x.dims.size());
  sizes.out = y.product(1, y.dims.size());
  if (weight.dims[1] != sizes.in) {
    error = weightName + " has " + std::to_string(weight.dims[1]) +
            " input features but every token of " + xName + " has " +
            std::to_string(sizes.in);
    return false;
  }
  if (y.dims[0] != sizes.tokens || weight.dims[0] != sizes.out) {
    error = std::string(names.y) + " has " + std::to_string(y.dims[0]) +
            " tokens of " + std::to_string(sizes.out) + " features but " + xName +
            " has " + std::to_string(sizes.tokens) + " tokens and " + weightName +
            " " + std::to_string(weight.dims[0]) + " outputs";
    return false;
  }
  return true;
}

} // namespace gdnrt
