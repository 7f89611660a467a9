// A Qwen3-Next layer on all tokens (P = 1), float64, that decays slowly
// (A_log a constant, exp(A_log) from e^-6 to e^-2.5), so that delta-rule
// states cross rank boundaries with weight: the SP x CP tests compose both
// passes on it. Hidden 8, 4 key heads, 8 value heads, K = V = 2, width 4.
func.func @layer(%x: tensor<?x8xf64>, %cu: tensor<?xi32>,
                 %w_qkvz: tensor<48x8xf64>, %w_ba: tensor<16x8xf64>,
                 %conv: tensor<32x4xf64>, %dt_bias: tensor<8xf64>,
                 %norm: tensor<2xf64>, %w_out: tensor<8x16xf64>) -> tensor<?x8xf64> {
  %a_log = arith.constant dense<[-6.0, -5.5, -5.0, -4.5, -4.0, -3.5, -3.0, -2.5]> : tensor<8xf64>
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
