// gdn-expand-layer hands the layer's options to the primitive op that uses
// each (scale and chunk_size to delta_rule, allow_neg_eigval to gates,
// norm_eps to gated_rmsnorm), and expands every layer of a function.
// RUN: gdn-opt %s --gdn-expand-layer | FileCheck %s --implicit-check-not=gdn.layer

// The first layer sets every option; the second keeps the defaults, which
// the printer elides (delta_rule: no scale, chunk_size 64; gates: no
// negative eigenvalues; gated_rmsnorm: eps 1e-6). The q/k l2norm epsilon is
// fixed at 1e-6 whatever norm_eps is.
// CHECK-LABEL: func.func @two_layers
// CHECK: gdn.l2norm %{{[^ ]+}} : tensor
// CHECK-NEXT: gdn.l2norm %{{[^ ]+}} : tensor
// CHECK-NEXT: gdn.gates {{.*}} {allow_neg_eigval = true} :
// CHECK-NEXT: gdn.delta_rule {{.*}} {chunk_size = 32 : i64, scale = 2.500000e-01 : f64} :
// CHECK-NEXT: gdn.gated_rmsnorm {{.*}} {eps = 1.000000e-05 : f64} :
// CHECK-NEXT: %[[Y1:[^ ,]+]] = gdn.linear
// CHECK-NEXT: gdn.linear %[[Y1]],
// CHECK-NEXT: gdn.linear %[[Y1]],
// CHECK-NEXT: gdn.split_qkvz
// CHECK: gdn.gates %{{[^{]+}} : (
// CHECK-NEXT: gdn.delta_rule %{{[^{]+}} : (
// CHECK-NEXT: gdn.gated_rmsnorm %{{[^{]+}} : (
// CHECK-NEXT: %[[Y2:[^ ,]+]] = gdn.linear
// CHECK-NEXT: return %[[Y1]], %[[Y2]]
func.func @two_layers(%x: tensor<16x64xf32>, %p: !gdn.packing<seqs = 2, tokens = 16>,
    %w_qkvz: tensor<96x64xf32>, %w_ba: tensor<8x64xf32>, %conv: tensor<64x4xf32>,
    %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %norm: tensor<8xf32>,
    %w_out: tensor<64x32xf32>) -> (tensor<16x64xf32>, tensor<16x64xf32>) {
  %y1 = gdn.layer %x, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 8 : i64, head_dim_v = 8 : i64,
       conv_width = 4 : i64, scale = 0.25 : f64, chunk_size = 32 : i64,
       allow_neg_eigval = true, norm_eps = 1.0e-05 : f64}
      : (tensor<16x64xf32>, !gdn.packing<seqs = 2, tokens = 16>, tensor<96x64xf32>,
         tensor<8x64xf32>, tensor<64x4xf32>, tensor<4xf32>, tensor<4xf32>,
         tensor<8xf32>, tensor<64x32xf32>) -> tensor<16x64xf32>
  %y2 = gdn.layer %y1, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 8 : i64, head_dim_v = 8 : i64,
       conv_width = 4 : i64}
      : (tensor<16x64xf32>, !gdn.packing<seqs = 2, tokens = 16>, tensor<96x64xf32>,
         tensor<8x64xf32>, tensor<64x4xf32>, tensor<4xf32>, tensor<4xf32>,
         tensor<8xf32>, tensor<64x32xf32>) -> tensor<16x64xf32>
  return %y1, %y2 : tensor<16x64xf32>, tensor<16x64xf32>
}
