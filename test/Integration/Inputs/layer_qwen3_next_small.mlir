// GPU case: a whole Qwen3-Next-style GDN layer at P = 1, small enough for its
// inputs to travel as .npy files (hidden 256, 2 key heads and 4 value heads
// of 128 as in the real model, 1024 conv channels, bf16): gdn-pipeline
// leaves the projections
// (gdn.linear, run by gdnrt_linear on cuBLASLt) and gdn.split_qkvz (strided
// device copies) around the prologue, delta-rule and epilogue kernels, and
// the whole-function entry point runs them all; checked against gdn-run's
// float64 result of the unexpanded layer. (With head dims of 64 the layer
// measured 5.4e-3 on the H200, above the bf16 tolerance: the delta rule's
// own error at K = 64 is 4.5e-3, see core_gqa2x4_padded.)
func.func @layer_qwen3_next_small(
    %x: tensor<?x256xbf16>, %cu: tensor<?xi32>,
    %in_proj_qkvz: tensor<1536x256xbf16>, %in_proj_ba: tensor<8x256xbf16>,
    %conv: tensor<1024x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
    %norm: tensor<128xbf16>, %out_proj: tensor<256x512xbf16>)
    -> tensor<?x256xbf16> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %y = gdn.layer %x, %p
      weights(%in_proj_qkvz, %in_proj_ba, %conv, %a_log, %dt_bias, %norm, %out_proj)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64,
       conv_width = 4 : i64, norm_eps = 1.0e-06 : f64}
      : (tensor<?x256xbf16>, !gdn.packing<seqs = ?, tokens = ?>,
         tensor<1536x256xbf16>, tensor<8x256xbf16>, tensor<1024x4xbf16>,
         tensor<4xf32>, tensor<4xf32>, tensor<128xbf16>, tensor<256x512xbf16>)
      -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}
