// --gdn-pipeline expands gdn.layer into the primitive ops, projects straight
// into the split layouts, fuses the prologue
// (conv, split, l2norms, gates) and the gated RMSNorm into gdn_kernel ops,
// then canonicalizes and runs CSE.
// RUN: gdn-opt %s --gdn-pipeline | FileCheck %s --implicit-check-not=gdn.layer \
// RUN:   --implicit-check-not=gdn.causal_conv1d --implicit-check-not=gdn.l2norm \
// RUN:   --implicit-check-not=gdn.gates --implicit-check-not=gdn.gated_rmsnorm

// CHECK-LABEL: func.func @pipeline
// CHECK-SAME: (%[[X:[^:]+]]: tensor<16x64xf32>, %[[P:[^:]+]]: !gdn.packing<seqs = 2, tokens = 16>,
// CHECK-SAME: %[[WQKVZ:[^:]+]]: tensor<96x64xf32>, %[[WBA:[^:]+]]: tensor<8x64xf32>, %[[CONV:[^:]+]]: tensor<64x4xf32>,
// CHECK-SAME: %[[ALOG:[^:]+]]: tensor<4xf32>, %[[DTB:[^:]+]]: tensor<4xf32>, %[[NORM:[^:]+]]: tensor<8xf32>,
// CHECK-SAME: %[[WOUT:[^:]+]]: tensor<64x32xf32>)
// The split of the projections runs as projections by the weights' rows
// regrouped (gdn-split-projections).
// CHECK-NEXT: %[[WG:[^ ]+]] = gdn.regroup_sections %[[WQKVZ]] {dim = 0 : i64, groups = 2 : i64, inverse = true, section_sizes = array<i64: 16, 16, 32, 32>}
// CHECK-NEXT: %[[WBAG:[^ ]+]] = gdn.regroup_sections %[[WBA]] {dim = 0 : i64, groups = 2 : i64, inverse = true, section_sizes = array<i64: 4, 4>}
// CHECK-NEXT: %[[WM:[^ ]+]] = tensor.extract_slice %[[WG]][0, 0] [64, 64] [1, 1]
// CHECK-NEXT: %[[MIXED:[^ ]+]] = gdn.linear %[[X]], %[[WM]] {{.*}} -> tensor<16x64xf32>
// CHECK-NEXT: %[[WZ:[^ ]+]] = tensor.extract_slice %[[WG]][64, 0] [32, 64] [1, 1]
// CHECK-NEXT: %[[Z:[^ ]+]] = gdn.linear %[[X]], %[[WZ]] {{.*}} -> tensor<16x4x8xf32>
// CHECK-NEXT: %[[WB:[^ ]+]] = tensor.extract_slice %[[WBAG]][0, 0] [4, 64] [1, 1]
// CHECK-NEXT: %[[B:[^ ]+]] = gdn.linear %[[X]], %[[WB]]
// CHECK-NEXT: %[[WA:[^ ]+]] = tensor.extract_slice %[[WBAG]][4, 0] [4, 64] [1, 1]
// CHECK-NEXT: %[[A:[^ ]+]] = gdn.linear %[[X]], %[[WA]]
// CHECK-NEXT: %[[Q:[^ ,]+]], %[[K:[^ ,]+]], %[[V:[^ ,]+]], %[[G:[^ ,]+]], %[[BETA:[^ ,]+]] = gdn_kernel.prologue %[[MIXED]], %[[CONV]], %[[A]], %[[B]], %[[ALOG]], %[[DTB]], %[[P]]
// CHECK-SAME: {activation = #gdn.act<silu>, allow_neg_eigval = false, conv_width = 4 : i64, head_dim_k = 8 : i64, head_dim_v = 8 : i64, key_heads = 2 : i64, l2norm_eps = 9.9999999999999995E-7 : f64, rows_in_flight = 8 : i64, threads = 256 : i64, tokens_per_block = 32 : i64, value_heads = 4 : i64}
// CHECK-SAME: -> (tensor<16x2x8xf32>, tensor<16x2x8xf32>, tensor<16x4x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>)
// CHECK-NEXT: %[[O:[^ ,]+]], %{{[^ ,]+}} = gdn.delta_rule %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]], %[[P]]
// CHECK-NEXT: %[[NORMED:[^ ]+]] = gdn_kernel.gated_rmsnorm %[[O]], %[[Z]], %[[NORM]] {eps = 9.9999999999999995E-7 : f64, threads = 256 : i64}
// CHECK-NEXT: %[[Y:[^ ,]+]] = gdn.linear %[[NORMED]], %[[WOUT]] {{.*}} -> tensor<16x64xf32>
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
