//===- LinearGrad.cpp - gdn.linear_grad through cuBLASLt ------------------===//
//
// The backward of y[T, Out] = x[T, In] W^T (W stored [Out, In]) is two
// GEMMs. In cuBLASLt's column-major view dy is Out x T, x is In x T and W
// is In x Out, so
//   dx (In x T)   = W dy          "NN", k = Out
//   dW (In x Out) = x dy^T        "NT", k = T (the token sum)
// Both accumulate in fp32 and are bit-identical run to run (Gemm.h). The
// accumulating form adds dx onto what the buffer holds (beta = 1): the
// emitter folds the sum of two projections' input gradients (arith.addf of
// in_proj_qkvz's and in_proj_ba's dx) into the second GEMM. Each GEMM also
// runs alone (gdnrt_linear_data_grad, gdnrt_linear_weight_grad) for a
// caller that computes x between the two.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"
#include "Internal.h"
#include "Plan.h"

using namespace gdnrt;

namespace {

std::string describeShape(const Shape &shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.dims.size(); ++d)
    text += (d ? ", " : "") + std::to_string(shape.dims[d]);
  return text + "]";
}

/// True when the bytes of two tensors overlap (empty tensors overlap
/// nothing).
bool overlaps(const gdn_tensor_t &a, const gdn_tensor_t &b) {
  const size_t aBytes = Shape::of(a).bytes(), bBytes = Shape::of(b).bytes();
  if (aBytes == 0 || bBytes == 0)
    return false;
  const char *aBegin = static_cast<const char *>(a.data);
  const char *bBegin = static_cast<const char *>(b.data);
  return aBegin < bBegin + bBytes && bBegin < aBegin + aBytes;
}

/// Which GEMMs a call runs: both (gdnrt_linear_grad), or one half, for a
/// caller that needs dx before x exists (the generated backward folds the
/// gated RMSNorm's recomputation into the norm's backward, which reads dx
/// and writes the x that dweight reads; docs/codegen.md).
enum class Parts { kBoth, kData, kWeight };

int linearGrad(gdnrt_context_t *context, const gdn_tensor_t *dy,
               const gdn_tensor_t *x, const gdn_tensor_t *weight,
               const gdn_tensor_t *dx, const gdn_tensor_t *dweight,
               bool accumulate, Parts parts, const char *call) {
  if (!context)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, "the context is null");
  const bool data = parts != Parts::kWeight, weights = parts != Parts::kData;
  std::string error;
  if (!checkTensorArgument(dy, "output gradient dy", error) ||
      (weights && !checkTensorArgument(x, "input x", error)) ||
      (data && !checkTensorArgument(weight, "weight", error)) ||
      (data && !checkTensorArgument(dx, "input gradient dx", error)) ||
      (weights && !checkTensorArgument(dweight, "weight gradient dweight", error)))
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, error);
  // A half without x or the weight takes their shapes from the gradient
  // that has them: dx has x's, dweight the weight's.
  const gdn_tensor_t *xLike = weights ? x : dx;
  const gdn_tensor_t *weightLike = data ? weight : dweight;
  const gdn_dtype_t dtype = xLike->dtype;
  if ((dtype != GDN_BF16 && dtype != GDN_F16 && dtype != GDN_F32) ||
      dy->dtype != dtype || weightLike->dtype != dtype ||
      (data && dx->dtype != dtype) || (weights && dweight->dtype != dtype))
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                parts == Parts::kBoth
                    ? "dy, x, the weight, dx and dweight must share one dtype "
                      "among bf16, f16 and f32"
                : data ? "dy, the weight and dx must share one dtype among "
                         "bf16, f16 and f32"
                       : "dy, x and dweight must share one dtype among bf16, "
                         "f16 and f32");
  const Shape dys = Shape::of(*dy), xs = Shape::of(*xLike),
              ws = Shape::of(*weightLike);
  ProjectionSizes sizes;
  // A half names the tensor it was given for each shape.
  const ProjectionNames names = {weights ? "x" : "dx",
                                 data ? "the weight" : "dweight", "dy"};
  if (!checkProjectionShapes(xs, ws, dys, names, sizes, error))
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, error);
  const int64_t tokens = sizes.tokens, in = sizes.in, out = sizes.out;
  if (parts == Parts::kBoth) {
    const Shape dxs = Shape::of(*dx), dws = Shape::of(*dweight);
    if (dxs.dims != xs.dims)
      return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                  "dx has shape " + describeShape(dxs) + " but x has " +
                      describeShape(xs) + "; dx must have x's shape");
    if (dws.dims != ws.dims)
      return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                  "dweight has shape " + describeShape(dws) +
                      " but the weight has " + describeShape(ws) +
                      "; dweight must have the weight's shape");
  }
  // A GEMM that writes what it reads is undefined; so is one output in the
  // other.
  const std::pair<const gdn_tensor_t *, const char *> inputs[] = {
      {dy, "dy"}, {x, "x"}, {weight, "the weight"}, {dweight, "dweight"}};
  auto overlapped = [&](const gdn_tensor_t *output, const char *name,
                        size_t count) -> int {
    for (size_t i = 0; i < count; ++i)
      if (inputs[i].first && overlaps(*output, *inputs[i].first))
        return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                    std::string(name) + " overlaps " + inputs[i].second +
                        " in memory; give each gradient a buffer of its own");
    return GDN_SUCCESS;
  };
  if (data)
    if (int failed = overlapped(dx, "dx", 4))
      return failed;
  if (weights)
    if (int failed = overlapped(dweight, "dweight", 3))
      return failed;

  // A product over nothing is zero, and cuBLASLt does not take k = 0: with
  // no outputs dx is zero (unchanged when accumulating), with no tokens the
  // weight gradient is.
  auto zero = [&](const gdn_tensor_t &tensor) {
    const Shape shape = Shape::of(tensor);
    if (shape.bytes() == 0)
      return static_cast<int>(GDN_SUCCESS);
    if (cudaError_t failed =
            cudaMemsetAsync(tensor.data, 0, shape.bytes(), context->stream))
      return fail(GDN_ERROR_CUDA, call,
                  describeCuda("cudaMemsetAsync", failed));
    return static_cast<int>(GDN_SUCCESS);
  };
  if (data && out == 0) {
    if (!accumulate)
      if (int failed = zero(*dx))
        return failed;
  } else if (data) {
    ColumnMajorGemm gemm{};
    gemm.dtype = dtype;
    gemm.m = in, gemm.n = tokens, gemm.k = out, gemm.batch = 1;
    gemm.a = weight->data, gemm.lda = in;
    gemm.b = dy->data, gemm.ldb = out;
    gemm.c = dx->data, gemm.ldc = in;
    gemm.d = dx->data, gemm.ldd = in;
    gemm.beta = accumulate ? 1.0 : 0.0;
    gemm.tokenColumns = true;
    if (int failed = runGemm(context, gemm, call))
      return failed;
  }
  if (weights && tokens == 0) {
    if (int failed = zero(*dweight))
      return failed;
  } else if (weights) {
    ColumnMajorGemm gemm{};
    gemm.dtype = dtype;
    gemm.m = in, gemm.n = out, gemm.k = tokens;
    gemm.batch = 1;
    gemm.a = x->data, gemm.lda = in;
    gemm.b = dy->data, gemm.ldb = out, gemm.transposeB = true;
    gemm.c = dweight->data, gemm.ldc = in;
    gemm.d = dweight->data, gemm.ldd = in;
    if (int failed = runGemm(context, gemm, call))
      return failed;
  }
  return succeed();
}

} // namespace

extern "C" int gdnrt_linear_grad(gdnrt_context_t *context,
                                 const gdn_tensor_t *dy, const gdn_tensor_t *x,
                                 const gdn_tensor_t *weight,
                                 const gdn_tensor_t *dx,
                                 const gdn_tensor_t *dweight) {
  return linearGrad(context, dy, x, weight, dx, dweight, /*accumulate=*/false,
                    Parts::kBoth, "gdnrt_linear_grad");
}

extern "C" int gdnrt_linear_grad_accumulate(gdnrt_context_t *context,
                                            const gdn_tensor_t *dy,
                                            const gdn_tensor_t *x,
                                            const gdn_tensor_t *weight,
                                            const gdn_tensor_t *dx,
                                            const gdn_tensor_t *dweight) {
  return linearGrad(context, dy, x, weight, dx, dweight, /*accumulate=*/true,
                    Parts::kBoth, "gdnrt_linear_grad_accumulate");
}

extern "C" int gdnrt_linear_data_grad(gdnrt_context_t *context,
                                      const gdn_tensor_t *dy,
                                      const gdn_tensor_t *weight,
                                      const gdn_tensor_t *dx) {
  return linearGrad(context, dy, nullptr, weight, dx, nullptr,
                    /*accumulate=*/false, Parts::kData,
                    "gdnrt_linear_data_grad");
}

extern "C" int gdnrt_linear_weight_grad(gdnrt_context_t *context,
                                        const gdn_tensor_t *dy,
                                        const gdn_tensor_t *x,
                                        const gdn_tensor_t *dweight) {
  return linearGrad(context, dy, x, nullptr, nullptr, dweight,
                    /*accumulate=*/false, Parts::kWeight,
                    "gdnrt_linear_weight_grad");
}
