// gdn-expand-layer on a Qwen3.5 layer: four separate input projections feed
// the conv, z, b and a directly, so no split_qkvz is produced.
// RUN: gdn-opt %s --gdn-expand-layer | FileCheck %s --implicit-check-not=gdn.layer --implicit-check-not=gdn.split_qkvz

// H = 2, HV = 4, K = V = 8, hidden 64: conv channels 2HK + HV*V = 64.

// CHECK-LABEL: func.func @qwen3_5_layer
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x64xf32>, %[[P:[^:]+]]: !gdn.packing<seqs = ?, tokens = ?>,
// CHECK-SAME: %[[WQKV:[^:]+]]: tensor<64x64xf32>, %[[WZ:[^:]+]]: tensor<32x64xf32>,
// CHECK-SAME: %[[WB:[^:]+]]: tensor<4x64xf32>, %[[WA:[^:]+]]: tensor<4x64xf32>,
// CHECK-SAME: %[[CONV:[^:]+]]: tensor<64x4xf32>, %[[ALOG:[^:]+]]: tensor<4xf32>,
// CHECK-SAME: %[[DTB:[^:]+]]: tensor<4xf32>, %[[NORM:[^:]+]]: tensor<8xf32>,
// CHECK-SAME: %[[WOUT:[^:]+]]: tensor<64x32xf32>)
// CHECK-NEXT: %[[MIXED:[^ ,]+]] = gdn.linear %[[X]], %[[WQKV]] : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
// CHECK-NEXT: %[[Z:[^ ,]+]] = gdn.linear %[[X]], %[[WZ]] : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x4x8xf32>
// CHECK-NEXT: %[[B:[^ ,]+]] = gdn.linear %[[X]], %[[WB]] : (tensor<?x64xf32>, tensor<4x64xf32>) -> tensor<?x4xf32>
// CHECK-NEXT: %[[A:[^ ,]+]] = gdn.linear %[[X]], %[[WA]] : (tensor<?x64xf32>, tensor<4x64xf32>) -> tensor<?x4xf32>
// CHECK-NEXT: %[[C:[^ ,]+]] = gdn.causal_conv1d %[[MIXED]], %[[CONV]], %[[P]] {activation = #gdn.act<silu>, width = 4 : i64}
// CHECK-SAME: -> tensor<?x64xf32>
// CHECK-NEXT: %[[Q:[^ ,]+]], %[[K:[^ ,]+]], %[[V:[^ ,]+]] = gdn.split_qkv %[[C]] : tensor<?x64xf32> -> tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x4x8xf32>
// CHECK-NEXT: %[[QN:[^ ,]+]] = gdn.l2norm %[[Q]]
// CHECK-NEXT: %[[KN:[^ ,]+]] = gdn.l2norm %[[K]]
// CHECK-NEXT: %[[G:[^ ,]+]], %[[BETA:[^ ,]+]] = gdn.gates %[[A]], %[[B]], %[[ALOG]], %[[DTB]]
// CHECK-NEXT: %[[O:[^ ,]+]], %{{[^ ,]+}} = gdn.delta_rule %[[QN]], %[[KN]], %[[V]], %[[G]], %[[BETA]], %[[P]]
// CHECK-SAME: -> (tensor<?x4x8xf32>, tensor<?x4x8x8xf32>)
// CHECK-NEXT: %[[NORMED:[^ ,]+]] = gdn.gated_rmsnorm %[[O]], %[[Z]], %[[NORM]]
// CHECK-NEXT: %[[Y:[^ ,]+]] = gdn.linear %[[NORMED]], %[[WOUT]] : (tensor<?x4x8xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @qwen3_5_layer(%x: tensor<?x64xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>,
    %w_qkv: tensor<64x64xf32>, %w_z: tensor<32x64xf32>, %w_b: tensor<4x64xf32>,
    %w_a: tensor<4x64xf32>, %conv: tensor<64x4xf32>, %a_log: tensor<4xf32>,
    %dt_bias: tensor<4xf32>, %norm: tensor<8xf32>, %w_out: tensor<64x32xf32>)
    -> tensor<?x64xf32> {
  %y = gdn.layer %x, %p weights(%w_qkv, %w_z, %w_b, %w_a, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_5>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 8 : i64, head_dim_v = 8 : i64,
       conv_width = 4 : i64}
      : (tensor<?x64xf32>, !gdn.packing<seqs = ?, tokens = ?>, tensor<64x64xf32>,
         tensor<32x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>, tensor<64x4xf32>,
         tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<64x32xf32>)
      -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
