// The prologue_gqa16x32 program of test/Integration/Inputs with the conv
// input, a and b in f32: what gdn_torch's layers (f32 projection outputs)
// feed the prologue. prologue_breakdown.cu times it with -DPB_INPUT_F32=1.
func.func @prologue_gqa16x32(%mixed: tensor<?x8192xf32>, %conv: tensor<8192x4xbf16>,
                             %a: tensor<?x32xf32>, %b: tensor<?x32xf32>,
                             %a_log: tensor<32xf32>, %dt_bias: tensor<32xf32>,
                             %cu: tensor<?xi32>)
    -> (tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x128xbf16>,
        tensor<?x32xf32>, tensor<?x32xf32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x8192xf32>, tensor<8192x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>)
      -> tensor<?x8192xbf16>
  %q, %k, %v = gdn.split_qkv %c : tensor<?x8192xbf16>
      -> tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x128xbf16>
  %qn = gdn.l2norm %q : tensor<?x16x128xbf16>
  %kn = gdn.l2norm %k : tensor<?x16x128xbf16>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<32xf32>, tensor<32xf32>)
      -> (tensor<?x32xf32>, tensor<?x32xf32>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x128xbf16>,
         tensor<?x32xf32>, tensor<?x32xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x32x128xbf16>, tensor<?x32x128x128xf32>)
  return %qn, %kn, %v, %g, %beta
      : tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x128xbf16>,
        tensor<?x32xf32>, tensor<?x32xf32>
}
