// gdn-expand-layer gives the expanded output exactly the layer's result type,
// even where x spells its type differently (a dynamic token count, or an
// explicit #gdn.seq<natural>); before the fix the expansion produced x's
// spelling and the function's return no longer verified.
// RUN: gdn-opt %s --gdn-expand-layer | FileCheck %s --implicit-check-not=gdn.layer

// x has a dynamic token count, y a static one: the activations use y's count.
// CHECK-LABEL: func.func @dynamic_x_static_y
// CHECK: gdn.linear %arg0, %arg2 : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<16x96xf32>
// CHECK: gdn.delta_rule
// CHECK-SAME: -> (tensor<16x4x8xf32>, tensor<2x4x8x8xf32>)
// CHECK: %[[Y:[^ ,]+]] = gdn.linear {{.*}} -> tensor<16x64xf32>
// CHECK-NEXT: return %[[Y]] : tensor<16x64xf32>
func.func @dynamic_x_static_y(%x: tensor<?x64xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w_qkvz: tensor<96x64xf32>, %w_ba: tensor<8x64xf32>, %conv: tensor<64x4xf32>,
    %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %norm: tensor<8xf32>,
    %w_out: tensor<64x32xf32>) -> tensor<16x64xf32> {
  %y = gdn.layer %x, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 8 : i64, head_dim_v = 8 : i64,
       conv_width = 4 : i64}
      : (tensor<?x64xf32>, !gdn.packing<seqs = 2, tokens = ?>, tensor<96x64xf32>,
         tensor<8x64xf32>, tensor<64x4xf32>, tensor<4xf32>, tensor<4xf32>,
         tensor<8xf32>, tensor<64x32xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// x says #gdn.seq<natural> (the same layout as none), y has no encoding.
// CHECK-LABEL: func.func @explicit_natural_x
// CHECK: %[[Y:[^ ,]+]] = gdn.linear {{.*}} : (tensor<16x4x8xf32, #gdn.seq<natural>>, tensor<64x32xf32>) -> tensor<16x64xf32>
// CHECK-NEXT: return %[[Y]] : tensor<16x64xf32>
func.func @explicit_natural_x(%x: tensor<16x64xf32, #gdn.seq<natural>>,
    %p: !gdn.packing<seqs = 2, tokens = 16>,
    %w_qkvz: tensor<96x64xf32>, %w_ba: tensor<8x64xf32>, %conv: tensor<64x4xf32>,
    %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %norm: tensor<8xf32>,
    %w_out: tensor<64x32xf32>) -> tensor<16x64xf32> {
  %y = gdn.layer %x, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 8 : i64, head_dim_v = 8 : i64,
       conv_width = 4 : i64}
      : (tensor<16x64xf32, #gdn.seq<natural>>, !gdn.packing<seqs = 2, tokens = 16>,
         tensor<96x64xf32>, tensor<8x64xf32>, tensor<64x4xf32>, tensor<4xf32>,
         tensor<4xf32>, tensor<8xf32>, tensor<64x32xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}
