// Round trip of gdn_kernel.prologue and gdn_kernel.gated_rmsnorm: optional bias, initial and final conv state, static and dynamic token dims, dtypes and every attribute.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s
// RUN: gdn-opt %s --mlir-print-op-generic | gdn-opt | FileCheck %s
// RUN: gdn-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// The operand list prints the optional bias and initial state last, but the
// functional type lists operand types in ODS order: mixed_qkv, conv_weight,
// conv_bias, conv_initial_state, a, b, a_log, dt_bias, packing.

!P = !gdn.packing<seqs = 4, tokens = 8192>
!Pd = !gdn.packing<seqs = ?, tokens = ?>
!Ppad = !gdn.packing<seqs = ?, tokens = ?, padded>

// Qwen3-Next size (16 key heads, 32 value heads of 128, 8192 channels), static
// tokens, no optional operand or result.
// CHECK-LABEL: func.func @prologue_qwen3_next_static
// CHECK-SAME: (%[[MIXED:[^:]+]]: tensor<8192x8192xbf16>, %[[W:[^:]+]]: tensor<8192x4xbf16>, %[[A:[^:]+]]: tensor<8192x32xbf16>, %[[B:[^:]+]]: tensor<8192x32xbf16>, %[[ALOG:[^:]+]]: tensor<32xf32>, %[[DTB:[^:]+]]: tensor<32xf32>, %[[P:[^:]+]]: !gdn.packing<seqs = 4, tokens = 8192>)
// CHECK: %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}} = gdn_kernel.prologue %[[MIXED]], %[[W]], %[[A]], %[[B]], %[[ALOG]], %[[DTB]], %[[P]]
// CHECK-SAME: {activation = #gdn.act<silu>, allow_neg_eigval = false, conv_width = 4 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64, key_heads = 16 : i64, l2norm_eps = 9.9999999999999995E-7 : f64, rows_in_flight = 4 : i64, threads = 256 : i64, tokens_per_block = 64 : i64, value_heads = 32 : i64}
// CHECK-SAME: : (tensor<8192x8192xbf16>, tensor<8192x4xbf16>, tensor<8192x32xbf16>, tensor<8192x32xbf16>, tensor<32xf32>, tensor<32xf32>, !gdn.packing<seqs = 4, tokens = 8192>)
// CHECK-SAME: -> (tensor<8192x16x128xbf16>, tensor<8192x16x128xbf16>, tensor<8192x32x128xbf16>, tensor<8192x32xf32>, tensor<8192x32xf32>)
// CHECK-NOT: bias(
// CHECK-NOT: initial_state(
// GENERIC-LABEL: sym_name = "prologue_qwen3_next_static"
// GENERIC: "gdn_kernel.prologue"(%{{.*}}) <{activation = #gdn.act<silu>, {{.*}}operandSegmentSizes = array<i32: 1, 1, 0, 0, 1, 1, 1, 1, 1>, {{.*}}}> : (tensor<8192x8192xbf16>, tensor<8192x4xbf16>, tensor<8192x32xbf16>, tensor<8192x32xbf16>, tensor<32xf32>, tensor<32xf32>, !gdn.packing<seqs = 4, tokens = 8192>) -> (tensor<8192x16x128xbf16>, tensor<8192x16x128xbf16>, tensor<8192x32x128xbf16>, tensor<8192x32xf32>, tensor<8192x32xf32>)
func.func @prologue_qwen3_next_static(%mixed: tensor<8192x8192xbf16>, %w: tensor<8192x4xbf16>,
    %a: tensor<8192x32xbf16>, %b: tensor<8192x32xbf16>, %a_log: tensor<32xf32>,
    %dt_bias: tensor<32xf32>, %p: !P) -> tensor<8192x16x128xbf16> {
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 16 : i64, value_heads = 32 : i64, head_dim_k = 128 : i64,
       head_dim_v = 128 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>,
       l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false,
       threads = 256 : i64, tokens_per_block = 64 : i64, rows_in_flight = 4 : i64}
      : (tensor<8192x8192xbf16>, tensor<8192x4xbf16>, tensor<8192x32xbf16>, tensor<8192x32xbf16>,
         tensor<32xf32>, tensor<32xf32>, !P)
      -> (tensor<8192x16x128xbf16>, tensor<8192x16x128xbf16>, tensor<8192x32x128xbf16>,
          tensor<8192x32xf32>, tensor<8192x32xf32>)
  return %q : tensor<8192x16x128xbf16>
}

// An f32 conv input beside bf16 q, k, v with 8-byte vectors (printed: not
// the default 16).
// CHECK-LABEL: func.func @prologue_f32_input_eight_byte_vectors
// CHECK: gdn_kernel.prologue
// CHECK-SAME: vector_bytes = 8 : i64
// GENERIC-LABEL: sym_name = "prologue_f32_input_eight_byte_vectors"
// GENERIC: vector_bytes = 8 : i64
func.func @prologue_f32_input_eight_byte_vectors(%mixed: tensor<?x384xf32>, %w: tensor<384x4xbf16>,
    %a: tensor<?x4xf32>, %b: tensor<?x4xf32>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
    %p: !Pd) -> tensor<?x2x64xbf16> {
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64,
       head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>,
       l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false,
       threads = 128 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64,
       vector_bytes = 8 : i64}
      : (tensor<?x384xf32>, tensor<384x4xbf16>, tensor<?x4xf32>, tensor<?x4xf32>,
         tensor<4xf32>, tensor<4xf32>, !Pd)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return %q : tensor<?x2x64xbf16>
}

// Dynamic tokens and a conv bias only.
// CHECK-LABEL: func.func @prologue_bias_dynamic
// CHECK: gdn_kernel.prologue %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}} bias(%[[BIAS:[^ )]+]]) {
// CHECK-NOT: initial_state(
// CHECK-SAME: : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<384xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
// CHECK-SAME: -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
// GENERIC-LABEL: sym_name = "prologue_bias_dynamic"
// GENERIC: operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 1, 1, 1>
func.func @prologue_bias_dynamic(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %bias: tensor<384xbf16>,
    %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
    %p: !Pd) -> tensor<?x4xf32> {
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p bias(%bias)
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64,
       head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>,
       l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false,
       threads = 128 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<384xbf16>, tensor<?x4xbf16>,
         tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !Pd)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return %g : tensor<?x4xf32>
}

// An initial conv state only (no final state), f16 activations.
// CHECK-LABEL: func.func @prologue_initial_state_only
// CHECK: gdn_kernel.prologue %{{.*}} initial_state(%{{[^ )]+}}) {
// CHECK-SAME: : (tensor<?x384xf16>, tensor<384x4xf16>, tensor<?x384x3xf16>, tensor<?x4xf16>, tensor<?x4xf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
// CHECK-SAME: -> (tensor<?x2x64xf16>, tensor<?x2x64xf16>, tensor<?x4x32xf16>, tensor<?x4xf32>, tensor<?x4xf32>)
// GENERIC-LABEL: sym_name = "prologue_initial_state_only"
// GENERIC: operandSegmentSizes = array<i32: 1, 1, 0, 1, 1, 1, 1, 1, 1>
func.func @prologue_initial_state_only(%mixed: tensor<?x384xf16>, %w: tensor<384x4xf16>, %h0: tensor<?x384x3xf16>,
    %a: tensor<?x4xf16>, %b: tensor<?x4xf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
    %p: !Pd) -> tensor<?x4xf32> {
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p initial_state(%h0)
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64,
       head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>,
       l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false,
       threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xf16>, tensor<384x4xf16>, tensor<?x384x3xf16>, tensor<?x4xf16>,
         tensor<?x4xf16>, tensor<4xf32>, tensor<4xf32>, !Pd)
      -> (tensor<?x2x64xf16>, tensor<?x2x64xf16>, tensor<?x4x32xf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return %beta : tensor<?x4xf32>
}

// A final conv state only: a sixth result, [N, C, W-1] with static N.
// CHECK-LABEL: func.func @prologue_final_state_only
// CHECK: %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, %[[HT:[^ ,]+]] = gdn_kernel.prologue
// CHECK-NOT: initial_state(
// CHECK-SAME: -> (tensor<8192x2x64xbf16>, tensor<8192x2x64xbf16>, tensor<8192x4x32xbf16>, tensor<8192x4xf32>, tensor<8192x4xf32>, tensor<4x384x3xbf16>)
// CHECK-NEXT: return %[[HT]] : tensor<4x384x3xbf16>
func.func @prologue_final_state_only(%mixed: tensor<8192x384xbf16>, %w: tensor<384x4xbf16>,
    %a: tensor<8192x4xbf16>, %b: tensor<8192x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
    %p: !P) -> tensor<4x384x3xbf16> {
  %q, %k, %v, %g, %beta, %ht = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64,
       head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>,
       l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false,
       threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<8192x384xbf16>, tensor<384x4xbf16>, tensor<8192x4xbf16>, tensor<8192x4xbf16>,
         tensor<4xf32>, tensor<4xf32>, !P)
      -> (tensor<8192x2x64xbf16>, tensor<8192x2x64xbf16>, tensor<8192x4x32xbf16>, tensor<8192x4xf32>,
          tensor<8192x4xf32>, tensor<4x384x3xbf16>)
  return %ht : tensor<4x384x3xbf16>
}

// Everything at once: bias, initial and final state, a padded pack, no
// activation, 2 * sigmoid beta, eps 0, f32 gate inputs and the longest tile.
// CHECK-LABEL: func.func @prologue_everything
// CHECK: %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}}, %[[HT:[^ ,]+]] = gdn_kernel.prologue %{{.*}} bias(%{{[^ )]+}}) initial_state(%{{[^ )]+}})
// CHECK-SAME: {activation = #gdn.act<none>, allow_neg_eigval = true, conv_width = 3 : i64, head_dim_k = 32 : i64, head_dim_v = 64 : i64, key_heads = 1 : i64, l2norm_eps = 0.000000e+00 : f64, rows_in_flight = 16 : i64, threads = 256 : i64, tokens_per_block = 1024 : i64, value_heads = 3 : i64}
// CHECK-SAME: : (tensor<?x256xbf16>, tensor<256x3xbf16>, tensor<256xbf16>, tensor<?x256x2xbf16>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<3xf32>, tensor<3xf32>, !gdn.packing<seqs = ?, tokens = ?, padded>)
// CHECK-SAME: -> (tensor<?x1x32xbf16>, tensor<?x1x32xbf16>, tensor<?x3x64xbf16>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x256x2xbf16>)
// CHECK-NEXT: return %[[HT]]
// GENERIC-LABEL: sym_name = "prologue_everything"
// GENERIC: operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 1>
func.func @prologue_everything(%mixed: tensor<?x256xbf16>, %w: tensor<256x3xbf16>, %bias: tensor<256xbf16>,
    %h0: tensor<?x256x2xbf16>, %a: tensor<?x3xf32>, %b: tensor<?x3xf32>, %a_log: tensor<3xf32>,
    %dt_bias: tensor<3xf32>, %p: !Ppad) -> tensor<?x256x2xbf16> {
  %q, %k, %v, %g, %beta, %ht = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      bias(%bias) initial_state(%h0)
      {key_heads = 1 : i64, value_heads = 3 : i64, head_dim_k = 32 : i64,
       head_dim_v = 64 : i64, conv_width = 3 : i64, activation = #gdn.act<none>,
       l2norm_eps = 0.0 : f64, allow_neg_eigval = true,
       threads = 256 : i64, tokens_per_block = 1024 : i64, rows_in_flight = 16 : i64}
      : (tensor<?x256xbf16>, tensor<256x3xbf16>, tensor<256xbf16>, tensor<?x256x2xbf16>,
         tensor<?x3xf32>, tensor<?x3xf32>, tensor<3xf32>, tensor<3xf32>, !Ppad)
      -> (tensor<?x1x32xbf16>, tensor<?x1x32xbf16>, tensor<?x3x64xbf16>, tensor<?x3xf32>,
          tensor<?x3xf32>, tensor<?x256x2xbf16>)
  return %ht : tensor<?x256x2xbf16>
}

// Width 1: the conv state has no taps ([N, C, 0]); f32 activations, one
// 16-byte lane per key head.
// CHECK-LABEL: func.func @prologue_width_one_f32
// CHECK: gdn_kernel.prologue %{{.*}} initial_state(%{{[^ )]+}}) {{{.*}}conv_width = 1 : i64{{.*}}}
// CHECK-SAME: : (tensor<16x16xf32>, tensor<16x1xf32>, tensor<2x16x0xf32>, tensor<16x2xf32>, tensor<16x2xf32>, tensor<2xf32>, tensor<2xf32>, !gdn.packing<seqs = 2, tokens = 16>)
func.func @prologue_width_one_f32(%mixed: tensor<16x16xf32>, %w: tensor<16x1xf32>, %h0: tensor<2x16x0xf32>,
    %a: tensor<16x2xf32>, %b: tensor<16x2xf32>, %a_log: tensor<2xf32>, %dt_bias: tensor<2xf32>,
    %p: !gdn.packing<seqs = 2, tokens = 16>) -> tensor<16x2x4xf32> {
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p initial_state(%h0)
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 4 : i64,
       head_dim_v = 4 : i64, conv_width = 1 : i64, activation = #gdn.act<silu>,
       l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false,
       threads = 32 : i64, tokens_per_block = 1 : i64, rows_in_flight = 1 : i64}
      : (tensor<16x16xf32>, tensor<16x1xf32>, tensor<2x16x0xf32>, tensor<16x2xf32>,
         tensor<16x2xf32>, tensor<2xf32>, tensor<2xf32>, !gdn.packing<seqs = 2, tokens = 16>)
      -> (tensor<16x1x4xf32>, tensor<16x1x4xf32>, tensor<16x2x4xf32>, tensor<16x2xf32>, tensor<16x2xf32>)
  return %v : tensor<16x2x4xf32>
}

// The epilogue over 32 value heads of 128, dynamic tokens.
// CHECK-LABEL: func.func @rmsnorm_dynamic
// CHECK-SAME: (%[[O:[^:]+]]: tensor<?x32x128xbf16>, %[[Z:[^:]+]]: tensor<?x32x128xbf16>, %[[W:[^:]+]]: tensor<128xbf16>)
// CHECK: %[[Y:[^ ]+]] = gdn_kernel.gated_rmsnorm %[[O]], %[[Z]], %[[W]] {eps = 9.9999999999999995E-7 : f64, threads = 256 : i64} : (tensor<?x32x128xbf16>, tensor<?x32x128xbf16>, tensor<128xbf16>) -> tensor<?x32x128xbf16>
// CHECK-NEXT: return %[[Y]]
// GENERIC-LABEL: sym_name = "rmsnorm_dynamic"
// GENERIC: "gdn_kernel.gated_rmsnorm"(%{{[^,]+}}, %{{[^,]+}}, %{{[^)]+}}) <{eps = 9.9999999999999995E-7 : f64, threads = 256 : i64}> : (tensor<?x32x128xbf16>, tensor<?x32x128xbf16>, tensor<128xbf16>) -> tensor<?x32x128xbf16>
func.func @rmsnorm_dynamic(%o: tensor<?x32x128xbf16>, %z: tensor<?x32x128xbf16>, %w: tensor<128xbf16>)
    -> tensor<?x32x128xbf16> {
  %y = gdn_kernel.gated_rmsnorm %o, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64}
      : (tensor<?x32x128xbf16>, tensor<?x32x128xbf16>, tensor<128xbf16>) -> tensor<?x32x128xbf16>
  return %y : tensor<?x32x128xbf16>
}

// Static tokens; x, z and y of one width (bf16 and f16), an f32 weight.
// CHECK-LABEL: func.func @rmsnorm_static_mixed
// CHECK: gdn_kernel.gated_rmsnorm %{{.*}} {eps = 1.000000e-05 : f64, threads = 64 : i64} : (tensor<8192x4x32xbf16>, tensor<8192x4x32xf16>, tensor<32xf32>) -> tensor<8192x4x32xf16>
func.func @rmsnorm_static_mixed(%o: tensor<8192x4x32xbf16>, %z: tensor<8192x4x32xf16>, %w: tensor<32xf32>)
    -> tensor<8192x4x32xf16> {
  %y = gdn_kernel.gated_rmsnorm %o, %z, %w {eps = 1.0e-05 : f64, threads = 64 : i64}
      : (tensor<8192x4x32xbf16>, tensor<8192x4x32xf16>, tensor<32xf32>) -> tensor<8192x4x32xf16>
  return %y : tensor<8192x4x32xf16>
}

// f32 rows of 128 fill a whole warp of 16-byte lanes.
// CHECK-LABEL: func.func @rmsnorm_f32_warp
// CHECK: gdn_kernel.gated_rmsnorm %{{.*}} {eps = 0.000000e+00 : f64, threads = 1024 : i64} : (tensor<?x8x128xf32>, tensor<?x8x128xf32>, tensor<128xf32>) -> tensor<?x8x128xf32>
func.func @rmsnorm_f32_warp(%o: tensor<?x8x128xf32>, %z: tensor<?x8x128xf32>, %w: tensor<128xf32>)
    -> tensor<?x8x128xf32> {
  %y = gdn_kernel.gated_rmsnorm %o, %z, %w {eps = 0.0 : f64, threads = 1024 : i64}
      : (tensor<?x8x128xf32>, tensor<?x8x128xf32>, tensor<128xf32>) -> tensor<?x8x128xf32>
  return %y : tensor<?x8x128xf32>
}
