// GPU case (its backward, core_states_backward): a GDN core with every
// option the kernels take: conv bias and initial conv states (their
// gradients), the final conv states (their cotangents), beta with negative
// eigenvalues (2 sigmoid) and the gated RMSNorm epilogue, at K = V = 64
// with 2 value heads per key head. gdn-generate-backward and gdn-pipeline
// compile its backward into the recomputed prologue, the delta-rule,
// prologue and epilogue backward kernels.
func.func @core_states(%mixed: tensor<?x256xbf16>, %conv: tensor<256x4xbf16>,
                       %bias: tensor<256xbf16>, %h0: tensor<?x256x3xbf16>,
                       %a: tensor<?x2xbf16>, %b: tensor<?x2xbf16>,
                       %a_log: tensor<2xf32>, %dt_bias: tensor<2xf32>,
                       %z: tensor<?x2x64xbf16>, %norm: tensor<64xbf16>,
                       %cu: tensor<?xi32>)
    -> (tensor<?x2x64xbf16>, tensor<?x256x3xbf16>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %c, %h = gdn.causal_conv1d %mixed, %conv, %p bias(%bias) initial_state(%h0)
      {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x256xbf16>, tensor<256x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>,
         tensor<256xbf16>, tensor<?x256x3xbf16>) -> (tensor<?x256xbf16>, tensor<?x256x3xbf16>)
  %q, %k, %v = gdn.split_qkv %c : tensor<?x256xbf16>
      -> tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>
  %qn = gdn.l2norm %q : tensor<?x1x64xbf16>
  %kn = gdn.l2norm %k : tensor<?x1x64xbf16>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias {allow_neg_eigval = true}
      : (tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xf32>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2xf32>,
         tensor<?x2xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64x64xf32>)
  %y = gdn.gated_rmsnorm %o, %z, %norm
      : (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<64xbf16>) -> tensor<?x2x64xbf16>
  return %y, %h : tensor<?x2x64xbf16>, tensor<?x256x3xbf16>
}
