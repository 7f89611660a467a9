// GPU case: the fused prologue at conv width 2 with an initial conv state
// and no final one (the initial state's gradient then comes from the conv
// taps alone), alignment padding, bf16, the small GQA config of
// prologue_final_state. The delta rule is only there for gdn-fuse.
func.func @prologue_width2_initial(%mixed: tensor<?x384xbf16>, %conv: tensor<384x2xbf16>,
                                   %h0: tensor<?x384x1xbf16>,
                                   %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>,
                                   %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
                                   %cu: tensor<?xi32>, %cu_padded: tensor<?xi32>)
    -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>,
        tensor<?x4xf32>, tensor<?x4xf32>) {
  %p = gdn.packing %cu padded %cu_padded
      : tensor<?xi32>, tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
  %c = gdn.causal_conv1d %mixed, %conv, %p initial_state(%h0)
      {width = 2 : i64, activation = #gdn.act<silu>}
      : (tensor<?x384xbf16>, tensor<384x2xbf16>, !gdn.packing<seqs = ?, tokens = ?, padded>,
         tensor<?x384x1xbf16>) -> tensor<?x384xbf16>
  %q, %k, %v = gdn.split_qkv %c : tensor<?x384xbf16>
      -> tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>
  %qn = gdn.l2norm %q : tensor<?x2x64xbf16>
  %kn = gdn.l2norm %k : tensor<?x2x64xbf16>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<?x4xf32>, tensor<?x4xf32>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>,
         tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?, padded>)
      -> (tensor<?x4x32xbf16>, tensor<?x4x64x32xf32>)
  return %qn, %kn, %v, %g, %beta
      : tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>,
        tensor<?x4xf32>, tensor<?x4xf32>
}
