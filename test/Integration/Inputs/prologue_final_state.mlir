// GPU case: the fused prologue returning final conv states without initial
// ones (short sequences back-fill with zeros), no padding, bf16, a small GQA
// config (2 key heads of 64, 4 value heads of 32, 384 channels).
func.func @prologue_final_state(%mixed: tensor<?x384xbf16>, %conv: tensor<384x4xbf16>,
                                %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>,
                                %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
                                %cu: tensor<?xi32>)
    -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>,
        tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x384x3xbf16>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %c, %h = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x384xbf16>, tensor<?x384x3xbf16>)
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
        tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x384x3xbf16>
}
