// The varlen causal conv1d's gradients agree with central finite differences
// for every input: x, the weight, the bias and the initial conv state, with
// the final conv state returned (so its cotangent flows back into x and the
// initial state). The packs hold sequences of length 0, 1 and 2 (shorter
// than the 3 taps of history, so the final state is back-filled from the
// initial state) and longer ones, with and without alignment padding, with
// and without SiLU. No gradient may cross a sequence boundary or reach a
// padding row: the finite differences would see it.
// RUN: gdn-run %s --entry=conv --gradcheck --gradcheck-entries=1000 --seqlens=0,1,2,5,3 | FileCheck %s
// RUN: gdn-run %s --entry=padded --gradcheck --gradcheck-entries=1000 --seqlens=2,0,1,7 --slots=8,0,8,8 | FileCheck %s --check-prefix=PADDED
// RUN: gdn-run %s --entry=plain --gradcheck --gradcheck-entries=1000 --seqlens=4,0,6 --seed=2 | FileCheck %s --check-prefix=PLAIN

// CHECK:      gradient #0 (activation): 11x3xf64  checked 33 of 33  max_rel_err = {{.*}}  ok
// CHECK-NEXT: gradient #1 (conv weight): 3x4xf64  checked 12 of 12  max_rel_err = {{.*}}  ok
// CHECK-NEXT: gradient #2 (activation): 3xf64  checked 3 of 3  max_rel_err = {{.*}}  ok
// CHECK-NEXT: gradient #3 (state): 5x3x3xf64  checked 45 of 45  max_rel_err = {{.*}}  ok
func.func @conv(%x: tensor<?x3xf64>, %w: tensor<3x4xf64>, %bias: tensor<3xf64>,
                %h0: tensor<?x3x3xf64>, %cu: tensor<?xi32>)
    -> (tensor<?x3xf64>, tensor<?x3x3xf64>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %y, %h = gdn.causal_conv1d %x, %w, %p bias(%bias) initial_state(%h0)
      {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x3xf64>, tensor<3x4xf64>, !gdn.packing<seqs = ?, tokens = ?>,
         tensor<3xf64>, tensor<?x3x3xf64>) -> (tensor<?x3xf64>, tensor<?x3x3xf64>)
  return %y, %h : tensor<?x3xf64>, tensor<?x3x3xf64>
}

// Padding rows of x get a zero gradient (their finite differences are
// exactly zero too, as padding never influences a real token).
// PADDED:      gradient #0 (activation): 24x3xf64  checked 72 of 72  max_rel_err = {{.*}}  ok
// PADDED-NEXT: gradient #1 (conv weight): 3x4xf64  checked 12 of 12  max_rel_err = {{.*}}  ok
// PADDED-NEXT: gradient #2 (activation): 3xf64  checked 3 of 3  max_rel_err = {{.*}}  ok
// PADDED-NEXT: gradient #3 (state): 4x3x3xf64  checked 36 of 36  max_rel_err = {{.*}}  ok
func.func @padded(%x: tensor<?x3xf64>, %w: tensor<3x4xf64>, %bias: tensor<3xf64>,
                  %h0: tensor<?x3x3xf64>, %cu: tensor<?xi32>, %cu_padded: tensor<?xi32>)
    -> (tensor<?x3xf64>, tensor<?x3x3xf64>) {
  %p = gdn.packing %cu padded %cu_padded
      : tensor<?xi32>, tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
  %y, %h = gdn.causal_conv1d %x, %w, %p bias(%bias) initial_state(%h0)
      {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x3xf64>, tensor<3x4xf64>, !gdn.packing<seqs = ?, tokens = ?, padded>,
         tensor<3xf64>, tensor<?x3x3xf64>) -> (tensor<?x3xf64>, tensor<?x3x3xf64>)
  return %y, %h : tensor<?x3xf64>, tensor<?x3x3xf64>
}

// No activation, bias or states: the conv is linear in x and in w.
// PLAIN:      gradient #0 (activation): 10x2xf64  checked 20 of 20  max_rel_err = {{.*}}  ok
// PLAIN-NEXT: gradient #1 (conv weight): 2x3xf64  checked 6 of 6  max_rel_err = {{.*}}  ok
func.func @plain(%x: tensor<?x2xf64>, %w: tensor<2x3xf64>, %cu: tensor<?xi32>)
    -> tensor<?x2xf64> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %y = gdn.causal_conv1d %x, %w, %p {width = 3 : i64}
      : (tensor<?x2xf64>, tensor<2x3xf64>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x2xf64>
  return %y : tensor<?x2xf64>
}
