// Round trip of the gradient ops (the VJPs gdn-generate-backward emits)
// and of the inverse copies: every optional operand and result, dynamic
// token counts, GQA, layouts.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s
// RUN: gdn-opt %s --mlir-print-op-generic | gdn-opt | FileCheck %s

// CHECK-LABEL: func.func @conv
// CHECK: gdn.causal_conv1d_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}}) initial_state(%{{.*}}) final_state_grad(%{{.*}}) {activation = #gdn.act<silu>, width = 4 : i64}
// CHECK: gdn.causal_conv1d_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {width = 3 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<8x3xbf16>, !gdn.packing<seqs = ?, tokens = ?>) -> (tensor<?x8xbf16>, tensor<8x3xbf16>)
func.func @conv(%dy: tensor<?x8xf64>, %x: tensor<?x8xf64>, %w: tensor<8x4xf64>, %b: tensor<8xf64>,
                %h0: tensor<2x8x3xf64>, %dh: tensor<2x8x3xf64>, %p: !gdn.packing<seqs = 2, tokens = ?>,
                %dy16: tensor<?x8xbf16>, %x16: tensor<?x8xbf16>, %w16: tensor<8x3xbf16>,
                %q: !gdn.packing<seqs = ?, tokens = ?>) {
  %dx, %dw, %db, %dh0 = gdn.causal_conv1d_grad %dy, %x, %w, %p bias(%b) initial_state(%h0)
      final_state_grad(%dh) {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x8xf64>, tensor<?x8xf64>, tensor<8x4xf64>, !gdn.packing<seqs = 2, tokens = ?>,
         tensor<8xf64>, tensor<2x8x3xf64>, tensor<2x8x3xf64>)
      -> (tensor<?x8xf64>, tensor<8x4xf64>, tensor<8xf64>, tensor<2x8x3xf64>)
  %dx2, %dw2 = gdn.causal_conv1d_grad %dy16, %x16, %w16, %q {width = 3 : i64}
      : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<8x3xbf16>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x8xbf16>, tensor<8x3xbf16>)
  return
}

// Cotangents narrower than their primals (gdn-expand-layer's f32-projections:
// the conv input and z are f32, their cotangents bf16).
// CHECK-LABEL: func.func @narrow_cotangents
// CHECK: gdn.causal_conv1d_grad {{.*}} : (tensor<?x8xbf16>, tensor<?x8xf32>, tensor<8x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>) -> (tensor<?x8xbf16>, tensor<8x4xbf16>)
// CHECK: gdn.gated_rmsnorm_grad {{.*}} : (tensor<?x4x8xbf16>, tensor<?x4x8xbf16>, tensor<?x4x8xf32>, tensor<8xbf16>) -> (tensor<?x4x8xbf16>, tensor<?x4x8xbf16>, tensor<8xbf16>)
func.func @narrow_cotangents(%dy: tensor<?x8xbf16>, %x: tensor<?x8xf32>, %w: tensor<8x4xbf16>,
                             %p: !gdn.packing<seqs = ?, tokens = ?>, %dn: tensor<?x4x8xbf16>,
                             %o: tensor<?x4x8xbf16>, %z: tensor<?x4x8xf32>, %norm: tensor<8xbf16>) {
  %dx, %dw = gdn.causal_conv1d_grad %dy, %x, %w, %p {width = 4 : i64}
      : (tensor<?x8xbf16>, tensor<?x8xf32>, tensor<8x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x8xbf16>, tensor<8x4xbf16>)
  %do, %dz, %dnorm = gdn.gated_rmsnorm_grad %dn, %o, %z, %norm
      : (tensor<?x4x8xbf16>, tensor<?x4x8xbf16>, tensor<?x4x8xf32>, tensor<8xbf16>)
      -> (tensor<?x4x8xbf16>, tensor<?x4x8xbf16>, tensor<8xbf16>)
  return
}

// CHECK-LABEL: func.func @norms_and_gates
// CHECK: gdn.l2norm_grad %{{.*}}, %{{.*}} : tensor<?x2x4xbf16>
// CHECK: gdn.gates_grad %{{.*}} {allow_neg_eigval = true} : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>)
// CHECK: gdn.gated_rmsnorm_grad %{{.*}} {eps = 1.000000e-05 : f64}
func.func @norms_and_gates(%dq: tensor<?x2x4xbf16>, %q: tensor<?x2x4xbf16>,
                           %dg: tensor<?x4xf32>, %dbeta: tensor<?x4xf32>, %a: tensor<?x4xbf16>,
                           %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
                           %dy: tensor<?x4x8xbf16>, %o: tensor<?x4x8xbf16>, %z: tensor<?x4x8xbf16>,
                           %norm: tensor<8xbf16>) {
  %dqx = gdn.l2norm_grad %dq, %q : tensor<?x2x4xbf16>
  %da, %db, %dalog, %ddt = gdn.gates_grad %dg, %dbeta, %a, %b, %a_log, %dt_bias {allow_neg_eigval = true}
      : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>)
  %dx, %dz, %dw = gdn.gated_rmsnorm_grad %dy, %o, %z, %norm {eps = 1.0e-05 : f64}
      : (tensor<?x4x8xbf16>, tensor<?x4x8xbf16>, tensor<?x4x8xbf16>, tensor<8xbf16>)
      -> (tensor<?x4x8xbf16>, tensor<?x4x8xbf16>, tensor<8xbf16>)
  return
}

// CHECK-LABEL: func.func @delta_rule
// CHECK: gdn.delta_rule_grad %{{.*}} initial_state(%{{.*}}) final_state_grad(%{{.*}}) {scale = 5.000000e-01 : f64}
// CHECK: gdn.delta_rule_grad %{{.*}} : (tensor<?x4x8xbf16>, tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 3, tokens = ?>) -> (tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
func.func @delta_rule(%do: tensor<?x4x8xbf16>, %q: tensor<?x2x8xbf16>, %k: tensor<?x2x8xbf16>,
                      %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>,
                      %p: !gdn.packing<seqs = 3, tokens = ?>, %s0: tensor<3x4x8x8xf32>,
                      %dsT: tensor<3x4x8x8xf32>) {
  %dq, %dk, %dv, %dg, %dbeta, %ds0 = gdn.delta_rule_grad %do, %q, %k, %v, %g, %beta, %p
      initial_state(%s0) final_state_grad(%dsT) {scale = 0.5 : f64}
      : (tensor<?x4x8xbf16>, tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<?x4x8xbf16>,
         tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 3, tokens = ?>,
         tensor<3x4x8x8xf32>, tensor<3x4x8x8xf32>)
      -> (tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>,
          tensor<?x4xf32>, tensor<3x4x8x8xf32>)
  %dq2, %dk2, %dv2, %dg2, %dbeta2 = gdn.delta_rule_grad %do, %q, %k, %v, %g, %beta, %p
      : (tensor<?x4x8xbf16>, tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<?x4x8xbf16>,
         tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 3, tokens = ?>)
      -> (tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>,
          tensor<?x4xf32>)
  return
}

// CHECK-LABEL: func.func @projections_and_copies
// CHECK: gdn.linear_grad %{{.*}} : (tensor<?x6xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x3xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<6x3xbf16>) -> (tensor<?x3xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<6x3xbf16>)
// CHECK: gdn.merge_qkvz %{{.*}} {head_dim_k = 2 : i64, key_heads = 2 : i64}
// CHECK: gdn.merge_qkv %{{.*}} : tensor<?x2x2xf64>, tensor<?x2x2xf64>, tensor<?x4x2xf64> -> tensor<?x16xf64>
func.func @projections_and_copies(%dy: tensor<?x6xbf16, #gdn.seq<zigzag, ranks = 2>>,
                                  %x: tensor<?x3xbf16, #gdn.seq<zigzag, ranks = 2>>,
                                  %w: tensor<6x3xbf16>, %mixed: tensor<?x16xf64>,
                                  %z: tensor<?x4x2xf64>, %b: tensor<?x4xf64>, %a: tensor<?x4xf64>,
                                  %q: tensor<?x2x2xf64>, %k: tensor<?x2x2xf64>, %v: tensor<?x4x2xf64>) {
  %dx, %dw = gdn.linear_grad %dy, %x, %w
      : (tensor<?x6xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x3xbf16, #gdn.seq<zigzag, ranks = 2>>,
         tensor<6x3xbf16>) -> (tensor<?x3xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<6x3xbf16>)
  %qkvz, %ba = gdn.merge_qkvz %mixed, %z, %b, %a {key_heads = 2 : i64, head_dim_k = 2 : i64}
      : (tensor<?x16xf64>, tensor<?x4x2xf64>, tensor<?x4xf64>, tensor<?x4xf64>)
      -> (tensor<?x24xf64>, tensor<?x8xf64>)
  %c = gdn.merge_qkv %q, %k, %v : tensor<?x2x2xf64>, tensor<?x2x2xf64>, tensor<?x4x2xf64> -> tensor<?x16xf64>
  return
}
