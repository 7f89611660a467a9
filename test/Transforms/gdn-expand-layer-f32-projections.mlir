// gdn-expand-layer{f32-projections}: the input projections that feed the
// conv and the gate are stored in f32 (the conv's y, q, k, v, o, the normed
// o and the output keep bf16), in both layouts; b and a, and every f32 or
// f64 layer, are unchanged. The generated backward stores the cotangents of
// those f32 values in bf16, so its GEMMs and copies are the bf16 program's.
// RUN: gdn-opt %s --gdn-expand-layer=f32-projections=true | FileCheck %s --implicit-check-not=gdn.layer
// RUN: gdn-opt %s --gdn-expand-layer=f32-projections=true --gdn-generate-backward=functions=qwen3_next,qwen3_5 | FileCheck %s --check-prefix=BWD
// RUN: gdn-opt %s --gdn-expand-layer | FileCheck %s --check-prefix=DEFAULT

// H = 2, HV = 4, K = V = 8, hidden 64: conv channels 2HK + HV*V = 64.

// CHECK-LABEL: func.func @qwen3_next
// CHECK: gdn.linear %{{.*}} : (tensor<?x64xbf16>, tensor<96x64xbf16>) -> tensor<?x96xf32>
// CHECK: gdn.linear %{{.*}} : (tensor<?x64xbf16>, tensor<8x64xbf16>) -> tensor<?x8xbf16>
// CHECK: gdn.split_qkvz {{.*}} : (tensor<?x96xf32>, tensor<?x8xbf16>) -> (tensor<?x64xf32>, tensor<?x4x8xf32>, tensor<?x4xbf16>, tensor<?x4xbf16>)
// CHECK: gdn.causal_conv1d {{.*}} : (tensor<?x64xf32>, tensor<64x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x64xbf16>
// CHECK: gdn.delta_rule {{.*}} -> (tensor<?x4x8xbf16>, tensor<?x4x8x8xf32>)
// CHECK: gdn.gated_rmsnorm {{.*}} : (tensor<?x4x8xbf16>, tensor<?x4x8xf32>, tensor<8xbf16>) -> tensor<?x4x8xbf16>
// CHECK: gdn.linear {{.*}} : (tensor<?x4x8xbf16>, tensor<64x32xbf16>) -> tensor<?x64xbf16>

// BWD-LABEL: func.func @qwen3_next_backward
// BWD: gdn.gated_rmsnorm_grad {{.*}} : (tensor<?x4x8xbf16>, tensor<?x4x8xbf16>, tensor<?x4x8xf32>, tensor<8xbf16>) -> (tensor<?x4x8xbf16>, tensor<?x4x8xbf16>, tensor<8xbf16>)
// BWD: gdn.causal_conv1d_grad {{.*}} : (tensor<?x64xbf16>, tensor<?x64xf32>, tensor<64x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>) -> (tensor<?x64xbf16>, tensor<64x4xbf16>)
// BWD: gdn.merge_qkvz {{.*}} : (tensor<?x64xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>) -> (tensor<?x96xbf16>, tensor<?x8xbf16>)
// BWD: gdn.linear_grad {{.*}} : (tensor<?x96xbf16>, tensor<?x64xbf16>, tensor<96x64xbf16>) -> (tensor<?x64xbf16>, tensor<96x64xbf16>)

// DEFAULT-LABEL: func.func @qwen3_next
// DEFAULT: gdn.split_qkvz {{.*}} : (tensor<?x96xbf16>, tensor<?x8xbf16>) -> (tensor<?x64xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
func.func @qwen3_next(%x: tensor<?x64xbf16>, %p: !gdn.packing<seqs = ?, tokens = ?>,
    %w_qkvz: tensor<96x64xbf16>, %w_ba: tensor<8x64xbf16>, %conv: tensor<64x4xbf16>,
    %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %norm: tensor<8xbf16>,
    %w_out: tensor<64x32xbf16>) -> tensor<?x64xbf16> {
  %y = gdn.layer %x, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 8 : i64, head_dim_v = 8 : i64,
       conv_width = 4 : i64}
      : (tensor<?x64xbf16>, !gdn.packing<seqs = ?, tokens = ?>, tensor<96x64xbf16>,
         tensor<8x64xbf16>, tensor<64x4xbf16>, tensor<4xf32>, tensor<4xf32>,
         tensor<8xbf16>, tensor<64x32xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// CHECK-LABEL: func.func @qwen3_5
// CHECK: gdn.linear %{{.*}} : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xf32>
// CHECK: gdn.linear %{{.*}} : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x4x8xf32>
// CHECK: gdn.linear %{{.*}} : (tensor<?x64xbf16>, tensor<4x64xbf16>) -> tensor<?x4xbf16>
// CHECK: gdn.linear %{{.*}} : (tensor<?x64xbf16>, tensor<4x64xbf16>) -> tensor<?x4xbf16>
// CHECK: gdn.causal_conv1d {{.*}} -> tensor<?x64xbf16>
// CHECK: gdn.gated_rmsnorm {{.*}} : (tensor<?x4x8xbf16>, tensor<?x4x8xf32>, tensor<8xbf16>) -> tensor<?x4x8xbf16>

// BWD-LABEL: func.func @qwen3_5_backward
// BWD: gdn.gated_rmsnorm_grad {{.*}} -> (tensor<?x4x8xbf16>, tensor<?x4x8xbf16>, tensor<8xbf16>)
// BWD: gdn.causal_conv1d_grad {{.*}} -> (tensor<?x64xbf16>, tensor<64x4xbf16>)
// BWD: gdn.linear_grad {{.*}} : (tensor<?x4x8xbf16>, tensor<?x64xbf16>, tensor<32x64xbf16>) -> (tensor<?x64xbf16>, tensor<32x64xbf16>)
// BWD: gdn.linear_grad {{.*}} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64x64xbf16>) -> (tensor<?x64xbf16>, tensor<64x64xbf16>)
func.func @qwen3_5(%x: tensor<?x64xbf16>, %p: !gdn.packing<seqs = ?, tokens = ?>,
    %w_qkv: tensor<64x64xbf16>, %w_z: tensor<32x64xbf16>, %w_b: tensor<4x64xbf16>,
    %w_a: tensor<4x64xbf16>, %conv: tensor<64x4xbf16>, %a_log: tensor<4xf32>,
    %dt_bias: tensor<4xf32>, %norm: tensor<8xbf16>, %w_out: tensor<64x32xbf16>)
    -> tensor<?x64xbf16> {
  %y = gdn.layer %x, %p weights(%w_qkv, %w_z, %w_b, %w_a, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_5>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 8 : i64, head_dim_v = 8 : i64,
       conv_width = 4 : i64}
      : (tensor<?x64xbf16>, !gdn.packing<seqs = ?, tokens = ?>, tensor<64x64xbf16>,
         tensor<32x64xbf16>, tensor<4x64xbf16>, tensor<4x64xbf16>, tensor<64x4xbf16>,
         tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<64x32xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// An f32 layer has nothing to widen.
// CHECK-LABEL: func.func @f32_layer
// CHECK-NOT: f64
// CHECK: gdn.split_qkvz {{.*}} : (tensor<?x96xf32>, tensor<?x8xf32>) -> (tensor<?x64xf32>, tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>)
func.func @f32_layer(%x: tensor<?x64xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>,
    %w_qkvz: tensor<96x64xf32>, %w_ba: tensor<8x64xf32>, %conv: tensor<64x4xf32>,
    %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %norm: tensor<8xf32>,
    %w_out: tensor<64x32xf32>) -> tensor<?x64xf32> {
  %y = gdn.layer %x, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 8 : i64, head_dim_v = 8 : i64,
       conv_width = 4 : i64}
      : (tensor<?x64xf32>, !gdn.packing<seqs = ?, tokens = ?>, tensor<96x64xf32>,
         tensor<8x64xf32>, tensor<64x4xf32>, tensor<4xf32>, tensor<4xf32>,
         tensor<8xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
