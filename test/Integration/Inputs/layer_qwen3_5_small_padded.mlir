// GPU case: a whole Qwen3.5-style GDN layer at P = 1 on a padded pack
// (separate q/k/v, z, b and a projections; hidden 256, 2 key heads and 4
// value heads of 128, bf16): five gdnrt_linear calls around the kernels,
// padding rows included, checked against gdn-run's float64 result of the
// unexpanded layer.
func.func @layer_qwen3_5_small_padded(
    %x: tensor<?x256xbf16>, %cu: tensor<?xi32>, %cu_padded: tensor<?xi32>,
    %w_qkv: tensor<1024x256xbf16>, %w_z: tensor<512x256xbf16>,
    %w_b: tensor<4x256xbf16>, %w_a: tensor<4x256xbf16>,
    %conv: tensor<1024x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
    %norm: tensor<128xbf16>, %w_out: tensor<256x512xbf16>)
    -> tensor<?x256xbf16> {
  %p = gdn.packing %cu padded %cu_padded
      : tensor<?xi32>, tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
  %y = gdn.layer %x, %p
      weights(%w_qkv, %w_z, %w_b, %w_a, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_5>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64,
       conv_width = 4 : i64, norm_eps = 1.0e-06 : f64}
      : (tensor<?x256xbf16>, !gdn.packing<seqs = ?, tokens = ?, padded>,
         tensor<1024x256xbf16>, tensor<512x256xbf16>, tensor<4x256xbf16>,
         tensor<4x256xbf16>, tensor<1024x4xbf16>, tensor<4xf32>, tensor<4xf32>,
         tensor<128xbf16>, tensor<256x512xbf16>)
      -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}
