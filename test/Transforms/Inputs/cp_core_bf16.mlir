// The GDN core in bf16 (fp32 gates and states), the production dtypes: the
// all_to_all of the gate inputs keeps their bf16 element type.
func.func @core(%mixed: tensor<?x64xbf16>, %w: tensor<64x4xbf16>, %a: tensor<?x16xbf16>, %b: tensor<?x16xbf16>, %a_log: tensor<16xf32>, %dt_bias: tensor<16xf32>, %cu: tensor<?xi32>) -> (tensor<?x16x2xbf16>, tensor<?x16x2x2xf32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %c = gdn.causal_conv1d %mixed, %w, %p {width = 4 : i64, activation = #gdn.act<silu>} : (tensor<?x64xbf16>, tensor<64x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x64xbf16>
  %q, %k, %v = gdn.split_qkv %c : tensor<?x64xbf16> -> tensor<?x8x2xbf16>, tensor<?x8x2xbf16>, tensor<?x16x2xbf16>
  %qn = gdn.l2norm %q : tensor<?x8x2xbf16>
  %kn = gdn.l2norm %k : tensor<?x8x2xbf16>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<16xf32>, tensor<16xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p : (tensor<?x8x2xbf16>, tensor<?x8x2xbf16>, tensor<?x16x2xbf16>, tensor<?x16xf32>, tensor<?x16xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> (tensor<?x16x2xbf16>, tensor<?x16x2x2xf32>)
  return %o, %s : tensor<?x16x2xbf16>, tensor<?x16x2x2xf32>
}
