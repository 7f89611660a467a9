// gdn-select-kernels picks the prologue's vector: 8 bytes of q, k, v a thread
// where the conv input is twice as wide (f32 beside bf16 or f16) and a key head
// fits a warp's 8-byte lanes, else 16 (elided: the attribute's default);
// prologue-vector-bytes forces 16, or 8 where the op can take it.
// RUN: gdn-opt %s --gdn-select-kernels | FileCheck %s
// RUN: gdn-opt %s --gdn-select-kernels="prologue-vector-bytes=16" | FileCheck %s --check-prefix=SIXTEEN
// RUN: gdn-opt %s --gdn-select-kernels="prologue-vector-bytes=8" | FileCheck %s
// RUN: not gdn-opt %s --gdn-select-kernels="prologue-vector-bytes=12" 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: gdn-select-kernels: prologue-vector-bytes must be 0 (chosen), 8 or 16, found 12
// SIXTEEN-NOT: vector_bytes

!P = !gdn.packing<seqs = ?, tokens = ?>

// CHECK-LABEL: func.func @f32_input_bf16
// CHECK: gdn_kernel.prologue {{.*}}vector_bytes = 8 : i64
func.func @f32_input_bf16(%mixed: tensor<?x384xf32>, %w: tensor<384x4xbf16>, %a: tensor<?x4xf32>, %b: tensor<?x4xf32>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !P) -> tensor<?x2x64xbf16> {
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 128 : i64, tokens_per_block = 32 : i64, rows_in_flight = 8 : i64}
      : (tensor<?x384xf32>, tensor<384x4xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, !P)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return %q : tensor<?x2x64xbf16>
}

// CHECK-LABEL: func.func @f32_input_f16
// CHECK: gdn_kernel.prologue {{.*}}vector_bytes = 8 : i64
func.func @f32_input_f16(%mixed: tensor<?x384xf32>, %w: tensor<384x4xf16>, %a: tensor<?x4xf32>, %b: tensor<?x4xf32>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !P) -> tensor<?x2x64xf16> {
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 128 : i64, tokens_per_block = 32 : i64, rows_in_flight = 8 : i64}
      : (tensor<?x384xf32>, tensor<384x4xf16>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, !P)
      -> (tensor<?x2x64xf16>, tensor<?x2x64xf16>, tensor<?x4x32xf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return %q : tensor<?x2x64xf16>
}

// A key head of 256 bf16 is 64 lanes of 8 bytes, past a warp: 16-byte vectors.
// CHECK-LABEL: func.func @f32_input_wide_head
// CHECK: gdn_kernel.prologue
// CHECK-NOT: vector_bytes
// CHECK: return
func.func @f32_input_wide_head(%mixed: tensor<?x1152xf32>, %w: tensor<1152x4xbf16>, %a: tensor<?x4xf32>, %b: tensor<?x4xf32>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !P) -> tensor<?x2x256xbf16> {
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 256 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 128 : i64, tokens_per_block = 32 : i64, rows_in_flight = 8 : i64}
      : (tensor<?x1152xf32>, tensor<1152x4xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, !P)
      -> (tensor<?x2x256xbf16>, tensor<?x2x256xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return %q : tensor<?x2x256xbf16>
}

// bf16 input: one 16-byte vector of input a thread, as wide as q, k, v.
// CHECK-LABEL: func.func @bf16_input
// CHECK: gdn_kernel.prologue
// CHECK-NOT: vector_bytes
// CHECK: return
func.func @bf16_input(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !P) -> tensor<?x2x64xbf16> {
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 128 : i64, tokens_per_block = 32 : i64, rows_in_flight = 8 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !P)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return %q : tensor<?x2x64xbf16>
}
