// gdn-translate --gdn-to-cuda on the calls of the backward: gdn.linear_grad as gdnrt_linear_grad (x of rank 3 and 2), sums of the input projections' x gradients (arith.addf) folded into accumulating GEMMs (gdnrt_linear_grad_accumulate, Qwen3-Next's pair and Qwen3.5's chain under SP), gdn.merge_qkvz and gdn.merge_qkv as strided device copies; result shapes, run-time shape conditions and roles.
// RUN: gdn-translate --gdn-to-cuda %s | FileCheck %s

// gdn.linear_grad is one gdnrt call: dx has x's shape (tokens and heads),
// dW the weight's; dy and x are tokens, the weight and dW parameters; dy
// and x must have one token count, checked with the arguments.
// CHECK-LABEL: // @linear_grad_per_head: 0 kernel(s)
// CHECK-NOT: No whole-function entry point
// CHECK: static const gdn_role_t gdn_linear_grad_per_head_arg_roles[] = {GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER};
// CHECK: static const gdn_role_t gdn_linear_grad_per_head_result_roles[] = {GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER};
// CHECK: static size_t gdn_linear_grad_per_head_layout(
// CHECK-NEXT:   size_t bytes = 0;
// CHECK-NEXT:   offsets[0] = bytes;
// CHECK-NEXT:   return bytes;
// CHECK: static int gdn_linear_grad_per_head_check_args(
// CHECK:   if (!gdn::checkTensor(args[2], GDN_BF16, {256, 256}))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   if (!(args[0].shape[0] == args[1].shape[0]))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   return GDN_SUCCESS;
// CHECK: extern "C" int gdn_linear_grad_per_head_result_shapes(
// CHECK:   results[0].shape[0] = args[1].shape[0];
// CHECK-NEXT:   results[0].shape[1] = 4;
// CHECK-NEXT:   results[0].shape[2] = 64;
// CHECK:   results[1].shape[0] = 256;
// CHECK-NEXT:   results[1].shape[1] = 256;
// CHECK: extern "C" int gdn_linear_grad_per_head(
// CHECK-NOT: cudaStream_t
// CHECK:   if (!gdn::checkTensor(results[1], GDN_BF16, {256, 256}))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   // gdn.linear_grad at loc(
// CHECK-NEXT:   if (int error = gdnrt_linear_grad(context, &args[0], &args[1], &args[2], &results[0], &results[1]))
// CHECK-NEXT:     return error;
// CHECK-NEXT:   return GDN_SUCCESS;
func.func @linear_grad_per_head(%dy: tensor<?x256xbf16>, %x: tensor<?x4x64xbf16>, %w: tensor<256x256xbf16>)
    -> (tensor<?x4x64xbf16>, tensor<256x256xbf16>) {
  %dx, %dw = gdn.linear_grad %dy, %x, %w
      : (tensor<?x256xbf16>, tensor<?x4x64xbf16>, tensor<256x256xbf16>)
      -> (tensor<?x4x64xbf16>, tensor<256x256xbf16>)
  return %dx, %dw : tensor<?x4x64xbf16>, tensor<256x256xbf16>
}

// Qwen3-Next's input projections read one x: the sum of their x gradients
// is built in the result buffer by their data GEMMs, the first in program
// order writing it, the second accumulating onto it; no temporary, no add.
// CHECK-LABEL: // @input_projections: 0 kernel(s)
// CHECK-NOT: No whole-function entry point
// CHECK: static const gdn_role_t gdn_input_projections_result_roles[] = {GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER, GDN_ROLE_PARAMETER};
// CHECK: static size_t gdn_input_projections_layout(
// CHECK-NEXT:   size_t bytes = 0;
// CHECK-NEXT:   offsets[0] = bytes;
// CHECK-NEXT:   return bytes;
// CHECK: static int gdn_input_projections_check_args(
// CHECK:   if (!(args[1].shape[0] == args[2].shape[0]))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   if (!(args[0].shape[0] == args[2].shape[0]))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   return GDN_SUCCESS;
// CHECK: extern "C" int gdn_input_projections(
// CHECK:   if (!gdn::checkTensor(results[0], GDN_BF16, {args[2].shape[0], 32}))
// CHECK:   // gdn.linear_grad at loc(
// CHECK-NEXT:   if (int error = gdnrt_linear_grad(context, &args[1], &args[2], &args[4], &results[0], &results[2]))
// CHECK-NEXT:     return error;
// CHECK-NEXT:   // gdn.linear_grad at loc(
// CHECK-NEXT:   // dx accumulates onto the sum of input gradients
// CHECK-NEXT:   if (int error = gdnrt_linear_grad_accumulate(context, &args[0], &args[2], &args[3], &results[0], &results[1]))
// CHECK-NEXT:     return error;
// CHECK-NEXT:   // arith.addf at loc(
// CHECK-NEXT:   // summed in place by the gdn.linear_grad calls of its terms
// CHECK-NEXT:   return GDN_SUCCESS;
func.func @input_projections(%qkvz: tensor<?x40xbf16>, %ba: tensor<?x12xbf16>, %x: tensor<?x32xbf16>,
                             %w_qkvz: tensor<40x32xbf16>, %w_ba: tensor<12x32xbf16>)
    -> (tensor<?x32xbf16>, tensor<40x32xbf16>, tensor<12x32xbf16>) {
  %dx_ba, %dw_ba = gdn.linear_grad %ba, %x, %w_ba
      : (tensor<?x12xbf16>, tensor<?x32xbf16>, tensor<12x32xbf16>) -> (tensor<?x32xbf16>, tensor<12x32xbf16>)
  %dx_qkvz, %dw_qkvz = gdn.linear_grad %qkvz, %x, %w_qkvz
      : (tensor<?x40xbf16>, tensor<?x32xbf16>, tensor<40x32xbf16>) -> (tensor<?x32xbf16>, tensor<40x32xbf16>)
  %dx = arith.addf %dx_ba, %dx_qkvz : tensor<?x32xbf16>
  return %dx, %dw_qkvz, %dw_ba : tensor<?x32xbf16>, tensor<40x32xbf16>, tensor<12x32xbf16>
}

// gdn-split-projections' weight gradient: two parts' gradients stacked into
// zeros, then regrouped; a parameter's gradient, not rows of the pack.
// The zeros and both insertions share one buffer (InsertChains.h), and no
// fill runs, the two parts covering every row. The first part's GEMM writes
// its rows there itself (no copy); the second's rows start 128 bytes in,
// off the 256-byte alignment kernels rely on, so it has its own buffer and
// its insertion copies only its rows.
// CHECK-LABEL: // @stacked_weight_grads: 0 kernel(s)
// CHECK: static const gdn_role_t gdn_stacked_weight_grads_result_roles[] = {GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER};
// CHECK: static size_t gdn_stacked_weight_grads_layout(
// CHECK: offsets[0] = bytes; // [[SECOND:temp[0-9]+]]
// CHECK-NEXT: bytes += gdn::alignWorkspace(sizeof(__nv_bfloat16) * static_cast<size_t>(2) * static_cast<size_t>(32));
// CHECK-NEXT: offsets[1] = bytes; // [[STACK:temp[0-9]+]]
// CHECK-NEXT: bytes += gdn::alignWorkspace(sizeof(__nv_bfloat16) * static_cast<size_t>(4) * static_cast<size_t>(32));
// CHECK-NEXT: offsets[2] = bytes;
// CHECK-NEXT: return bytes;
// CHECK: extern "C" int gdn_stacked_weight_grads(
// CHECK: gdn_tensor_t [[FIRST:view[0-9]+]] = {static_cast<char *>([[STACK]].data) + 0, {2, 32}, 2, GDN_BF16};
// CHECK-NOT: cudaMemsetAsync
// CHECK: gdnrt_linear_grad(context, &args[0], &args[2], &args[3], &results[0], &[[FIRST]])
// CHECK: gdnrt_linear_grad_accumulate(context, &args[1], &args[2], &args[4], &results[0], &[[SECOND]])
// CHECK: // tensor.splat at
// CHECK-NEXT: // every row is written by the insertions that follow, in place
// CHECK-NEXT: // tensor.insert_slice at
// CHECK-NEXT: // [[FIRST]]: rows of [[STACK]], written in place by its op
// CHECK-NEXT: // tensor.insert_slice at
// CHECK-NEXT: // in place
// CHECK-NEXT: if (cudaMemcpyAsync(static_cast<char *>([[STACK]].data) + 128, [[SECOND]].data, 128, cudaMemcpyDeviceToDevice, stream) != cudaSuccess)
// CHECK: static_cast<const char *>([[STACK]].data) + 0
// CHECK: return GDN_SUCCESS;
func.func @stacked_weight_grads(%db: tensor<?x2xbf16>, %da: tensor<?x2xbf16>, %x: tensor<?x32xbf16>,
                                %w_b: tensor<2x32xbf16>, %w_a: tensor<2x32xbf16>)
    -> (tensor<?x32xbf16>, tensor<4x32xbf16>) {
  %dx_b, %dw_b = gdn.linear_grad %db, %x, %w_b
      : (tensor<?x2xbf16>, tensor<?x32xbf16>, tensor<2x32xbf16>) -> (tensor<?x32xbf16>, tensor<2x32xbf16>)
  %dx_a, %dw_a = gdn.linear_grad %da, %x, %w_a
      : (tensor<?x2xbf16>, tensor<?x32xbf16>, tensor<2x32xbf16>) -> (tensor<?x32xbf16>, tensor<2x32xbf16>)
  %dx = arith.addf %dx_b, %dx_a : tensor<?x32xbf16>
  %zero = arith.constant 0.0 : bf16
  %zeros = tensor.splat %zero : tensor<4x32xbf16>
  %s0 = tensor.insert_slice %dw_b into %zeros[0, 0] [2, 32] [1, 1] : tensor<2x32xbf16> into tensor<4x32xbf16>
  %s1 = tensor.insert_slice %dw_a into %s0[2, 0] [2, 32] [1, 1] : tensor<2x32xbf16> into tensor<4x32xbf16>
  %dw = gdn.regroup_sections %s1 {dim = 0 : i64, groups = 2 : i64, section_sizes = array<i64: 2, 2>}
      : tensor<4x32xbf16> -> tensor<4x32xbf16>
  return %dx, %dw : tensor<?x32xbf16>, tensor<4x32xbf16>
}

// Insertions that do not write every row keep the fill (in place); a fill
// that is also returned is copied before the insertion writes its rows.
// CHECK-LABEL: // @insertions_partial_and_shared: 0 kernel(s)
// CHECK: extern "C" int gdn_insertions_partial_and_shared(
// CHECK: // tensor.splat at
// CHECK-NEXT: if (cudaMemsetAsync(results[0].data, 0,
// CHECK: // tensor.insert_slice at
// CHECK-NEXT: // in place
// CHECK-NEXT: if (cudaMemcpyAsync(static_cast<char *>(results[0].data) + 64, args[0].data, 64,
// CHECK: // tensor.splat at
// CHECK-NEXT: if (cudaMemsetAsync(results[1].data, 0,
// CHECK: // tensor.insert_slice at
// CHECK-NEXT: if (cudaMemcpyAsync(results[2].data, results[1].data, {{.*}}, cudaMemcpyDeviceToDevice, stream) != cudaSuccess ||
// CHECK-NEXT: cudaMemcpyAsync(static_cast<char *>(results[2].data) + 0, args[0].data, 64,
func.func @insertions_partial_and_shared(%part: tensor<1x32xbf16>)
    -> (tensor<4x32xbf16>, tensor<4x32xbf16>, tensor<4x32xbf16>) {
  %zero = arith.constant 0.0 : bf16
  %zeros = tensor.splat %zero : tensor<4x32xbf16>
  %partial = tensor.insert_slice %part into %zeros[1, 0] [1, 32] [1, 1] : tensor<1x32xbf16> into tensor<4x32xbf16>
  %shared = tensor.splat %zero : tensor<4x32xbf16>
  %copied = tensor.insert_slice %part into %shared[0, 0] [1, 32] [1, 1] : tensor<1x32xbf16> into tensor<4x32xbf16>
  return %partial, %shared, %copied : tensor<4x32xbf16>, tensor<4x32xbf16>, tensor<4x32xbf16>
}

// Qwen3.5 under SP: a chain of three additions over four projections, the
// sum scattered over the SP ranks. The partial sums and the terms share one
// temporary; the first GEMM writes it, the three others accumulate, then the
// reduce_scatter reads it.
// CHECK-LABEL: // @four_projections_sp: 0 kernel(s)
// CHECK-NOT: No whole-function entry point
// CHECK: static const gdn_role_t gdn_four_projections_sp_arg_roles[] = {GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER, GDN_ROLE_PARAMETER, GDN_ROLE_PARAMETER, GDN_ROLE_PARAMETER};
// CHECK: static const gdn_role_t gdn_four_projections_sp_result_roles[] = {GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER, GDN_ROLE_PARAMETER, GDN_ROLE_PARAMETER, GDN_ROLE_PARAMETER};
// CHECK: static size_t gdn_four_projections_sp_layout(
// CHECK-NEXT:   size_t bytes = 0;
// CHECK-NEXT:   offsets[0] = bytes; // temp0
// CHECK-NEXT:   bytes += gdn::alignWorkspace(sizeof(__nv_bfloat16) * static_cast<size_t>(args[4].shape[0]) * static_cast<size_t>(16));
// CHECK-NEXT:   offsets[1] = bytes; // staging of gdn_comm.reduce_scatter
// CHECK: extern "C" int gdn_four_projections_sp(
// CHECK:   gdn_tensor_t temp0 = {base + offsets[0], {args[4].shape[0], 16}, 2, GDN_BF16};
// CHECK-NEXT:   void *staging0 =
// CHECK:   // gdn.linear_grad at loc(
// CHECK-NEXT:   if (int error = gdnrt_linear_grad(context, &args[3], &args[4], &args[8], &temp0, &results[4]))
// CHECK-NEXT:     return error;
// CHECK-NEXT:   // gdn.linear_grad at loc(
// CHECK-NEXT:   // dx accumulates onto the sum of input gradients
// CHECK-NEXT:   if (int error = gdnrt_linear_grad_accumulate(context, &args[2], &args[4], &args[7], &temp0, &results[3]))
// CHECK-NEXT:     return error;
// CHECK-NEXT:   // arith.addf at loc(
// CHECK-NEXT:   // summed in place by the gdn.linear_grad calls of its terms
// CHECK-NEXT:   // gdn.linear_grad at loc(
// CHECK-NEXT:   // dx accumulates onto the sum of input gradients
// CHECK-NEXT:   if (int error = gdnrt_linear_grad_accumulate(context, &args[1], &args[4], &args[6], &temp0, &results[2]))
// CHECK-NEXT:     return error;
// CHECK-NEXT:   // arith.addf at loc(
// CHECK-NEXT:   // summed in place by the gdn.linear_grad calls of its terms
// CHECK-NEXT:   // gdn.linear_grad at loc(
// CHECK-NEXT:   // dx accumulates onto the sum of input gradients
// CHECK-NEXT:   if (int error = gdnrt_linear_grad_accumulate(context, &args[0], &args[4], &args[5], &temp0, &results[1]))
// CHECK-NEXT:     return error;
// CHECK-NEXT:   // arith.addf at loc(
// CHECK-NEXT:   // summed in place by the gdn.linear_grad calls of its terms
// CHECK-NEXT:   // gdn_comm.reduce_scatter at loc(
// CHECK-NEXT:   if (int error = gdnrt_reduce_scatter(context, GDNRT_GROUP_SP, 2, &temp0, &results[0], 0, staging0))
func.func @four_projections_sp(%dq: tensor<?x64xbf16>, %dz: tensor<?x2x8xbf16>, %db: tensor<?x2xbf16>,
                               %da: tensor<?x2xbf16>, %x: tensor<?x16xbf16>,
                               %w_q: tensor<64x16xbf16>, %w_z: tensor<16x16xbf16>,
                               %w_b: tensor<2x16xbf16>, %w_a: tensor<2x16xbf16>)
    -> (tensor<?x16xbf16, #gdn.seq<contiguous, ranks = 2>>, tensor<64x16xbf16>, tensor<16x16xbf16>,
        tensor<2x16xbf16>, tensor<2x16xbf16>) {
  %dx_a, %dw_a = gdn.linear_grad %da, %x, %w_a
      : (tensor<?x2xbf16>, tensor<?x16xbf16>, tensor<2x16xbf16>) -> (tensor<?x16xbf16>, tensor<2x16xbf16>)
  %dx_b, %dw_b = gdn.linear_grad %db, %x, %w_b
      : (tensor<?x2xbf16>, tensor<?x16xbf16>, tensor<2x16xbf16>) -> (tensor<?x16xbf16>, tensor<2x16xbf16>)
  %s0 = arith.addf %dx_a, %dx_b : tensor<?x16xbf16>
  %dx_z, %dw_z = gdn.linear_grad %dz, %x, %w_z
      : (tensor<?x2x8xbf16>, tensor<?x16xbf16>, tensor<16x16xbf16>) -> (tensor<?x16xbf16>, tensor<16x16xbf16>)
  %s1 = arith.addf %s0, %dx_z : tensor<?x16xbf16>
  %dx_q, %dw_q = gdn.linear_grad %dq, %x, %w_q
      : (tensor<?x64xbf16>, tensor<?x16xbf16>, tensor<64x16xbf16>) -> (tensor<?x16xbf16>, tensor<64x16xbf16>)
  %s2 = arith.addf %s1, %dx_q : tensor<?x16xbf16>
  %dx = gdn_comm.reduce_scatter %s2 {group = #gdn_comm.group<sp, 2>, dim = 0 : i64}
      : tensor<?x16xbf16> -> tensor<?x16xbf16, #gdn.seq<contiguous, ranks = 2>>
  return %dx, %dw_q, %dw_z, %dw_b, %dw_a
      : tensor<?x16xbf16, #gdn.seq<contiguous, ranks = 2>>, tensor<64x16xbf16>, tensor<16x16xbf16>,
        tensor<2x16xbf16>, tensor<2x16xbf16>
}

// merge_qkvz is split_qkvz's copies the other way (the geometry of @split in
// runtime-calls.mlir): one strided copy per section over (tokens, key
// heads), in one launch. The slice count is read from each source; all four
// token counts must agree.
// CHECK-LABEL: // @merge_qkvz: 0 kernel(s)
// CHECK: static const gdn_role_t gdn_merge_qkvz_arg_roles[] = {GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_TOKENS};
// CHECK: static int gdn_merge_qkvz_check_args(
// CHECK:   if (!(args[0].shape[0] == args[1].shape[0]))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   if (!(args[0].shape[0] == args[2].shape[0]))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   if (!(args[0].shape[0] == args[3].shape[0]))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK: extern "C" int gdn_merge_qkvz_result_shapes(
// CHECK:   results[0].shape[0] = args[0].shape[0];
// CHECK-NEXT:   results[0].shape[1] = 40;
// CHECK:   results[1].shape[0] = args[0].shape[0];
// CHECK-NEXT:   results[1].shape[1] = 12;
// CHECK: extern "C" int gdn_merge_qkvz(
// CHECK:   cudaStream_t stream = gdnrt_context_stream(context);
// CHECK:   // gdn.merge_qkvz at loc(
// CHECK-NEXT:   {
// CHECK-NEXT:     const gdn::StridedCopy copies[] = {
// CHECK-NEXT:         {static_cast<char *>(results[0].data) + 0, 40, 80, static_cast<const char *>(args[0].data) + 0, 8, 56, 8, 2, static_cast<size_t>(args[0].shape[0])},
// CHECK-NEXT:         {static_cast<char *>(results[0].data) + 8, 40, 80, static_cast<const char *>(args[0].data) + 16, 8, 56, 8, 2, static_cast<size_t>(args[0].shape[0])},
// CHECK-NEXT:         {static_cast<char *>(results[0].data) + 16, 40, 80, static_cast<const char *>(args[0].data) + 32, 12, 56, 12, 2, static_cast<size_t>(args[0].shape[0])},
// CHECK-NEXT:         {static_cast<char *>(results[0].data) + 28, 40, 80, static_cast<const char *>(args[1].data) + 0, 12, 24, 12, 2, static_cast<size_t>(args[1].shape[0])},
// CHECK-NEXT:         {static_cast<char *>(results[1].data) + 0, 12, 24, static_cast<const char *>(args[2].data) + 0, 6, 12, 6, 2, static_cast<size_t>(args[2].shape[0])},
// CHECK-NEXT:         {static_cast<char *>(results[1].data) + 6, 12, 24, static_cast<const char *>(args[3].data) + 0, 6, 12, 6, 2, static_cast<size_t>(args[3].shape[0])},
// CHECK-NEXT:     };
// CHECK-NEXT:     if (gdn::stridedCopies(copies, 6, stream) != cudaSuccess)
// CHECK-NEXT:       return GDN_ERROR_CUDA;
// CHECK-NEXT:   }
// CHECK-NEXT:   return GDN_SUCCESS;
func.func @merge_qkvz(%m: tensor<?x28xbf16>, %z: tensor<?x6x2xbf16>, %b: tensor<?x6xbf16>, %a: tensor<?x6xbf16>)
    -> (tensor<?x40xbf16>, tensor<?x12xbf16>) {
  %qkvz, %ba = gdn.merge_qkvz %m, %z, %b, %a {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x28xbf16>, tensor<?x6x2xbf16>, tensor<?x6xbf16>, tensor<?x6xbf16>)
      -> (tensor<?x40xbf16>, tensor<?x12xbf16>)
  return %qkvz, %ba : tensor<?x40xbf16>, tensor<?x12xbf16>
}

// merge_qkv: one copy per part, each part's rows into its column range of
// the 56-byte conv channels.
// CHECK-LABEL: // @merge_qkv: 0 kernel(s)
// CHECK: extern "C" int gdn_merge_qkv_result_shapes(
// CHECK:   results[0].shape[0] = args[0].shape[0];
// CHECK-NEXT:   results[0].shape[1] = 28;
// CHECK: extern "C" int gdn_merge_qkv(
// CHECK:   // gdn.merge_qkv at loc(
// CHECK-NEXT:   {
// CHECK-NEXT:     const gdn::StridedCopy copies[] = {
// CHECK-NEXT:         {static_cast<char *>(results[0].data) + 0, 56, 56, static_cast<const char *>(args[0].data) + 0, 16, 16, 16, 1, static_cast<size_t>(args[0].shape[0])},
// CHECK-NEXT:         {static_cast<char *>(results[0].data) + 16, 56, 56, static_cast<const char *>(args[1].data) + 0, 16, 16, 16, 1, static_cast<size_t>(args[1].shape[0])},
// CHECK-NEXT:         {static_cast<char *>(results[0].data) + 32, 56, 56, static_cast<const char *>(args[2].data) + 0, 24, 24, 24, 1, static_cast<size_t>(args[2].shape[0])},
// CHECK-NEXT:     };
// CHECK-NEXT:     if (gdn::stridedCopies(copies, 3, stream) != cudaSuccess)
// CHECK-NEXT:       return GDN_ERROR_CUDA;
// CHECK-NEXT:   }
// CHECK-NEXT:   return GDN_SUCCESS;
func.func @merge_qkv(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x6x2xbf16>) -> tensor<?x28xbf16> {
  %m = gdn.merge_qkv %q, %k, %v : tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x6x2xbf16> -> tensor<?x28xbf16>
  return %m : tensor<?x28xbf16>
}
