// GPU case: a forward core with as many key heads as value heads (4 of 128,
// 1536 conv channels, bf16), with initial delta-rule states. With one value
// head per key head the wgmma scan computes P = Q K^T itself and the
// prepare kernel skips it (kWgmmaScanScores' default), in a workspace
// without P: checked against gdn-run's float64 result (o and final states).
func.func @core_mha4(%mixed: tensor<?x1536xbf16>, %conv: tensor<1536x4xbf16>,
                     %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>,
                     %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
                     %s0: tensor<?x4x128x128xf32>, %cu: tensor<?xi32>)
    -> (tensor<?x4x128xbf16>, tensor<?x4x128x128xf32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x1536xbf16>, tensor<1536x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>)
      -> tensor<?x1536xbf16>
  %q, %k, %v = gdn.split_qkv %c : tensor<?x1536xbf16>
      -> tensor<?x4x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4x128xbf16>
  %qn = gdn.l2norm %q : tensor<?x4x128xbf16>
  %kn = gdn.l2norm %k : tensor<?x4x128xbf16>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<?x4xf32>, tensor<?x4xf32>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p initial_state(%s0)
      : (tensor<?x4x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4x128xbf16>,
         tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>,
         tensor<?x4x128x128xf32>)
      -> (tensor<?x4x128xbf16>, tensor<?x4x128x128xf32>)
  return %o, %s : tensor<?x4x128xbf16>, tensor<?x4x128x128xf32>
}
