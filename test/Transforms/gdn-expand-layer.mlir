// gdn-expand-layer on a Qwen3-Next layer (fused qkvz/ba projections): every
// primitive op in dataflow order, its types, and the packing threaded through.
// RUN: gdn-opt %s --gdn-expand-layer | FileCheck %s --implicit-check-not=gdn.layer

// key_heads H = 2, value_heads HV = 4, K = V = 8, hidden 64, conv width 4:
// qkvz has 2HK + 2HV*V = 96 features, ba 2HV = 8, the conv 2HK + HV*V = 64
// channels.

// CHECK-LABEL: func.func @qwen3_next_layer
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x64xbf16>, %[[CU:[^:]+]]: tensor<3xi32>,
// CHECK-SAME: %[[WQKVZ:[^:]+]]: tensor<96x64xbf16>, %[[WBA:[^:]+]]: tensor<8x64xbf16>,
// CHECK-SAME: %[[CONV:[^:]+]]: tensor<64x4xbf16>, %[[ALOG:[^:]+]]: tensor<4xf32>,
// CHECK-SAME: %[[DTB:[^:]+]]: tensor<4xf32>, %[[NORM:[^:]+]]: tensor<8xbf16>,
// CHECK-SAME: %[[WOUT:[^:]+]]: tensor<64x32xbf16>)
// CHECK-NEXT: %[[P:[^ ,]+]] = gdn.packing %[[CU]]
// CHECK-NEXT: %[[QKVZ:[^ ,]+]] = gdn.linear %[[X]], %[[WQKVZ]] : (tensor<16x64xbf16>, tensor<96x64xbf16>) -> tensor<16x96xbf16>
// CHECK-NEXT: %[[BA:[^ ,]+]] = gdn.linear %[[X]], %[[WBA]] : (tensor<16x64xbf16>, tensor<8x64xbf16>) -> tensor<16x8xbf16>
// CHECK-NEXT: %[[MIXED:[^ ,]+]], %[[Z:[^ ,]+]], %[[B:[^ ,]+]], %[[A:[^ ,]+]] = gdn.split_qkvz %[[QKVZ]], %[[BA]] {head_dim_k = 8 : i64, key_heads = 2 : i64}
// CHECK-SAME: : (tensor<16x96xbf16>, tensor<16x8xbf16>) -> (tensor<16x64xbf16>, tensor<16x4x8xbf16>, tensor<16x4xbf16>, tensor<16x4xbf16>)
// CHECK-NEXT: %[[CONVOUT:[^ ,]+]] = gdn.causal_conv1d %[[MIXED]], %[[CONV]], %[[P]] {activation = #gdn.act<silu>, width = 4 : i64}
// CHECK-SAME: : (tensor<16x64xbf16>, tensor<64x4xbf16>, !gdn.packing<seqs = 2, tokens = 16>) -> tensor<16x64xbf16>
// CHECK-NEXT: %[[Q:[^ ,]+]], %[[K:[^ ,]+]], %[[V:[^ ,]+]] = gdn.split_qkv %[[CONVOUT]] : tensor<16x64xbf16> -> tensor<16x2x8xbf16>, tensor<16x2x8xbf16>, tensor<16x4x8xbf16>
// CHECK-NEXT: %[[QN:[^ ,]+]] = gdn.l2norm %[[Q]] : tensor<16x2x8xbf16>
// CHECK-NEXT: %[[KN:[^ ,]+]] = gdn.l2norm %[[K]] : tensor<16x2x8xbf16>
// CHECK-NEXT: %[[G:[^ ,]+]], %[[BETA:[^ ,]+]] = gdn.gates %[[A]], %[[B]], %[[ALOG]], %[[DTB]]
// CHECK-SAME: : (tensor<16x4xbf16>, tensor<16x4xbf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<16x4xf32>, tensor<16x4xf32>)
// CHECK-NEXT: %[[O:[^ ,]+]], %{{[^ ,]+}} = gdn.delta_rule %[[QN]], %[[KN]], %[[V]], %[[G]], %[[BETA]], %[[P]]
// CHECK-SAME: : (tensor<16x2x8xbf16>, tensor<16x2x8xbf16>, tensor<16x4x8xbf16>, tensor<16x4xf32>, tensor<16x4xf32>, !gdn.packing<seqs = 2, tokens = 16>)
// CHECK-SAME: -> (tensor<16x4x8xbf16>, tensor<2x4x8x8xf32>)
// CHECK-NEXT: %[[NORMED:[^ ,]+]] = gdn.gated_rmsnorm %[[O]], %[[Z]], %[[NORM]]
// CHECK-SAME: : (tensor<16x4x8xbf16>, tensor<16x4x8xbf16>, tensor<8xbf16>) -> tensor<16x4x8xbf16>
// CHECK-NEXT: %[[Y:[^ ,]+]] = gdn.linear %[[NORMED]], %[[WOUT]] : (tensor<16x4x8xbf16>, tensor<64x32xbf16>) -> tensor<16x64xbf16>
// CHECK-NEXT: return %[[Y]] : tensor<16x64xbf16>
// CHECK-NOT: gdn.layer
func.func @qwen3_next_layer(%x: tensor<16x64xbf16>, %cu: tensor<3xi32>,
    %w_qkvz: tensor<96x64xbf16>, %w_ba: tensor<8x64xbf16>, %conv: tensor<64x4xbf16>,
    %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %norm: tensor<8xbf16>,
    %w_out: tensor<64x32xbf16>) -> tensor<16x64xbf16> {
  %p = gdn.packing %cu : tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 16>
  %y = gdn.layer %x, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 8 : i64, head_dim_v = 8 : i64,
       conv_width = 4 : i64}
      : (tensor<16x64xbf16>, !gdn.packing<seqs = 2, tokens = 16>, tensor<96x64xbf16>,
         tensor<8x64xbf16>, tensor<64x4xbf16>, tensor<4xf32>, tensor<4xf32>,
         tensor<8xbf16>, tensor<64x32xbf16>) -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}
