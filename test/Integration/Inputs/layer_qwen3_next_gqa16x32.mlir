// Benchmark program (utils/prepare-gpu-bench.sh): the GDN layer of
// Qwen3-Next-80B-A3B (hidden 2048, 16 key heads and 32 value heads of 128,
// conv width 4) over any packing, in bf16: its forward and the backward
// gdn-generate-backward makes, timed on the GPU at the reference packings.
func.func @layer_qwen3_next_gqa16x32(
    %x: tensor<?x2048xbf16>, %cu: tensor<?xi32>,
    %in_proj_qkvz: tensor<12288x2048xbf16>, %in_proj_ba: tensor<64x2048xbf16>,
    %conv: tensor<8192x4xbf16>, %a_log: tensor<32xf32>, %dt_bias: tensor<32xf32>,
    %norm: tensor<128xbf16>, %out_proj: tensor<2048x4096xbf16>)
    -> tensor<?x2048xbf16> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %y = gdn.layer %x, %p
      weights(%in_proj_qkvz, %in_proj_ba, %conv, %a_log, %dt_bias, %norm, %out_proj)
      {projections = #gdn.projections<qwen3_next>, key_heads = 16 : i64,
       value_heads = 32 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64,
       conv_width = 4 : i64, norm_eps = 1.0e-06 : f64}
      : (tensor<?x2048xbf16>, !gdn.packing<seqs = ?, tokens = ?>,
         tensor<12288x2048xbf16>, tensor<64x2048xbf16>, tensor<8192x4xbf16>,
         tensor<32xf32>, tensor<32xf32>, tensor<128xbf16>, tensor<2048x4096xbf16>)
      -> tensor<?x2048xbf16>
  return %y : tensor<?x2048xbf16>
}
