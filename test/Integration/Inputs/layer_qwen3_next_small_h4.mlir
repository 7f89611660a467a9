// GPU case: the Qwen3-Next-style layer of layer_qwen3_next_small.mlir with
// 4 key heads and 8 value heads of 128 (hidden 256, 2048 conv channels,
// bf16), enough heads for SP 2 x headwise CP 2 (one key head and two value
// heads per rank) in the parallel suite
// (utils/prepare-parallel-gpu-tests.sh).
func.func @layer_qwen3_next_small_h4(
    %x: tensor<?x256xbf16>, %cu: tensor<?xi32>,
    %in_proj_qkvz: tensor<3072x256xbf16>, %in_proj_ba: tensor<16x256xbf16>,
    %conv: tensor<2048x4xbf16>, %a_log: tensor<8xf32>, %dt_bias: tensor<8xf32>,
    %norm: tensor<128xbf16>, %out_proj: tensor<256x1024xbf16>)
    -> tensor<?x256xbf16> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %y = gdn.layer %x, %p
      weights(%in_proj_qkvz, %in_proj_ba, %conv, %a_log, %dt_bias, %norm, %out_proj)
      {projections = #gdn.projections<qwen3_next>, key_heads = 4 : i64,
       value_heads = 8 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64,
       conv_width = 4 : i64, norm_eps = 1.0e-06 : f64}
      : (tensor<?x256xbf16>, !gdn.packing<seqs = ?, tokens = ?>,
         tensor<3072x256xbf16>, tensor<16x256xbf16>, tensor<2048x4xbf16>,
         tensor<8xf32>, tensor<8xf32>, tensor<128xbf16>, tensor<256x1024xbf16>)
      -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}
