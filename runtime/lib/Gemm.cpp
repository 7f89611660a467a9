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
  const int64_t aRows = gemm.transposeA ? gemm.k : gemm.m;
  const int64_t aColumns = gemm.transposeA ? gemm.m : gemm.k;
  if (int error = check(makeLayout(&descriptors.a, type, aRows, aColumns,
                                   gemm.lda, gemm.batch, gemm.strideA),
                        "cublasLtMatrixLayoutCreate(A)"))
    return error;
  cublasOperation_t transposeB = gemm.transposeB ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (int error = check(cublasLtMatmulDescSetAttribute(
                            descriptors.operation, CUBLASLT_MATMUL_DESC_TRANSB,
                            &transposeB, sizeof(transposeB)),
                        "cublasLtMatmulDescSetAttribute(TRANSB)"))
    return error;
  const int64_t bRows = gemm.transposeB ? gemm.n : gemm.k;
  const int64_t bColumns = gemm.transposeB ? gemm.k : gemm.n;
  if (int error = check(makeLayout(&descriptors.b, type, bRows, bColumns,
                                   gemm.ldb, gemm.batch, gemm.strideB),
                        "cublasLtMatrixLayoutCreate(B)"))
    return error;
  if (int error = check(makeLayout(&descriptors.c, outputType, gemm.m, gemm.n,
                                   gemm.ldc, gemm.batch, gemm.strideC),
                        "cublasLtMatrixLayoutCreate(C)"))
    return error;
  if (int error = check(makeLayout(&descriptors.d, outputType, gemm.m, gemm.n,
                                   gemm.ldd, gemm.batch, gemm.strideD),
                        "cublasLtMatrixLayoutCreate(D)"))
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
  const GemmKey key{alignmentLog2 * 64 + static_cast<int>(gemm.dtype) * 8 +
                        gemm.f32Output * 4 + gemm.transposeA * 2 +
                        gemm.transposeB,
                    gemm.m, gemm.n, gemm.k, gemm.batch};
  auto found = context->algorithms.find(key);
  if (found == context->algorithms.end()) {
    if (int error = check(cublasLtMatmulPreferenceCreate(&descriptors.preference),
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
                                  descriptors.preference, attribute, &alignment,
                                  sizeof(alignment)),
                              "cublasLtMatmulPreferenceSetAttribute(MIN_"
                              "ALIGNMENT)"))
          return error;
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
                      " x " + std::to_string(gemm.n) + " x " +
                      std::to_string(gemm.k) + " GEMM (batch " +
                      std::to_string(gemm.batch) + ")");
    found = context->algorithms.emplace(key, heuristic.algo).first;
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
                           const char *yName, ProjectionSizes &sizes,
                           std::string &error) {
  if (weight.dims.size() != 2) {
    error = "the weight has rank " + std::to_string(weight.dims.size()) +
            "; it must be [Out, In]";
    return false;
  }
  sizes.tokens = x.dims[0];
  sizes.in = x.product(1, x.dims.size());
  sizes.out = y.product(1, y.dims.size());
  if (weight.dims[1] != sizes.in) {
    error = "the weight has " + std::to_string(weight.dims[1]) +
            " input features but every token of x has " +
            std::to_string(sizes.in);
    return false;
  }
  if (y.dims[0] != sizes.tokens || weight.dims[0] != sizes.out) {
    error = std::string(yName) + " has " + std::to_string(y.dims[0]) +
            " tokens of " + std::to_string(sizes.out) + " features but x has " +
            std::to_string(sizes.tokens) + " tokens and the weight " +
            std::to_string(weight.dims[0]) + " outputs";
    return false;
  }
  return true;
}

} // namespace gdnrt
