// GPU case: the fused prologue at conv width 2 (a window of one row), with
// final conv states and no initial ones; otherwise as prologue_final_state.
func.func @prologue_width2(%mixed: tensor<?x384xbf16>, %conv: tensor<384x2xbf16>,
                                %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>,
                                %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
                                %cu: tensor<?xi32>)
    -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>,
        tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x384x1xbf16>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %c, %h = gdn.causal_conv1d %mixed, %conv, %p {width = 2 : i64, activation = #gdn.act<silu>}
      : (tensor<?x384xbf16>, tensor<384x2xbf16>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x384xbf16>, tensor<?x384x1xbf16>)
  %q, %k, %v = gdn.split_qkv %c : tensor<?x384xbf16>
      -> tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>
  %qn = gdn.l2norm %q : tensor<?x2x64xbf16>
  %kn = gdn.l2norm %k : tensor<?x2x64xbf16>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<?x4xf32>, tensor<?x4xf32>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>,
         tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x4x32xbf16>, tensor<?x4x64x32xf32>)
  return %qn, %kn, %v, %g, %beta, %h
      : tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>,
        tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x384x1xbf16>
}
