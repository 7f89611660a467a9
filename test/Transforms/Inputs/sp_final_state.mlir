// An expanded Qwen3.5 layer (hidden 8, 4 key heads, 8 value heads, K = V = 2)
// that returns its delta-rule final state next to its output: SP gathers the
// state over the heads, and composed with CP, over the CP group too.
func.func @final_state_returned(%arg0: tensor<?x8xf64>, %arg1: tensor<?xi32>, %arg2: tensor<32x8xf64>, %arg3: tensor<16x8xf64>, %arg4: tensor<8x8xf64>, %arg5: tensor<8x8xf64>, %arg6: tensor<32x4xf64>, %arg7: tensor<8xf64>, %arg8: tensor<8xf64>, %arg9: tensor<2xf64>, %arg10: tensor<8x16xf64>) -> (tensor<?x8xf64>, tensor<?x8x2x2xf64>) {
  %0 = gdn.packing %arg1 : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %1 = gdn.linear %arg0, %arg2 : (tensor<?x8xf64>, tensor<32x8xf64>) -> tensor<?x32xf64>
  %2 = gdn.linear %arg0, %arg3 : (tensor<?x8xf64>, tensor<16x8xf64>) -> tensor<?x8x2xf64>
  %3 = gdn.linear %arg0, %arg4 : (tensor<?x8xf64>, tensor<8x8xf64>) -> tensor<?x8xf64>
  %4 = gdn.linear %arg0, %arg5 : (tensor<?x8xf64>, tensor<8x8xf64>) -> tensor<?x8xf64>
  %y = gdn.causal_conv1d %1, %arg6, %0 {activation = #gdn.act<silu>, width = 4 : i64} : (tensor<?x32xf64>, tensor<32x4xf64>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x32xf64>
  %q, %k, %v = gdn.split_qkv %y : tensor<?x32xf64> -> tensor<?x4x2xf64>, tensor<?x4x2xf64>, tensor<?x8x2xf64>
  %5 = gdn.l2norm %q : tensor<?x4x2xf64>
  %6 = gdn.l2norm %k : tensor<?x4x2xf64>
  %g, %beta = gdn.gates %4, %3, %arg7, %arg8 {allow_neg_eigval = true} : (tensor<?x8xf64>, tensor<?x8xf64>, tensor<8xf64>, tensor<8xf64>) -> (tensor<?x8xf64>, tensor<?x8xf64>)
  %o, %final_state = gdn.delta_rule %5, %6, %v, %g, %beta, %0 {scale = 5.000000e-01 : f64} : (tensor<?x4x2xf64>, tensor<?x4x2xf64>, tensor<?x8x2xf64>, tensor<?x8xf64>, tensor<?x8xf64>, !gdn.packing<seqs = ?, tokens = ?>) -> (tensor<?x8x2xf64>, tensor<?x8x2x2xf64>)
  %7 = gdn.gated_rmsnorm %o, %2, %arg9 : (tensor<?x8x2xf64>, tensor<?x8x2xf64>, tensor<2xf64>) -> tensor<?x8x2xf64>
  %8 = gdn.linear %7, %arg10 : (tensor<?x8x2xf64>, tensor<8x16xf64>) -> tensor<?x8xf64>
  return %8, %final_state : tensor<?x8xf64>, tensor<?x8x2x2xf64>
}
