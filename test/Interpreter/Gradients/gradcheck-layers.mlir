// Whole GDN layers, float64, small dims (hidden 8, 2 key heads, 4 value
// heads (GQA), K = 4, V = 2, conv width 4): every argument's gradient
// (x, every projection weight, the conv weight, A_log, dt_bias, the norm
// weight) agrees with central finite differences, for both projection
// layouts, packs with sequences of length 0, 1 and 65 (across the delta
// rule's chunk of 64), alignment padding, and both delta-rule algorithms in
// the forward.
// RUN: gdn-run %s --entry=qwen3_next --gradcheck --gradcheck-entries=24 --seqlens=3,0,1,65,11 | FileCheck %s --check-prefix=NEXT
// RUN: gdn-run %s --entry=qwen3_next_padded --gradcheck --gradcheck-entries=24 --seqlens=3,0,1,65 --slots=8,0,8,72 --seed=1 | FileCheck %s --check-prefix=NEXT
// RUN: gdn-run %s --entry=qwen3_5 --gradcheck --gradcheck-entries=24 --seqlens=65,1,0,14 --seed=3 | FileCheck %s --check-prefix=QWEN35
// RUN: gdn-run %s --entry=qwen3_5 --gradcheck --gradcheck-entries=24 --seqlens=70,1 --delta-rule=chunked | FileCheck %s --check-prefix=QWEN35
//
// The expanded layer (gdn-expand-layer) has the same gradients, to rounding:
// the interpreter differentiates gdn.layer by composing its own kernels'
// VJPs, not through the pass.
// RUN: gdn-opt --gdn-expand-layer %s -o %t.mlir
// RUN: gdn-run --compare %s %t.mlir --gradients --entry=qwen3_next --seqlens=3,0,1,65,11 | FileCheck %s --check-prefix=EXPANDED-N
// RUN: gdn-run --compare %s %t.mlir --gradients --entry=qwen3_5 --seqlens=65,1,14 --seed=3 | FileCheck %s --check-prefix=EXPANDED-Q
// RUN: gdn-run %t.mlir --entry=qwen3_5 --gradcheck --gradcheck-entries=24 --seqlens=65,1,0,14 --seed=3 | FileCheck %s --check-prefix=QWEN35
//
// An expanded Qwen3.5 layer with every state: conv bias, initial conv and
// delta states, both final states returned (their cotangents flow back),
// padding.
// RUN: gdn-run %s --entry=with_states --gradcheck --gradcheck-entries=24 --seqlens=0,1,70,5 --slots=0,8,72,8 --seed=2 | FileCheck %s --check-prefix=STATES
//
// Two stacked Qwen3-Next layers sharing A_log, dt_bias and the norm weight
// (whose gradients sum over both uses).
// RUN: gdn-run %S/../../Transforms/Inputs/cp_layer.mlir --entry=stacked --gradcheck --gradcheck-entries=12 --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=STACKED

// NEXT:      gradient #0 (activation): {{.*}}  ok
// NEXT-NEXT: gradient #2 (projection weight): 32x8xf64  checked 24 of 256  max_rel_err = {{.*}}  ok
// NEXT-NEXT: gradient #3 (projection weight): 8x8xf64  checked 24 of 64  max_rel_err = {{.*}}  ok
// NEXT-NEXT: gradient #4 (conv weight): 24x4xf64  checked 24 of 96  max_rel_err = {{.*}}  ok
// NEXT-NEXT: gradient #5 (A_log): 4xf64  checked 4 of 4  max_rel_err = {{.*}}  ok
// NEXT-NEXT: gradient #6 (dt_bias): 4xf64  checked 4 of 4  max_rel_err = {{.*}}  ok
// NEXT-NEXT: gradient #7 (norm weight): 2xf64  checked 2 of 2  max_rel_err = {{.*}}  ok
// NEXT-NEXT: gradient #8 (projection weight): 8x8xf64  checked 24 of 64  max_rel_err = {{.*}}  ok
func.func @qwen3_next(%x: tensor<?x8xf64>, %cu: tensor<?xi32>,
                      %w_qkvz: tensor<32x8xf64>, %w_ba: tensor<8x8xf64>,
                      %conv: tensor<24x4xf64>, %a_log: tensor<4xf64>,
                      %dt_bias: tensor<4xf64>, %norm: tensor<2xf64>,
                      %w_out: tensor<8x8xf64>) -> tensor<?x8xf64> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %y = gdn.layer %x, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 2 : i64,
       conv_width = 4 : i64}
      : (tensor<?x8xf64>, !gdn.packing<seqs = ?, tokens = ?>, tensor<32x8xf64>,
         tensor<8x8xf64>, tensor<24x4xf64>, tensor<4xf64>, tensor<4xf64>,
         tensor<2xf64>, tensor<8x8xf64>) -> tensor<?x8xf64>
  return %y : tensor<?x8xf64>
}

func.func @qwen3_next_padded(%x: tensor<?x8xf64>, %cu: tensor<?xi32>,
                             %w_qkvz: tensor<32x8xf64>, %w_ba: tensor<8x8xf64>,
                             %conv: tensor<24x4xf64>, %a_log: tensor<4xf64>,
                             %dt_bias: tensor<4xf64>, %norm: tensor<2xf64>,
                             %w_out: tensor<8x8xf64>, %cu_padded: tensor<?xi32>)
    -> tensor<?x8xf64> {
  %p = gdn.packing %cu padded %cu_padded
      : tensor<?xi32>, tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
  %y = gdn.layer %x, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 2 : i64,
       conv_width = 4 : i64}
      : (tensor<?x8xf64>, !gdn.packing<seqs = ?, tokens = ?, padded>, tensor<32x8xf64>,
         tensor<8x8xf64>, tensor<24x4xf64>, tensor<4xf64>, tensor<4xf64>,
         tensor<2xf64>, tensor<8x8xf64>) -> tensor<?x8xf64>
  return %y : tensor<?x8xf64>
}

// QWEN35:      gradient #0 (activation): {{.*}}  ok
// QWEN35-NEXT: gradient #2 (projection weight): 24x8xf64  checked 24 of 192  max_rel_err = {{.*}}  ok
// QWEN35-NEXT: gradient #3 (projection weight): 8x8xf64  checked 24 of 64  max_rel_err = {{.*}}  ok
// QWEN35-NEXT: gradient #4 (projection weight): 4x8xf64  checked 24 of 32  max_rel_err = {{.*}}  ok
// QWEN35-NEXT: gradient #5 (projection weight): 4x8xf64  checked 24 of 32  max_rel_err = {{.*}}  ok
// QWEN35-NEXT: gradient #6 (conv weight): 24x4xf64  checked 24 of 96  max_rel_err = {{.*}}  ok
// QWEN35-NEXT: gradient #7 (A_log): 4xf64  checked 4 of 4  max_rel_err = {{.*}}  ok
// QWEN35-NEXT: gradient #8 (dt_bias): 4xf64  checked 4 of 4  max_rel_err = {{.*}}  ok
// QWEN35-NEXT: gradient #9 (norm weight): 2xf64  checked 2 of 2  max_rel_err = {{.*}}  ok
// QWEN35-NEXT: gradient #10 (projection weight): 8x8xf64  checked 24 of 64  max_rel_err = {{.*}}  ok
func.func @qwen3_5(%x: tensor<?x8xf64>, %cu: tensor<?xi32>,
                   %w_qkv: tensor<24x8xf64>, %w_z: tensor<8x8xf64>,
                   %w_b: tensor<4x8xf64>, %w_a: tensor<4x8xf64>,
                   %conv: tensor<24x4xf64>, %a_log: tensor<4xf64>,
                   %dt_bias: tensor<4xf64>, %norm: tensor<2xf64>,
                   %w_out: tensor<8x8xf64>) -> tensor<?x8xf64> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %y = gdn.layer %x, %p
      weights(%w_qkv, %w_z, %w_b, %w_a, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_5>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 2 : i64,
       conv_width = 4 : i64, scale = 0.25 : f64, allow_neg_eigval = true}
      : (tensor<?x8xf64>, !gdn.packing<seqs = ?, tokens = ?>, tensor<24x8xf64>,
         tensor<8x8xf64>, tensor<4x8xf64>, tensor<4x8xf64>, tensor<24x4xf64>,
         tensor<4xf64>, tensor<4xf64>, tensor<2xf64>, tensor<8x8xf64>)
      -> tensor<?x8xf64>
  return %y : tensor<?x8xf64>
}

// The result and every gradient (8 and 10 arguments but cu_seqlens), bit-identical
// or within float64 reassociation.
// EXPANDED-N-COUNT-9: {{^(result|gradient) #[0-9]+: .*rel_rms = (0\.000e\+00|[0-9.]+e-1[3-9])  max_abs = .*  ok$}}
// EXPANDED-Q-COUNT-11: {{^(result|gradient) #[0-9]+: .*rel_rms = (0\.000e\+00|[0-9.]+e-1[3-9])  max_abs = .*  ok$}}

// STATES:      gradient #0 (activation): {{.*}}  ok
// STATES-NEXT: gradient #1 (projection weight): 24x8xf64  checked 24 of 192  max_rel_err = {{.*}}  ok
// STATES-NEXT: gradient #2 (projection weight): 8x8xf64  checked 24 of 64  max_rel_err = {{.*}}  ok
// STATES-NEXT: gradient #3 (projection weight): 4x8xf64  checked 24 of 32  max_rel_err = {{.*}}  ok
// STATES-NEXT: gradient #4 (projection weight): 4x8xf64  checked 24 of 32  max_rel_err = {{.*}}  ok
// STATES-NEXT: gradient #5 (conv weight): 24x4xf64  checked 24 of 96  max_rel_err = {{.*}}  ok
// STATES-NEXT: gradient #6 (activation): 24xf64  checked 24 of 24  max_rel_err = {{.*}}  ok
// STATES-NEXT: gradient #7 (state): 4x24x3xf64  checked 24 of 288  max_rel_err = {{.*}}  ok
// STATES-NEXT: gradient #8 (A_log): 4xf64  checked 4 of 4  max_rel_err = {{.*}}  ok
// STATES-NEXT: gradient #9 (dt_bias): 4xf64  checked 4 of 4  max_rel_err = {{.*}}  ok
// STATES-NEXT: gradient #10 (state): 4x4x4x2xf64  checked 24 of 128  max_rel_err = {{.*}}  ok
// STATES-NEXT: gradient #11 (norm weight): 2xf64  checked 2 of 2  max_rel_err = {{.*}}  ok
// STATES-NEXT: gradient #12 (projection weight): 8x8xf64  checked 24 of 64  max_rel_err = {{.*}}  ok
func.func @with_states(%x: tensor<?x8xf64>, %w_qkv: tensor<24x8xf64>, %w_z: tensor<8x8xf64>,
                       %w_b: tensor<4x8xf64>, %w_a: tensor<4x8xf64>,
                       %conv: tensor<24x4xf64>, %conv_bias: tensor<24xf64>,
                       %conv_h0: tensor<?x24x3xf64>, %a_log: tensor<4xf64>,
                       %dt_bias: tensor<4xf64>, %s0: tensor<?x4x4x2xf64>,
                       %norm: tensor<2xf64>, %w_out: tensor<8x8xf64>,
                       %cu: tensor<?xi32>, %cu_padded: tensor<?xi32>)
    -> (tensor<?x8xf64>, tensor<?x24x3xf64>, tensor<?x4x4x2xf64>) {
  %p = gdn.packing %cu padded %cu_padded
      : tensor<?xi32>, tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
  %mixed = gdn.linear %x, %w_qkv : (tensor<?x8xf64>, tensor<24x8xf64>) -> tensor<?x24xf64>
  %z = gdn.linear %x, %w_z : (tensor<?x8xf64>, tensor<8x8xf64>) -> tensor<?x4x2xf64>
  %b = gdn.linear %x, %w_b : (tensor<?x8xf64>, tensor<4x8xf64>) -> tensor<?x4xf64>
  %a = gdn.linear %x, %w_a : (tensor<?x8xf64>, tensor<4x8xf64>) -> tensor<?x4xf64>
  %c, %conv_ht = gdn.causal_conv1d %mixed, %conv, %p bias(%conv_bias) initial_state(%conv_h0)
      {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x24xf64>, tensor<24x4xf64>, !gdn.packing<seqs = ?, tokens = ?, padded>,
         tensor<24xf64>, tensor<?x24x3xf64>) -> (tensor<?x24xf64>, tensor<?x24x3xf64>)
  %q, %k, %v = gdn.split_qkv %c : tensor<?x24xf64>
      -> tensor<?x2x4xf64>, tensor<?x2x4xf64>, tensor<?x4x2xf64>
  %qn = gdn.l2norm %q : tensor<?x2x4xf64>
  %kn = gdn.l2norm %k : tensor<?x2x4xf64>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<?x4xf64>, tensor<?x4xf64>, tensor<4xf64>, tensor<4xf64>)
      -> (tensor<?x4xf64>, tensor<?x4xf64>)
  %o, %ht = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p initial_state(%s0)
      : (tensor<?x2x4xf64>, tensor<?x2x4xf64>, tensor<?x4x2xf64>, tensor<?x4xf64>,
         tensor<?x4xf64>, !gdn.packing<seqs = ?, tokens = ?, padded>, tensor<?x4x4x2xf64>)
      -> (tensor<?x4x2xf64>, tensor<?x4x4x2xf64>)
  %on = gdn.gated_rmsnorm %o, %z, %norm
      : (tensor<?x4x2xf64>, tensor<?x4x2xf64>, tensor<2xf64>) -> tensor<?x4x2xf64>
  %y = gdn.linear %on, %w_out : (tensor<?x4x2xf64>, tensor<8x8xf64>) -> tensor<?x8xf64>
  return %y, %conv_ht, %ht : tensor<?x8xf64>, tensor<?x24x3xf64>, tensor<?x4x4x2xf64>
}

// STACKED-COUNT-12: {{^}}gradient #{{[0-9]+}} ({{.*}}  ok
// STACKED-NOT:  FAIL
