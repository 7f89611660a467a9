// A core whose gate input a is projected after the conv: the parallel passes
// must place their rewrite where every operand of the core is defined.
func.func @core(%mixed: tensor<?x64xf64>, %w: tensor<64x4xf64>, %x: tensor<?x8xf64>, %wa: tensor<16x8xf64>,
                %b: tensor<?x16xf64>, %a_log: tensor<16xf64>,
                %dt_bias: tensor<16xf64>, %cu: tensor<?xi32>)
    -> (tensor<?x16x2xf64>, tensor<?x16x2x2xf64>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %c = gdn.causal_conv1d %mixed, %w, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x64xf64>, tensor<64x4xf64>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x64xf64>
  %a = gdn.linear %x, %wa : (tensor<?x8xf64>, tensor<16x8xf64>) -> tensor<?x16xf64>
  %q, %k, %v = gdn.split_qkv %c : tensor<?x64xf64> -> tensor<?x8x2xf64>, tensor<?x8x2xf64>, tensor<?x16x2xf64>
  %qn = gdn.l2norm %q : tensor<?x8x2xf64>
  %kn = gdn.l2norm %k : tensor<?x8x2xf64>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias {allow_neg_eigval = true}
      : (tensor<?x16xf64>, tensor<?x16xf64>, tensor<16xf64>, tensor<16xf64>) -> (tensor<?x16xf64>, tensor<?x16xf64>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<?x8x2xf64>, tensor<?x8x2xf64>, tensor<?x16x2xf64>, tensor<?x16xf64>, tensor<?x16xf64>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x16x2xf64>, tensor<?x16x2x2xf64>)
  return %o, %s : tensor<?x16x2xf64>, tensor<?x16x2x2xf64>
}
