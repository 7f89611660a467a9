// GPU case: the whole forward core at Qwen3-Next / Qwen3.5 size (16 key heads,
// 32 value heads of 128, 8192 conv channels, bf16), with initial delta-rule
// states: gdn-fuse makes it one prologue kernel and the chunked delta-rule
// kernels, checked against gdn-run's float64 result (o and final states).
func.func @core_gqa16x32(%mixed: tensor<?x8192xbf16>, %conv: tensor<8192x4xbf16>,
                         %a: tensor<?x32xbf16>, %b: tensor<?x32xbf16>,
                         %a_log: tensor<32xf32>, %dt_bias: tensor<32xf32>,
                         %s0: tensor<?x32x128x128xf32>, %cu: tensor<?xi32>)
    -> (tensor<?x32x128xbf16>, tensor<?x32x128x128xf32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x8192xbf16>, tensor<8192x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>)
      -> tensor<?x8192xbf16>
  %q, %k, %v = gdn.split_qkv %c : tensor<?x8192xbf16>
      -> tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x128xbf16>
  %qn = gdn.l2norm %q : tensor<?x16x128xbf16>
  %kn = gdn.l2norm %k : tensor<?x16x128xbf16>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<32xf32>, tensor<32xf32>)
      -> (tensor<?x32xf32>, tensor<?x32xf32>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p initial_state(%s0)
      : (tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x128xbf16>,
         tensor<?x32xf32>, tensor<?x32xf32>, !gdn.packing<seqs = ?, tokens = ?>,
         tensor<?x32x128x128xf32>)
      -> (tensor<?x32x128xbf16>, tensor<?x32x128x128xf32>)
  return %o, %s : tensor<?x32x128xbf16>, tensor<?x32x128x128xf32>
}
