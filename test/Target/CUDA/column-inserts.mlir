// gdn-translate --gdn-to-cuda on blocks of columns inserted into a zero
// fill (gdn-merge-projection-grads stacks the input projections'
// cotangents so; InsertChains.h). Parts that no kernel writes in place
// (here: arguments) are copied row by row into the chain's buffer, and
// the fill, whose every column the insertions write, is skipped; each
// part must have the stack's rows (a run-time check). Where a kernel
// writes its part in place, the target prints its row stride into the
// kernel's Config instead (nvcc-f32-projections.test).
// RUN: gdn-translate --gdn-to-cuda %s | FileCheck %s

// CHECK-LABEL: static int gdn_stack_arguments_check_args(
// CHECK: if (!(args[0].shape[0] == args[2].shape[0]))
// CHECK: if (!(args[1].shape[0] == args[2].shape[0]))
// CHECK-LABEL: extern "C" int gdn_stack_arguments(
// CHECK: // every row is written by the insertions that follow, in place
// CHECK-NOT: cudaMemsetAsync
// CHECK: // in place
// CHECK-NEXT: if (cudaMemcpy2DAsync(static_cast<char *>([[S:temp[0-9]+]].data) + 0, 64, args[0].data, 16, 16, args[0].shape[0], cudaMemcpyDeviceToDevice, stream) != cudaSuccess)
// CHECK: // in place
// CHECK-NEXT: if (cudaMemcpy2DAsync(static_cast<char *>([[S]].data) + 16, 64, args[1].data, 48, 48, args[1].shape[0], cudaMemcpyDeviceToDevice, stream) != cudaSuccess)
// CHECK: gdnrt_linear_grad(context, &[[S]], &args[2], &args[3], &results[0], &results[1])
func.func @stack_arguments(%a: tensor<?x8xbf16>, %b: tensor<?x24xbf16>, %x: tensor<?x16xbf16>,
                           %w: tensor<32x16xbf16>) -> (tensor<?x16xbf16>, tensor<32x16xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %x, %c0 : tensor<?x16xbf16>
  %zero = arith.constant 0.0 : bf16
  %fill = tensor.splat %zero[%t] : tensor<?x32xbf16>
  %s0 = tensor.insert_slice %a into %fill[0, 0] [%t, 8] [1, 1] : tensor<?x8xbf16> into tensor<?x32xbf16>
  %s1 = tensor.insert_slice %b into %s0[0, 8] [%t, 24] [1, 1] : tensor<?x24xbf16> into tensor<?x32xbf16>
  %dx, %dw = gdn.linear_grad %s1, %x, %w : (tensor<?x32xbf16>, tensor<?x16xbf16>, tensor<32x16xbf16>) -> (tensor<?x16xbf16>, tensor<32x16xbf16>)
  return %dx, %dw : tensor<?x16xbf16>, tensor<32x16xbf16>
}

// A token's features flattened into one row: a view of its source, or,
// returned, a copy into the result.
// CHECK-LABEL: extern "C" int gdn_flatten(
// CHECK: gdn_tensor_t view0 = {static_cast<char *>(args[0].data) + 0, {args[0].shape[0], 16}, 2, GDN_BF16};
// CHECK: // view0: the rows of args[0], flattened, in place
// CHECK: gdnrt_linear_grad(context, &view0, &args[1], &args[2], &results[0], &results[1])
// CHECK: if (cudaMemcpyAsync(results[2].data, args[0].data, static_cast<size_t>(static_cast<int64_t>(args[0].shape[0]) * 16) * 2, cudaMemcpyDeviceToDevice, stream) != cudaSuccess)
func.func @flatten(%z: tensor<?x2x8xbf16>, %x: tensor<?x16xbf16>, %w: tensor<16x16xbf16>)
    -> (tensor<?x16xbf16>, tensor<16x16xbf16>, tensor<?x16xbf16>) {
  %flat = tensor.collapse_shape %z [[0], [1, 2]] : tensor<?x2x8xbf16> into tensor<?x16xbf16>
  %dx, %dw = gdn.linear_grad %flat, %x, %w : (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<16x16xbf16>) -> (tensor<?x16xbf16>, tensor<16x16xbf16>)
  %again = tensor.collapse_shape %z [[0], [1, 2]] : tensor<?x2x8xbf16> into tensor<?x16xbf16>
  return %dx, %dw, %again : tensor<?x16xbf16>, tensor<16x16xbf16>, tensor<?x16xbf16>
}

// Other collapses have no lowering.
// CHECK: // No whole-function entry point: tensor.collapse_shape tensor<2x2x8xbf16> has no CUDA lowering (collapses run as a token's features flattened into one row: {{\[\[}}0], [1, ...]], static).
func.func @tokens_merged(%z: tensor<2x2x8xbf16>) -> tensor<4x8xbf16> {
  %flat = tensor.collapse_shape %z [[0, 1], [2]] : tensor<2x2x8xbf16> into tensor<4x8xbf16>
  return %flat : tensor<4x8xbf16>
}
