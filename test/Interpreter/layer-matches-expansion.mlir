// gdn-expand-layer preserves the layer's function: the interpreter runs
// gdn.layer from its kernels directly, and the expanded primitive ops, on the
// same seeded inputs (a small f64 layer with GQA, both projection layouts,
// sequences of length 0, 1 and 65 in the pack).
// RUN: gdn-opt --gdn-expand-layer %s -o %t.mlir
// RUN: gdn-run --compare %s %t.mlir --entry=qwen3_next --seqlens=3,0,1,65,11 | FileCheck %s
// RUN: gdn-run --compare %s %t.mlir --entry=qwen3_5 --seqlens=65,1,14 --seed=3 | FileCheck %s
// RUN: gdn-run --compare %s %t.mlir --entry=qwen3_5 --seqlens=40,24 --delta-rule=chunked | FileCheck %s

// The same kernels in the same order: usually bit-identical, never above 1e-13.
// CHECK: result #0: {{.*}}rel_rms = {{0\.000e\+00|[0-9.]+e-1[3-9]}}  max_abs = {{.*}}  ok

// hidden 8, 2 key heads and 4 value heads, K = 4, V = 2, conv width 4.
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
