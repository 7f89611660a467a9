// A GatedDeltaNet layer of Qwen3-Next-80B-A3B (hidden 2048, 16 key heads and
// 32 value heads of dim 128, conv width 4, 8192 conv channels), over a pack of
// four sequences in bf16, as a training step feeds it. The fused projections
// are interleaved per key-head group (qkvz, ba).
//
//   gdn-opt --gdn-pipeline examples/qwen3_next_80b_a3b_layer.mlir

func.func @qwen3_next_gdn_layer(
    %x: tensor<8192x2048xbf16>, %cu_seqlens: tensor<5xi32>,
    %in_proj_qkvz: tensor<12288x2048xbf16>, %in_proj_ba: tensor<64x2048xbf16>,
    %conv: tensor<8192x4xbf16>, %a_log: tensor<32xf32>, %dt_bias: tensor<32xf32>,
    %norm: tensor<128xbf16>, %out_proj: tensor<2048x4096xbf16>)
    -> tensor<8192x2048xbf16> {
  %packing = gdn.packing %cu_seqlens
      : tensor<5xi32> -> !gdn.packing<seqs = 4, tokens = 8192, max_len = 4096>
  %y = gdn.layer %x, %packing
      weights(%in_proj_qkvz, %in_proj_ba, %conv, %a_log, %dt_bias, %norm, %out_proj)
      {projections = #gdn.projections<qwen3_next>, key_heads = 16 : i64,
       value_heads = 32 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64,
       conv_width = 4 : i64, norm_eps = 1.0e-06 : f64}
      : (tensor<8192x2048xbf16>, !gdn.packing<seqs = 4, tokens = 8192, max_len = 4096>,
         tensor<12288x2048xbf16>, tensor<64x2048xbf16>, tensor<8192x4xbf16>,
         tensor<32xf32>, tensor<32xf32>, tensor<128xbf16>, tensor<2048x4096xbf16>)
      -> tensor<8192x2048xbf16>
  return %y : tensor<8192x2048xbf16>
}
