// A Qwen3-Next layer on all tokens (P = 1), float64, with 16 key heads and 32
// value heads (K = V = 2, hidden 8, width 4), so that headwise CP divides
// the heads at P = 8 even inside SP = 2. Slow decay (A_log from -6 to -2.5)
// so delta-rule states cross rank boundaries with weight.
func.func @layer(%x: tensor<?x8xf64>, %cu: tensor<?xi32>,
                 %w_qkvz: tensor<192x8xf64>, %w_ba: tensor<64x8xf64>,
                 %conv: tensor<128x4xf64>, %dt_bias: tensor<32xf64>,
                 %norm: tensor<2xf64>, %w_out: tensor<8x64xf64>) -> tensor<?x8xf64> {
  %a_log = arith.constant dense<[-6.0000, -5.8871, -5.7742, -5.6613, -5.5484, -5.4355, -5.3226, -5.2097, -5.0968, -4.9839, -4.8710, -4.7581, -4.6452, -4.5323, -4.4194, -4.3065, -4.1935, -4.0806, -3.9677, -3.8548, -3.7419, -3.6290, -3.5161, -3.4032, -3.2903, -3.1774, -3.0645, -2.9516, -2.8387, -2.7258, -2.6129, -2.5000]> : tensor<32xf64>
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %y = gdn.layer %x, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 16 : i64,
       value_heads = 32 : i64, head_dim_k = 2 : i64, head_dim_v = 2 : i64,
       conv_width = 4 : i64}
      : (tensor<?x8xf64>, !gdn.packing<seqs = ?, tokens = ?>, tensor<192x8xf64>,
         tensor<64x8xf64>, tensor<128x4xf64>, tensor<32xf64>, tensor<32xf64>,
         tensor<2xf64>, tensor<8x64xf64>) -> tensor<?x8xf64>
  return %y : tensor<?x8xf64>
}
