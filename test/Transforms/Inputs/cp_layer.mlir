// Whole GDN layers on all tokens (P = 1), float64, in both projection
// layouts: hidden 8, 4 key heads and 8 value heads, K = V = 2, conv width 4.
// The context-parallel tests expand, distribute and compare them.
func.func @qwen3_next(%x: tensor<?x8xf64>, %cu: tensor<?xi32>,
                      %w_qkvz: tensor<48x8xf64>, %w_ba: tensor<16x8xf64>,
                      %conv: tensor<32x4xf64>, %a_log: tensor<8xf64>,
                      %dt_bias: tensor<8xf64>, %norm: tensor<2xf64>,
                      %w_out: tensor<8x16xf64>) -> tensor<?x8xf64> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %y = gdn.layer %x, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 4 : i64,
       value_heads = 8 : i64, head_dim_k = 2 : i64, head_dim_v = 2 : i64,
       conv_width = 4 : i64}
      : (tensor<?x8xf64>, !gdn.packing<seqs = ?, tokens = ?>, tensor<48x8xf64>,
         tensor<16x8xf64>, tensor<32x4xf64>, tensor<8xf64>, tensor<8xf64>,
         tensor<2xf64>, tensor<8x16xf64>) -> tensor<?x8xf64>
  return %y : tensor<?x8xf64>
}

func.func @qwen3_5(%x: tensor<?x8xf64>, %cu: tensor<?xi32>,
                   %w_qkv: tensor<32x8xf64>, %w_z: tensor<16x8xf64>,
                   %w_b: tensor<8x8xf64>, %w_a: tensor<8x8xf64>,
                   %conv: tensor<32x4xf64>, %a_log: tensor<8xf64>,
                   %dt_bias: tensor<8xf64>, %norm: tensor<2xf64>,
                   %w_out: tensor<8x16xf64>) -> tensor<?x8xf64> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %y = gdn.layer %x, %p
      weights(%w_qkv, %w_z, %w_b, %w_a, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_5>, key_heads = 4 : i64,
       value_heads = 8 : i64, head_dim_k = 2 : i64, head_dim_v = 2 : i64,
       conv_width = 4 : i64, scale = 0.5 : f64, allow_neg_eigval = true}
      : (tensor<?x8xf64>, !gdn.packing<seqs = ?, tokens = ?>, tensor<32x8xf64>,
         tensor<16x8xf64>, tensor<8x8xf64>, tensor<8x8xf64>, tensor<32x4xf64>,
         tensor<8xf64>, tensor<8xf64>, tensor<2xf64>, tensor<8x16xf64>)
      -> tensor<?x8xf64>
  return %y : tensor<?x8xf64>
}

// Two Qwen3-Next layers stacked: the second reads the first's output.
func.func @stacked(%x: tensor<?x8xf64>, %cu: tensor<?xi32>,
                   %w_qkvz: tensor<48x8xf64>, %w_ba: tensor<16x8xf64>,
                   %conv: tensor<32x4xf64>, %a_log: tensor<8xf64>,
                   %dt_bias: tensor<8xf64>, %norm: tensor<2xf64>,
                   %w_out: tensor<8x16xf64>, %w_qkvz2: tensor<48x8xf64>,
                   %w_ba2: tensor<16x8xf64>, %conv2: tensor<32x4xf64>,
                   %w_out2: tensor<8x16xf64>) -> tensor<?x8xf64> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %y = gdn.layer %x, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 4 : i64,
       value_heads = 8 : i64, head_dim_k = 2 : i64, head_dim_v = 2 : i64,
       conv_width = 4 : i64}
      : (tensor<?x8xf64>, !gdn.packing<seqs = ?, tokens = ?>, tensor<48x8xf64>,
         tensor<16x8xf64>, tensor<32x4xf64>, tensor<8xf64>, tensor<8xf64>,
         tensor<2xf64>, tensor<8x16xf64>) -> tensor<?x8xf64>
  %y2 = gdn.layer %y, %p weights(%w_qkvz2, %w_ba2, %conv2, %a_log, %dt_bias, %norm, %w_out2)
      {projections = #gdn.projections<qwen3_next>, key_heads = 4 : i64,
       value_heads = 8 : i64, head_dim_k = 2 : i64, head_dim_v = 2 : i64,
       conv_width = 4 : i64}
      : (tensor<?x8xf64>, !gdn.packing<seqs = ?, tokens = ?>, tensor<48x8xf64>,
         tensor<16x8xf64>, tensor<32x4xf64>, tensor<8xf64>, tensor<8xf64>,
         tensor<2xf64>, tensor<8x16xf64>) -> tensor<?x8xf64>
  return %y2 : tensor<?x8xf64>
}
