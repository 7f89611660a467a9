// gdn-expand-layer keeps the layer's sequence layout on every expanded
// activation, and takes gate and state precision from the layer (f64 in,
// f64 gates and state out).
// RUN: gdn-opt %s --gdn-expand-layer | FileCheck %s --implicit-check-not=gdn.layer

// A contiguous token shard over 2 ranks: every [T, ...] tensor is a shard,
// the weights and the per-sequence final state are not.
// CHECK-LABEL: func.func @sharded_layer
// CHECK: gdn.linear {{.*}} -> tensor<8x96xf32, #gdn.seq<contiguous, ranks = 2>>
// CHECK-NEXT: gdn.linear {{.*}} -> tensor<8x8xf32, #gdn.seq<contiguous, ranks = 2>>
// CHECK-NEXT: gdn.split_qkvz
// CHECK-SAME: -> (tensor<8x64xf32, #gdn.seq<contiguous, ranks = 2>>, tensor<8x4x8xf32, #gdn.seq<contiguous, ranks = 2>>, tensor<8x4xf32, #gdn.seq<contiguous, ranks = 2>>, tensor<8x4xf32, #gdn.seq<contiguous, ranks = 2>>)
// CHECK-NEXT: gdn.causal_conv1d
// CHECK-SAME: -> tensor<8x64xf32, #gdn.seq<contiguous, ranks = 2>>
// CHECK-NEXT: gdn.split_qkv
// CHECK-SAME: -> tensor<8x2x8xf32, #gdn.seq<contiguous, ranks = 2>>, tensor<8x2x8xf32, #gdn.seq<contiguous, ranks = 2>>, tensor<8x4x8xf32, #gdn.seq<contiguous, ranks = 2>>
// CHECK-NEXT: gdn.l2norm {{.*}} : tensor<8x2x8xf32, #gdn.seq<contiguous, ranks = 2>>
// CHECK-NEXT: gdn.l2norm {{.*}} : tensor<8x2x8xf32, #gdn.seq<contiguous, ranks = 2>>
// CHECK-NEXT: gdn.gates
// CHECK-SAME: -> (tensor<8x4xf32, #gdn.seq<contiguous, ranks = 2>>, tensor<8x4xf32, #gdn.seq<contiguous, ranks = 2>>)
// CHECK-NEXT: gdn.delta_rule
// CHECK-SAME: -> (tensor<8x4x8xf32, #gdn.seq<contiguous, ranks = 2>>, tensor<2x4x8x8xf32>)
// CHECK-NEXT: gdn.gated_rmsnorm
// CHECK-SAME: -> tensor<8x4x8xf32, #gdn.seq<contiguous, ranks = 2>>
// CHECK-NEXT: gdn.linear {{.*}} -> tensor<8x64xf32, #gdn.seq<contiguous, ranks = 2>>
// CHECK-NEXT: return
func.func @sharded_layer(%x: tensor<8x64xf32, #gdn.seq<contiguous, ranks = 2>>,
    %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w_qkvz: tensor<96x64xf32>, %w_ba: tensor<8x64xf32>, %conv: tensor<64x4xf32>,
    %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %norm: tensor<8xf32>,
    %w_out: tensor<64x32xf32>) -> tensor<8x64xf32, #gdn.seq<contiguous, ranks = 2>> {
  %y = gdn.layer %x, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 8 : i64, head_dim_v = 8 : i64,
       conv_width = 4 : i64}
      : (tensor<8x64xf32, #gdn.seq<contiguous, ranks = 2>>, !gdn.packing<seqs = 2, tokens = ?>,
         tensor<96x64xf32>, tensor<8x64xf32>, tensor<64x4xf32>, tensor<4xf32>,
         tensor<4xf32>, tensor<8xf32>, tensor<64x32xf32>)
      -> tensor<8x64xf32, #gdn.seq<contiguous, ranks = 2>>
  return %y : tensor<8x64xf32, #gdn.seq<contiguous, ranks = 2>>
}

// An f64 reference layer: the gates and the final state are f64, not f32.
// CHECK-LABEL: func.func @f64_reference_layer
// CHECK: gdn.gates
// CHECK-SAME: : (tensor<16x4xf64>, tensor<16x4xf64>, tensor<4xf64>, tensor<4xf64>) -> (tensor<16x4xf64>, tensor<16x4xf64>)
// CHECK-NEXT: gdn.delta_rule
// CHECK-SAME: -> (tensor<16x4x8xf64>, tensor<2x4x8x8xf64>)
// CHECK: gdn.linear {{.*}} -> tensor<16x64xf64>
func.func @f64_reference_layer(%x: tensor<16x64xf64>, %p: !gdn.packing<seqs = 2, tokens = 16>,
    %w_qkvz: tensor<96x64xf64>, %w_ba: tensor<8x64xf64>, %conv: tensor<64x4xf64>,
    %a_log: tensor<4xf64>, %dt_bias: tensor<4xf64>, %norm: tensor<8xf64>,
    %w_out: tensor<64x32xf64>) -> tensor<16x64xf64> {
  %y = gdn.layer %x, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 8 : i64, head_dim_v = 8 : i64,
       conv_width = 4 : i64}
      : (tensor<16x64xf64>, !gdn.packing<seqs = 2, tokens = 16>, tensor<96x64xf64>,
         tensor<8x64xf64>, tensor<64x4xf64>, tensor<4xf64>, tensor<4xf64>,
         tensor<8xf64>, tensor<64x32xf64>) -> tensor<16x64xf64>
  return %y : tensor<16x64xf64>
}
