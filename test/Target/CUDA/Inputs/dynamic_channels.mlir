// A prologue with a dynamic channel count: gdn-translate refuses it (the
// CUDA emitter needs static sizes except the token dimension).
func.func @dynamic_channels(%mixed: tensor<?x?xbf16>, %conv: tensor<384x4xbf16>,
    %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
    %cu: tensor<?xi32>) -> tensor<?x4xf32> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %conv, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64,
       head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>,
       l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false,
       threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x?xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>,
         tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return %g : tensor<?x4xf32>
}
