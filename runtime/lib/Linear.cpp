//===- Linear.cpp - gdn.linear through cuBLASLt ---------------------------===//
//
// y[T, Out] = x[T, In] W^T with W stored [Out, In] (nn.Linear). In
// cuBLASLt's column-major view y is Out x T, W is In x Out and x is In x T,
// so y = op(W) x with op = transpose: the "TN" GEMM cuBLASLt is fastest at.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"
#include "Internal.h"
#include "Plan.h"

using namespace gdnrt;

extern "C" int gdnrt_linear(gdnrt_context_t *context, const gdn_tensor_t *x,
                            const gdn_tensor_t *weight, const gdn_tensor_t *y) {
  const char *call = "gdnrt_linear";
  if (!context)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, "the context is null");
  std::string error;
  if (!checkTensorArgument(x, "input x", error) ||
      !checkTensorArgument(weight, "weight", error) ||
      !checkTensorArgument(y, "output y", error))
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, error);
  // y may be f32 beside 16-bit x and weight: a projection output kept in
  // f32 (gdn-expand-layer{f32-projections}).
  const bool f32Output = y->dtype == GDN_F32 && x->dtype != GDN_F32;
  if (x->dtype != weight->dtype || (y->dtype != x->dtype && !f32Output) ||
      (x->dtype != GDN_BF16 && x->dtype != GDN_F16 && x->dtype != GDN_F32))
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                "x and the weight must share one dtype among bf16, f16 and "
                "f32, and y must have it too or be f32");
  const Shape xs = Shape::of(*x), ws = Shape::of(*weight), ys = Shape::of(*y);
  ProjectionSizes sizes;
  if (!checkProjectionShapes(xs, ws, ys, {"x", "the weight", "y"}, sizes, error))
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, error);
  const int64_t tokens = sizes.tokens, in = sizes.in, out = sizes.out;
  if (tokens > 0 && out > 0 && in == 0) {
    // A product over nothing is zero; cuBLASLt does not take k = 0.
    if (cudaError_t failed = cudaMemsetAsync(
            y->data, 0, static_cast<size_t>(tokens * out) * ys.elementBytes,
            context->stream))
      return fail(GDN_ERROR_CUDA, call, describeCuda("cudaMemsetAsync", failed));
    return succeed();
  }
  ColumnMajorGemm gemm{x->dtype, true,     out,     tokens,  in,   1,
                       weight->data, in,   0,       x->data, in,   0,
                       y->data,  out,      0,       y->data, out,  0,
                       0.0};
  gemm.f32Output = f32Output;
  gemm.tokenColumns = true;
  if (int failed = runGemm(context, gemm, call))
    return failed;
  return succeed();
}
