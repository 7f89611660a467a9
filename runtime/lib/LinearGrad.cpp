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
// in_proj_qkvz's and in_proj_ba's dx) into the second GEMM.
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

int linearGrad(gdnrt_context_t *context, const gdn_tensor_t *dy,
               const gdn_tensor_t *x, const gdn_tensor_t *weight,
               const gdn_tensor_t *dx, const gdn_tensor_t *dweight,
               bool accumulate, const char *call) {
  if (!context)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, "the context is null");
  std::string error;
  if (!checkTensorArgument(dy, "output gradient dy", error) ||
      !checkTensorArgument(x, "input x", error) ||
      !checkTensorArgument(weight, "weight", error) ||
      !checkTensorArgument(dx, "input gradient dx", error) ||
      !checkTensorArgument(dweight, "weight gradient dweight", error))
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, error);
  const gdn_dtype_t dtype = x->dtype;
  if ((dtype != GDN_BF16 && dtype != GDN_F16 && dtype != GDN_F32) ||
      dy->dtype != dtype || weight->dtype != dtype || dx->dtype != dtype ||
      dweight->dtype != dtype)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                "dy, x, the weight, dx and dweight must share one dtype among "
                "bf16, f16 and f32");
  const Shape dys = Shape::of(*dy), xs = Shape::of(*x), ws = Shape::of(*weight),
              dxs = Shape::of(*dx), dws = Shape::of(*dweight);
  ProjectionSizes sizes;
  if (!checkProjectionShapes(xs, ws, dys, "dy", sizes, error))
    return fail(GDN_ERROR_INVALID_ARGUMENT, call, error);
  const int64_t tokens = sizes.tokens, in = sizes.in, out = sizes.out;
  if (dxs.dims != xs.dims)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                "dx has shape " + describeShape(dxs) + " but x has " +
                    describeShape(xs) + "; dx must have x's shape");
  if (dws.dims != ws.dims)
    return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                "dweight has shape " + describeShape(dws) +
                    " but the weight has " + describeShape(ws) +
                    "; dweight must have the weight's shape");
  // A GEMM that writes what it reads is undefined; so is one output in the
  // other.
  const std::pair<const gdn_tensor_t *, const char *> inputs[] = {
      {dy, "dy"}, {x, "x"}, {weight, "the weight"}, {dweight, "dweight"}};
  for (auto [input, name] : inputs)
    if (overlaps(*dx, *input))
      return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                  std::string("dx overlaps ") + name +
                      " in memory; give each gradient a buffer of its own");
  for (auto [input, name] : {inputs[0], inputs[1], inputs[2]})
    if (overlaps(*dweight, *input))
      return fail(GDN_ERROR_INVALID_ARGUMENT, call,
                  std::string("dweight overlaps ") + name +
                      " in memory; give each gradient a buffer of its own");

  // A product over nothing is zero, and cuBLASLt does not take k = 0: with
  // no outputs dx is zero (unchanged when accumulating), with no tokens the
  // weight gradient is.
  auto zero = [&](const gdn_tensor_t &tensor, const Shape &shape) {
    if (cudaError_t failed =
            cudaMemsetAsync(tensor.data, 0, shape.bytes(), context->stream))
      return fail(GDN_ERROR_CUDA, call,
                  describeCuda("cudaMemsetAsync", failed));
    return static_cast<int>(GDN_SUCCESS);
  };
  if (out == 0) {
    if (!accumulate && dxs.bytes() > 0)
      if (int failed = zero(*dx, dxs))
        return failed;
  } else {
    ColumnMajorGemm data{};
    data.dtype = dtype;
    data.m = in, data.n = tokens, data.k = out, data.batch = 1;
    data.a = weight->data, data.lda = in;
    data.b = dy->data, data.ldb = out;
    data.c = dx->data, data.ldc = in;
    data.d = dx->data, data.ldd = in;
    data.beta = accumulate ? 1.0 : 0.0;
    data.tokenColumns = true;
    if (int failed = runGemm(context, data, call))
      return failed;
  }
  if (tokens == 0) {
    if (dws.bytes() > 0)
      if (int failed = zero(*dweight, dws))
        return failed;
  } else {
    ColumnMajorGemm parameter{};
    parameter.dtype = dtype;
    parameter.m = in, parameter.n = out, parameter.k = tokens;
    parameter.batch = 1;
    parameter.a = x->data, parameter.lda = in;
    parameter.b = dy->data, parameter.ldb = out, parameter.transposeB = true;
    parameter.c = dweight->data, parameter.ldc = in;
    parameter.d = dweight->data, parameter.ldd = in;
    if (int failed = runGemm(context, parameter, call))
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
                    "gdnrt_linear_grad");
}

extern "C" int gdnrt_linear_grad_accumulate(gdnrt_context_t *context,
                                            const gdn_tensor_t *dy,
                                            const gdn_tensor_t *x,
                                            const gdn_tensor_t *weight,
                                            const gdn_tensor_t *dx,
                                            const gdn_tensor_t *dweight) {
  return linearGrad(context, dy, x, weight, dx, dweight, /*accumulate=*/true,
                    "gdnrt_linear_grad_accumulate");
}
