// gdn-sequence-parallel's diagnostics on expanded layers that are not the
// shape it distributes: every value inside the layer must stay inside, the
// projections must read one hidden-state tensor used by them alone, and the
// token count must split into the ranks. Each case names the fix or the
// unsupported use.
// RUN: not gdn-opt --gdn-sequence-parallel="ranks=4" %s --split-input-file 2>&1 | FileCheck %s
// RUN: not gdn-opt --gdn-sequence-parallel="ranks=0" %s --split-input-file 2>&1 | FileCheck %s --check-prefix=RANKS
// RUN: not gdn-opt --allow-unregistered-dialect --gdn-sequence-parallel="ranks=2" %S/Inputs/cp_two_blocks.mlir 2>&1 | FileCheck %s --check-prefix=BLOCKS
// RANKS: error: gdn-sequence-parallel: ranks must be >= 1, found 0
// BLOCKS: error: gdn-sequence-parallel: expects a function of one block

// CHECK: error: gdn-sequence-parallel: expects the gated RMSNorm's z to come from the input projections
func.func @z_from_argument(%arg0: tensor<?x8xf64>, %arg1: tensor<?xi32>, %arg2: tensor<32x8xf64>, %arg3: tensor<16x8xf64>, %arg4: tensor<8x8xf64>, %arg5: tensor<8x8xf64>, %arg6: tensor<32x4xf64>, %arg7: tensor<8xf64>, %arg8: tensor<8xf64>, %arg9: tensor<2xf64>, %arg10: tensor<8x16xf64>, %zarg: tensor<?x8x2xf64>) -> tensor<?x8xf64> {
  %0 = gdn.packing %arg1 : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %1 = gdn.linear %arg0, %arg2 : (tensor<?x8xf64>, tensor<32x8xf64>) -> tensor<?x32xf64>
    %3 = gdn.linear %arg0, %arg4 : (tensor<?x8xf64>, tensor<8x8xf64>) -> tensor<?x8xf64>
  %4 = gdn.linear %arg0, %arg5 : (tensor<?x8xf64>, tensor<8x8xf64>) -> tensor<?x8xf64>
  %y = gdn.causal_conv1d %1, %arg6, %0 {activation = #gdn.act<silu>, width = 4 : i64} : (tensor<?x32xf64>, tensor<32x4xf64>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x32xf64>
  %q, %k, %v = gdn.split_qkv %y : tensor<?x32xf64> -> tensor<?x4x2xf64>, tensor<?x4x2xf64>, tensor<?x8x2xf64>
  %5 = gdn.l2norm %q : tensor<?x4x2xf64>
  %6 = gdn.l2norm %k : tensor<?x4x2xf64>
  %g, %beta = gdn.gates %4, %3, %arg7, %arg8 {allow_neg_eigval = true} : (tensor<?x8xf64>, tensor<?x8xf64>, tensor<8xf64>, tensor<8xf64>) -> (tensor<?x8xf64>, tensor<?x8xf64>)
  %o, %final_state = gdn.delta_rule %5, %6, %v, %g, %beta, %0 {scale = 5.000000e-01 : f64} : (tensor<?x4x2xf64>, tensor<?x4x2xf64>, tensor<?x8x2xf64>, tensor<?x8xf64>, tensor<?x8xf64>, !gdn.packing<seqs = ?, tokens = ?>) -> (tensor<?x8x2xf64>, tensor<?x8x2x2xf64>)
  %7 = gdn.gated_rmsnorm %o, %zarg, %arg9 : (tensor<?x8x2xf64>, tensor<?x8x2xf64>, tensor<2xf64>) -> tensor<?x8x2xf64>
  %8 = gdn.linear %7, %arg10 : (tensor<?x8x2xf64>, tensor<8x16xf64>) -> tensor<?x8xf64>
  return %8 : tensor<?x8xf64>
}

// -----

// CHECK: error: gdn-sequence-parallel: expects out_proj's result to be returned or read by the next layer's input projections
func.func @out_proj_reused(%arg0: tensor<?x8xf64>, %arg1: tensor<?xi32>, %arg2: tensor<32x8xf64>, %arg3: tensor<16x8xf64>, %arg4: tensor<8x8xf64>, %arg5: tensor<8x8xf64>, %arg6: tensor<32x4xf64>, %arg7: tensor<8xf64>, %arg8: tensor<8xf64>, %arg9: tensor<2xf64>, %arg10: tensor<8x16xf64>) -> tensor<?x8xf64> {
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
  %9 = arith.addf %8, %8 : tensor<?x8xf64>
  return %9 : tensor<?x8xf64>
}

// -----

// CHECK: error: gdn-sequence-parallel: expects the delta rule's output to feed the gated RMSNorm alone
func.func @output_returned(%arg0: tensor<?x8xf64>, %arg1: tensor<?xi32>, %arg2: tensor<32x8xf64>, %arg3: tensor<16x8xf64>, %arg4: tensor<8x8xf64>, %arg5: tensor<8x8xf64>, %arg6: tensor<32x4xf64>, %arg7: tensor<8xf64>, %arg8: tensor<8xf64>, %arg9: tensor<2xf64>, %arg10: tensor<8x16xf64>) -> (tensor<?x8xf64>, tensor<?x8x2xf64>) {
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
  return %8, %o : tensor<?x8xf64>, tensor<?x8x2xf64>
}

// -----

// CHECK: error: gdn-sequence-parallel: expects every input projection to read the same hidden states
func.func @two_hidden_states(%arg0: tensor<?x8xf64>, %arg1: tensor<?xi32>, %arg2: tensor<32x8xf64>, %arg3: tensor<16x8xf64>, %arg4: tensor<8x8xf64>, %arg5: tensor<8x8xf64>, %arg6: tensor<32x4xf64>, %arg7: tensor<8xf64>, %arg8: tensor<8xf64>, %arg9: tensor<2xf64>, %arg10: tensor<8x16xf64>, %other: tensor<?x8xf64>) -> tensor<?x8xf64> {
  %0 = gdn.packing %arg1 : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %1 = gdn.linear %arg0, %arg2 : (tensor<?x8xf64>, tensor<32x8xf64>) -> tensor<?x32xf64>
  %2 = gdn.linear %other, %arg3 : (tensor<?x8xf64>, tensor<16x8xf64>) -> tensor<?x8x2xf64>
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
  return %8 : tensor<?x8xf64>
}

// -----

// CHECK: error: gdn-sequence-parallel: the hidden states are also used outside the layer
func.func @hidden_reused(%arg0: tensor<?x8xf64>, %arg1: tensor<?xi32>, %arg2: tensor<32x8xf64>, %arg3: tensor<16x8xf64>, %arg4: tensor<8x8xf64>, %arg5: tensor<8x8xf64>, %arg6: tensor<32x4xf64>, %arg7: tensor<8xf64>, %arg8: tensor<8xf64>, %arg9: tensor<2xf64>, %arg10: tensor<8x16xf64>) -> (tensor<?x8xf64>, tensor<?x8xf64>) {
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
  return %8, %arg0 : tensor<?x8xf64>, tensor<?x8xf64>
}

// -----

// CHECK: error: gdn-sequence-parallel: expects in_proj_qkvz and in_proj_ba feeding split_qkvz, which feeds the conv and the gates (run gdn-expand-layer first)
func.func @gates_not_from_split(%arg0: tensor<?x8xf64>, %arg1: tensor<?xi32>, %arg2: tensor<48x8xf64>, %arg3: tensor<16x8xf64>, %arg4: tensor<32x4xf64>, %arg5: tensor<8xf64>, %arg6: tensor<8xf64>, %arg7: tensor<2xf64>, %arg8: tensor<8x16xf64>, %w_b: tensor<8x8xf64>) -> tensor<?x8xf64> {
  %0 = gdn.packing %arg1 : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %1 = gdn.linear %arg0, %arg2 : (tensor<?x8xf64>, tensor<48x8xf64>) -> tensor<?x48xf64>
  %2 = gdn.linear %arg0, %arg3 : (tensor<?x8xf64>, tensor<16x8xf64>) -> tensor<?x16xf64>
  %mixed_qkv, %z, %b, %a = gdn.split_qkvz %1, %2 {head_dim_k = 2 : i64, key_heads = 4 : i64} : (tensor<?x48xf64>, tensor<?x16xf64>) -> (tensor<?x32xf64>, tensor<?x8x2xf64>, tensor<?x8xf64>, tensor<?x8xf64>)
  %own_b = gdn.linear %arg0, %w_b : (tensor<?x8xf64>, tensor<8x8xf64>) -> tensor<?x8xf64>
  %y = gdn.causal_conv1d %mixed_qkv, %arg4, %0 {activation = #gdn.act<silu>, width = 4 : i64} : (tensor<?x32xf64>, tensor<32x4xf64>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x32xf64>
  %q, %k, %v = gdn.split_qkv %y : tensor<?x32xf64> -> tensor<?x4x2xf64>, tensor<?x4x2xf64>, tensor<?x8x2xf64>
  %3 = gdn.l2norm %q : tensor<?x4x2xf64>
  %4 = gdn.l2norm %k : tensor<?x4x2xf64>
  %g, %beta = gdn.gates %a, %own_b, %arg5, %arg6 : (tensor<?x8xf64>, tensor<?x8xf64>, tensor<8xf64>, tensor<8xf64>) -> (tensor<?x8xf64>, tensor<?x8xf64>)
  %o, %final_state = gdn.delta_rule %3, %4, %v, %g, %beta, %0 : (tensor<?x4x2xf64>, tensor<?x4x2xf64>, tensor<?x8x2xf64>, tensor<?x8xf64>, tensor<?x8xf64>, !gdn.packing<seqs = ?, tokens = ?>) -> (tensor<?x8x2xf64>, tensor<?x8x2x2xf64>)
  %5 = gdn.gated_rmsnorm %o, %z, %arg7 : (tensor<?x8x2xf64>, tensor<?x8x2xf64>, tensor<2xf64>) -> tensor<?x8x2xf64>
  %6 = gdn.linear %5, %arg8 : (tensor<?x8x2xf64>, tensor<8x16xf64>) -> tensor<?x8xf64>
  return %6 : tensor<?x8xf64>
}

// -----

// CHECK: error: gdn-sequence-parallel: 30 tokens do not split into 4 equal contiguous shards; pad the pack to a multiple of 4
func.func @static_tokens(%arg0: tensor<30x8xf64>, %arg1: tensor<?xi32>, %arg2: tensor<32x8xf64>, %arg3: tensor<16x8xf64>, %arg4: tensor<8x8xf64>, %arg5: tensor<8x8xf64>, %arg6: tensor<32x4xf64>, %arg7: tensor<8xf64>, %arg8: tensor<8xf64>, %arg9: tensor<2xf64>, %arg10: tensor<8x16xf64>) -> tensor<30x8xf64> {
  %0 = gdn.packing %arg1 : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %1 = gdn.linear %arg0, %arg2 : (tensor<30x8xf64>, tensor<32x8xf64>) -> tensor<30x32xf64>
  %2 = gdn.linear %arg0, %arg3 : (tensor<30x8xf64>, tensor<16x8xf64>) -> tensor<30x8x2xf64>
  %3 = gdn.linear %arg0, %arg4 : (tensor<30x8xf64>, tensor<8x8xf64>) -> tensor<30x8xf64>
  %4 = gdn.linear %arg0, %arg5 : (tensor<30x8xf64>, tensor<8x8xf64>) -> tensor<30x8xf64>
  %y = gdn.causal_conv1d %1, %arg6, %0 {activation = #gdn.act<silu>, width = 4 : i64} : (tensor<30x32xf64>, tensor<32x4xf64>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<30x32xf64>
  %q, %k, %v = gdn.split_qkv %y : tensor<30x32xf64> -> tensor<30x4x2xf64>, tensor<30x4x2xf64>, tensor<30x8x2xf64>
  %5 = gdn.l2norm %q : tensor<30x4x2xf64>
  %6 = gdn.l2norm %k : tensor<30x4x2xf64>
  %g, %beta = gdn.gates %4, %3, %arg7, %arg8 {allow_neg_eigval = true} : (tensor<30x8xf64>, tensor<30x8xf64>, tensor<8xf64>, tensor<8xf64>) -> (tensor<30x8xf64>, tensor<30x8xf64>)
  %o, %final_state = gdn.delta_rule %5, %6, %v, %g, %beta, %0 {scale = 5.000000e-01 : f64} : (tensor<30x4x2xf64>, tensor<30x4x2xf64>, tensor<30x8x2xf64>, tensor<30x8xf64>, tensor<30x8xf64>, !gdn.packing<seqs = ?, tokens = ?>) -> (tensor<30x8x2xf64>, tensor<?x8x2x2xf64>)
  %7 = gdn.gated_rmsnorm %o, %2, %arg9 : (tensor<30x8x2xf64>, tensor<30x8x2xf64>, tensor<2xf64>) -> tensor<30x8x2xf64>
  %8 = gdn.linear %7, %arg10 : (tensor<30x8x2xf64>, tensor<8x16xf64>) -> tensor<30x8xf64>
  return %8 : tensor<30x8xf64>
}
