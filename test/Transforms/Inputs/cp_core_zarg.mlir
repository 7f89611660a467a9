// A core whose gated RMSNorm reads z from its own function argument: z
// becomes a token shard with the output.
func.func @core(%mixed: tensor<?x64xf64>, %w: tensor<64x4xf64>, %a: tensor<?x16xf64>, %b: tensor<?x16xf64>, %a_log: tensor<16xf64>, %dt_bias: tensor<16xf64>, %cu: tensor<?xi32>, %z: tensor<?x16x2xf64>, %nw: tensor<2xf64>) -> (tensor<?x16x2xf64>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %c = gdn.causal_conv1d %mixed, %w, %p {width = 4 : i64, activation = #gdn.act<silu>} : (tensor<?x64xf64>, tensor<64x4xf64>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x64xf64>
  %q, %k, %v = gdn.split_qkv %c : tensor<?x64xf64> -> tensor<?x8x2xf64>, tensor<?x8x2xf64>, tensor<?x16x2xf64>
  %qn = gdn.l2norm %q : tensor<?x8x2xf64>
  %kn = gdn.l2norm %k : tensor<?x8x2xf64>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x16xf64>, tensor<?x16xf64>, tensor<16xf64>, tensor<16xf64>) -> (tensor<?x16xf64>, tensor<?x16xf64>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p : (tensor<?x8x2xf64>, tensor<?x8x2xf64>, tensor<?x16x2xf64>, tensor<?x16xf64>, tensor<?x16xf64>, !gdn.packing<seqs = ?, tokens = ?>) -> (tensor<?x16x2xf64>, tensor<?x16x2x2xf64>)
  %y = gdn.gated_rmsnorm %o, %z, %nw : (tensor<?x16x2xf64>, tensor<?x16x2xf64>, tensor<2xf64>) -> tensor<?x16x2xf64>
  return %y : tensor<?x16x2xf64>
}
