// Functions the whole-function ABI cannot express get their kernels only,
// with a comment saying why: a runtime call gdnrt cannot take (an f64 or
// mixed-type gdn.linear or gdn.linear_grad, a dynamic non-token size, more
// than 6 dimensions), a sum, fill or slice the device calls do not take
// (an f64 sum, a fill of non-zeros, a slice across columns, an L2 norm of
// rows of a dynamic length), an argument
// returned unchanged, one value returned twice, a !gdn.packing argument, a
// declaration, two groups of one kind and different sizes.
// Whatever the reason, no function gets a signature table, a workspace or
// result-shape query, or an entry point of its own.
// RUN: gdn-translate --gdn-to-cuda %s | FileCheck %s --check-prefix=SOURCE \
// RUN:   --implicit-check-not=_signature --implicit-check-not=_workspace_bytes --implicit-check-not=_result_shapes
// RUN: gdn-translate --gdn-to-cuda-header %s | FileCheck %s --check-prefix=HEADER \
// RUN:   --implicit-check-not=_signature --implicit-check-not=_workspace_bytes --implicit-check-not=_result_shapes

// SOURCE-LABEL: // @returns_argument: 1 kernel(s)
// SOURCE: // No whole-function entry point: it returns an argument unchanged.
// SOURCE: extern "C" int gdn_returns_argument_k0_gated_rmsnorm(
// HEADER-LABEL: /* @returns_argument */
// HEADER-NEXT: int gdn_returns_argument_k0_gated_rmsnorm(
// HEADER-NEXT: /* No whole-function entry point for @returns_argument: it returns an argument unchanged. */
func.func @returns_argument(%o: tensor<?x4x32xbf16>, %z: tensor<?x4x32xbf16>, %w: tensor<32xbf16>)
    -> (tensor<?x4x32xbf16>, tensor<?x4x32xbf16>) {
  %y = gdn_kernel.gated_rmsnorm %o, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64}
      : (tensor<?x4x32xbf16>, tensor<?x4x32xbf16>, tensor<32xbf16>) -> tensor<?x4x32xbf16>
  return %y, %z : tensor<?x4x32xbf16>, tensor<?x4x32xbf16>
}

// Only one result buffer would be written.
// SOURCE-LABEL: // @returns_twice: 1 kernel(s)
// SOURCE: // No whole-function entry point: it returns one value twice.
// SOURCE: extern "C" int gdn_returns_twice_k0_gated_rmsnorm(
// HEADER-LABEL: /* @returns_twice */
// HEADER-NEXT: int gdn_returns_twice_k0_gated_rmsnorm(
// HEADER-NEXT: /* No whole-function entry point for @returns_twice: it returns one value twice. */
func.func @returns_twice(%o: tensor<?x4x32xbf16>, %z: tensor<?x4x32xbf16>, %w: tensor<32xbf16>)
    -> (tensor<?x4x32xbf16>, tensor<?x4x32xbf16>) {
  %y = gdn_kernel.gated_rmsnorm %o, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64}
      : (tensor<?x4x32xbf16>, tensor<?x4x32xbf16>, tensor<32xbf16>) -> tensor<?x4x32xbf16>
  return %y, %y : tensor<?x4x32xbf16>, tensor<?x4x32xbf16>
}

// The ABI passes tensors only: the packing must be built in the function
// from cu_seqlens (gdn.packing), not passed in.
// SOURCE-LABEL: // @packing_argument: 1 kernel(s)
// SOURCE: // No whole-function entry point: argument #6 has type !gdn.packing<seqs = ?, tokens = ?>, not a ranked tensor.
// SOURCE: extern "C" int gdn_packing_argument_k0_prologue(
// HEADER-LABEL: /* @packing_argument */
// HEADER-NEXT: int gdn_packing_argument_k0_prologue(
// HEADER-NEXT:     const gdn_packing_t *packing, cudaStream_t stream);
// HEADER-NEXT: /* No whole-function entry point for @packing_argument: argument #6 has type !gdn.packing<seqs = ?, tokens = ?>, not a ranked tensor. */
func.func @packing_argument(%mixed: tensor<?x384xbf16>, %conv: tensor<384x4xbf16>,
    %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
    %p: !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4xf32> {
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %conv, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64,
       head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>,
       l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false,
       threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>,
         tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return %g : tensor<?x4xf32>
}

// SOURCE-LABEL: // @external: 0 kernel(s)
// SOURCE: // No whole-function entry point: it is a declaration.
// HEADER-LABEL: /* @external */
// HEADER-NEXT: /* No whole-function entry point for @external: it is a declaration. */
func.func private @external(tensor<?x4x32xbf16>) -> tensor<?x4x32xbf16>

// gdnrt_linear runs bf16, f16 and f32 GEMMs of one element type; reference
// programs in f64 keep their kernels only.
// SOURCE-LABEL: // @linear_f64: 0 kernel(s)
// SOURCE: // No whole-function entry point: gdn.linear of tensor<?x8xf64> by tensor<4x8xf64> into tensor<?x4xf64> has no CUDA lowering (gdnrt_linear takes x and the weight in one element type among bf16, f16 and f32, and y in it or f32).
// HEADER-LABEL: /* @linear_f64 */
// HEADER-NEXT: /* No whole-function entry point for @linear_f64: gdn.linear of tensor<?x8xf64> by tensor<4x8xf64> into tensor<?x4xf64> has no CUDA lowering (gdnrt_linear takes x and the weight in one element type among bf16, f16 and f32, and y in it or f32). */
func.func @linear_f64(%x: tensor<?x8xf64>, %w: tensor<4x8xf64>) -> tensor<?x4xf64> {
  %y = gdn.linear %x, %w : (tensor<?x8xf64>, tensor<4x8xf64>) -> tensor<?x4xf64>
  return %y : tensor<?x4xf64>
}

// SOURCE-LABEL: // @linear_mixed: 0 kernel(s)
// SOURCE: // No whole-function entry point: gdn.linear of tensor<?x8xbf16> by tensor<4x8xf32> into tensor<?x4xbf16> has no CUDA lowering (gdnrt_linear takes x and the weight in one element type among bf16, f16 and f32, and y in it or f32).
func.func @linear_mixed(%x: tensor<?x8xbf16>, %w: tensor<4x8xf32>) -> tensor<?x4xbf16> {
  %y = gdn.linear %x, %w : (tensor<?x8xbf16>, tensor<4x8xf32>) -> tensor<?x4xbf16>
  return %y : tensor<?x4xbf16>
}

// y may be f32 beside bf16 x and weight (an f32 projection output,
// runtime-calls.mlir), never narrower than them.
// SOURCE-LABEL: // @linear_narrow_output: 0 kernel(s)
// SOURCE: // No whole-function entry point: gdn.linear of tensor<?x8xf32> by tensor<4x8xf32> into tensor<?x4xbf16> has no CUDA lowering (gdnrt_linear takes x and the weight in one element type among bf16, f16 and f32, and y in it or f32).
func.func @linear_narrow_output(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>) -> tensor<?x4xbf16> {
  %y = gdn.linear %x, %w : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xbf16>
  return %y : tensor<?x4xbf16>
}

// gdnrt_linear_grad likewise.
// SOURCE-LABEL: // @linear_grad_f64: 0 kernel(s)
// SOURCE: // No whole-function entry point: gdn.linear_grad of tensor<?x4xf64> and tensor<?x8xf64> by tensor<4x8xf64> has no CUDA lowering (gdnrt_linear_grad takes one element type among bf16, f16 and f32).
// HEADER-LABEL: /* @linear_grad_f64 */
// HEADER-NEXT: /* No whole-function entry point for @linear_grad_f64: gdn.linear_grad of tensor<?x4xf64> and tensor<?x8xf64> by tensor<4x8xf64> has no CUDA lowering (gdnrt_linear_grad takes one element type among bf16, f16 and f32). */
func.func @linear_grad_f64(%dy: tensor<?x4xf64>, %x: tensor<?x8xf64>, %w: tensor<4x8xf64>)
    -> (tensor<?x8xf64>, tensor<4x8xf64>) {
  %dx, %dw = gdn.linear_grad %dy, %x, %w
      : (tensor<?x4xf64>, tensor<?x8xf64>, tensor<4x8xf64>) -> (tensor<?x8xf64>, tensor<4x8xf64>)
  return %dx, %dw : tensor<?x8xf64>, tensor<4x8xf64>
}

// SOURCE-LABEL: // @linear_grad_mixed: 0 kernel(s)
// SOURCE: // No whole-function entry point: gdn.linear_grad of tensor<?x4xf32> and tensor<?x8xbf16> by tensor<4x8xbf16> has no CUDA lowering (gdnrt_linear_grad takes one element type among bf16, f16 and f32).
func.func @linear_grad_mixed(%dy: tensor<?x4xf32>, %x: tensor<?x8xbf16>, %w: tensor<4x8xbf16>)
    -> (tensor<?x8xbf16>, tensor<4x8xbf16>) {
  %dx, %dw = gdn.linear_grad %dy, %x, %w
      : (tensor<?x4xf32>, tensor<?x8xbf16>, tensor<4x8xbf16>) -> (tensor<?x8xbf16>, tensor<4x8xbf16>)
  return %dx, %dw : tensor<?x8xbf16>, tensor<4x8xbf16>
}

// A sum of cotangents runs as a kernel in bf16, f16 or f32 (or in the
// projections' GEMMs, GradientSums.h), not in f64; a fill only of zeros; a
// slice only of leading rows.
// SOURCE-LABEL: // @sum_in_f64: 0 kernel(s)
// SOURCE: // No whole-function entry point: arith.addf on tensor<?x8xf64> has no CUDA lowering (its kernels take bf16, f16 or f32).
// HEADER-LABEL: /* @sum_in_f64 */
// HEADER-NEXT: /* No whole-function entry point for @sum_in_f64: arith.addf on tensor<?x8xf64> has no CUDA lowering (its kernels take bf16, f16 or f32). */
func.func @sum_in_f64(%a: tensor<?x8xf64>, %b: tensor<?x8xf64>) -> tensor<?x8xf64> {
  %s = arith.addf %a, %b : tensor<?x8xf64>
  return %s : tensor<?x8xf64>
}

// An L2 norm runs on rows of a static length, as every device call takes
// static sizes but the tokens'.
// SOURCE-LABEL: // @l2norm_of_dynamic_rows: 0 kernel(s)
// SOURCE: // No whole-function entry point: gdn.l2norm on tensor<4x?xbf16> has no CUDA lowering (static sizes are needed except the token dimension).
// HEADER-LABEL: /* @l2norm_of_dynamic_rows */
func.func @l2norm_of_dynamic_rows(%x: tensor<4x?xbf16>) -> tensor<4x?xbf16> {
  %y = gdn.l2norm %x : tensor<4x?xbf16>
  return %y : tensor<4x?xbf16>
}

// SOURCE-LABEL: // @fill_of_ones: 0 kernel(s)
// SOURCE: // No whole-function entry point: arith.constant dense<1.000000e+00> : tensor<4x8xf32> has no CUDA lowering (only zero tensors run, as fills).
func.func @fill_of_ones(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = arith.constant dense<1.0> : tensor<4x8xf32>
  %s = arith.addf %a, %c : tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// SOURCE-LABEL: // @column_slice: 0 kernel(s)
// SOURCE: // No whole-function entry point: tensor.extract_slice tensor<4x4xf32> has no CUDA lowering (slices run as copies of leading rows: an offset and extent along dimension 0 only).
func.func @column_slice(%a: tensor<4x8xf32>) -> tensor<4x4xf32> {
  %s = tensor.extract_slice %a[0, 4] [4, 4] [1, 1] : tensor<4x8xf32> to tensor<4x4xf32>
  return %s : tensor<4x4xf32>
}

// SOURCE-LABEL: // @interior_block: 0 kernel(s)
// SOURCE: // No whole-function entry point: tensor.insert_slice tensor<4x8xf32> has no CUDA lowering (insertions run as copies of leading rows, an offset and extent along dimension 0 only, or of a block of columns of a 2-D tensor, every row).
func.func @interior_block(%a: tensor<4x8xf32>, %b: tensor<2x4xf32>) -> tensor<4x8xf32> {
  %s = tensor.insert_slice %b into %a[1, 4] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// Shapes are C expressions of the arguments' token counts; other sizes must
// be static, as for the kernels.
// SOURCE-LABEL: // @gather_dynamic_features: 0 kernel(s)
// SOURCE: // No whole-function entry point: gdn_comm.all_gather on tensor<?x?xbf16> has no CUDA lowering (static sizes are needed except the token dimension).
func.func @gather_dynamic_features(%x: tensor<?x?xbf16>) -> tensor<?x?xbf16> {
  %y = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 2>, dim = 0 : i64}
      : tensor<?x?xbf16> -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}

// SOURCE-LABEL: // @shard_rank7: 0 kernel(s)
// SOURCE: // No whole-function entry point: gdn_comm.local_shard on tensor<2x2x2x2x2x2x2xf32> has no CUDA lowering (gdn_tensor_t holds at most 6 dimensions).
func.func @shard_rank7(%x: tensor<2x2x2x2x2x2x2xf32>) -> tensor<1x2x2x2x2x2x2xf32> {
  %y = gdn_comm.local_shard %x {group = #gdn_comm.group<cp, 2>, dim = 0 : i64}
      : tensor<2x2x2x2x2x2x2xf32> -> tensor<1x2x2x2x2x2x2xf32>
  return %y : tensor<1x2x2x2x2x2x2xf32>
}

// A context binds one communicator per kind of group: two CP groups of
// different sizes cannot both be bound.
// SOURCE-LABEL: // @two_cp_sizes: 0 kernel(s)
// SOURCE: // No whole-function entry point: it uses cp groups of 2 and 4 ranks (a context binds one communicator per kind).
func.func @two_cp_sizes(%x: tensor<?x8xbf16>) -> (tensor<?x8xbf16>, tensor<?x8xbf16>) {
  %two = gdn_comm.all_gather %x {group = #gdn_comm.group<cp, 2>, dim = 0 : i64}
      : tensor<?x8xbf16> -> tensor<?x8xbf16>
  %four = gdn_comm.all_gather %x {group = #gdn_comm.group<cp, 4>, dim = 0 : i64}
      : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return %two, %four : tensor<?x8xbf16>, tensor<?x8xbf16>
}

