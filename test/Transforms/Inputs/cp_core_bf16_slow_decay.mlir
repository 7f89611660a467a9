// The GDN core in the production dtypes (bf16 activations, fp32 gates and
// states) with slow decay (A_log from -7 to -2.5, as in
// cp_core_slow_decay.mlir), initial conv and delta-rule states, alignment
// padding and GQA (2 key heads, 4 value heads, K = V = 4): under chunkwise
// CP the states a rank hands on carry weight, so the state summaries and
// their gradients show in every output.
func.func @core(%mixed: tensor<?x32xbf16>, %w: tensor<32x4xbf16>,
                %h0: tensor<?x32x3xbf16>, %a: tensor<?x4xbf16>,
                %b: tensor<?x4xbf16>, %dt_bias: tensor<4xf32>,
                %s0: tensor<?x4x4x4xf32>, %cu: tensor<?xi32>,
                %cu_padded: tensor<?xi32>)
    -> (tensor<?x4x4xbf16>, tensor<?x4x4x4xf32>) {
  %a_log = arith.constant dense<[-7.0, -5.5, -4.0, -2.5]> : tensor<4xf32>
  %p = gdn.packing %cu padded %cu_padded
      : tensor<?xi32>, tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
  %c = gdn.causal_conv1d %mixed, %w, %p initial_state(%h0)
      {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x32xbf16>, tensor<32x4xbf16>, !gdn.packing<seqs = ?, tokens = ?, padded>,
         tensor<?x32x3xbf16>) -> tensor<?x32xbf16>
  %q, %k, %v = gdn.split_qkv %c : tensor<?x32xbf16>
      -> tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x4xbf16>
  %qn = gdn.l2norm %q : tensor<?x2x4xbf16>
  %kn = gdn.l2norm %k : tensor<?x2x4xbf16>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<?x4xf32>, tensor<?x4xf32>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p initial_state(%s0)
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x4xbf16>, tensor<?x4xf32>,
         tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?, padded>, tensor<?x4x4x4xf32>)
      -> (tensor<?x4x4xbf16>, tensor<?x4x4x4xf32>)
  return %o, %s : tensor<?x4x4xbf16>, tensor<?x4x4x4xf32>
}
