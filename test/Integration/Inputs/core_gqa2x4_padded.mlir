// GPU case: the whole forward core on a padded pack (alignment padding
// between sequences), a small GQA config (2 key heads, 4 value heads of 64,
// 512 conv channels, bf16), no initial state; o and the final states are
// checked against gdn-run's float64 result.
func.func @core_gqa2x4_padded(%mixed: tensor<?x512xbf16>, %conv: tensor<512x4xbf16>,
                              %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>,
                              %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
                              %cu: tensor<?xi32>, %cu_padded: tensor<?xi32>)
    -> (tensor<?x4x64xbf16>, tensor<?x4x64x64xf32>) {
  %p = gdn.packing %cu padded %cu_padded
      : tensor<?xi32>, tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x512xbf16>, tensor<512x4xbf16>, !gdn.packing<seqs = ?, tokens = ?, padded>)
      -> tensor<?x512xbf16>
  %q, %k, %v = gdn.split_qkv %c : tensor<?x512xbf16>
      -> tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x64xbf16>
  %qn = gdn.l2norm %q : tensor<?x2x64xbf16>
  %kn = gdn.l2norm %k : tensor<?x2x64xbf16>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<?x4xf32>, tensor<?x4xf32>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x64xbf16>,
         tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?, padded>)
      -> (tensor<?x4x64xbf16>, tensor<?x4x64x64xf32>)
  return %o, %s : tensor<?x4x64xbf16>, tensor<?x4x64x64xf32>
}
