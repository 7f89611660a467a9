// GPU case: the fused prologue at conv width 3 (a window of 2 rows, so runs
// unroll 2 rows at a time), with bias, initial and final conv states and
// alignment padding; otherwise as prologue_states_padded.
func.func @prologue_width3(%mixed: tensor<?x384xbf16>, %conv: tensor<384x3xbf16>,
                                  %bias: tensor<384xbf16>, %h0: tensor<?x384x2xbf16>,
                                  %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>,
                                  %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
                                  %cu: tensor<?xi32>, %cu_padded: tensor<?xi32>)
    -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>,
        tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x384x2xbf16>) {
  %p = gdn.packing %cu padded %cu_padded
      : tensor<?xi32>, tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
  %c, %h = gdn.causal_conv1d %mixed, %conv, %p bias(%bias) initial_state(%h0)
      {width = 3 : i64, activation = #gdn.act<silu>}
      : (tensor<?x384xbf16>, tensor<384x3xbf16>, !gdn.packing<seqs = ?, tokens = ?, padded>,
         tensor<384xbf16>, tensor<?x384x2xbf16>) -> (tensor<?x384xbf16>, tensor<?x384x2xbf16>)
  %q, %k, %v = gdn.split_qkv %c : tensor<?x384xbf16>
      -> tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>
  %qn = gdn.l2norm %q : tensor<?x2x64xbf16>
  %kn = gdn.l2norm %k : tensor<?x2x64xbf16>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias {allow_neg_eigval = true}
      : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<?x4xf32>, tensor<?x4xf32>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>,
         tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?, padded>)
      -> (tensor<?x4x32xbf16>, tensor<?x4x64x32xf32>)
  return %qn, %kn, %v, %g, %beta, %h
      : tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>,
        tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x384x2xbf16>
}
