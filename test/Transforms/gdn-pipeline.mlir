// --gdn-pipeline expands gdn.layer into the primitive ops (then runs CSE).
// RUN: gdn-opt %s --gdn-pipeline | FileCheck %s --implicit-check-not=gdn.layer

// CHECK-LABEL: func.func @pipeline
// CHECK: gdn.split_qkvz
// CHECK: gdn.causal_conv1d
// CHECK: gdn.delta_rule
// CHECK: gdn.gated_rmsnorm
// CHECK: %[[Y:[^ ,]+]] = gdn.linear {{.*}} -> tensor<16x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @pipeline(%x: tensor<16x64xf32>, %p: !gdn.packing<seqs = 2, tokens = 16>,
    %w_qkvz: tensor<96x64xf32>, %w_ba: tensor<8x64xf32>, %conv: tensor<64x4xf32>,
    %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %norm: tensor<8xf32>,
    %w_out: tensor<64x32xf32>) -> tensor<16x64xf32> {
  %y = gdn.layer %x, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 8 : i64, head_dim_v = 8 : i64,
       conv_width = 4 : i64}
      : (tensor<16x64xf32>, !gdn.packing<seqs = 2, tokens = 16>, tensor<96x64xf32>,
         tensor<8x64xf32>, tensor<64x4xf32>, tensor<4xf32>, tensor<4xf32>,
         tensor<8xf32>, tensor<64x32xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}
