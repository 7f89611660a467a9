// Known answer: the conv reads a sequence's initial state (most recent last)
// for taps before its start, adds the bias, applies SiLU, and back-fills the
// final state of a one-token sequence from the initial state.
// RUN: gdn-run %s --print-values | FileCheck %s

func.func @main() -> (tensor<3x1xf64>, tensor<2x1x2xf64>) {
  %x = arith.constant dense<[[1.0], [2.0], [3.0]]> : tensor<3x1xf64>
  %w = arith.constant dense<[[1.0, 10.0, 100.0]]> : tensor<1x3xf64>
  %b = arith.constant dense<[0.5]> : tensor<1xf64>
  // Sequence 0 was preceded by 7 then 8; sequence 1 by -1 then -2.
  %s0 = arith.constant dense<[[[7.0, 8.0]], [[-1.0, -2.0]]]> : tensor<2x1x2xf64>
  %cu = arith.constant dense<[0, 1, 3]> : tensor<3xi32>
  %p = gdn.packing %cu : tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 3>
  %y, %state = gdn.causal_conv1d %x, %w, %p bias(%b) initial_state(%s0)
      {width = 3 : i64, activation = #gdn.act<silu>}
      : (tensor<3x1xf64>, tensor<1x3xf64>, !gdn.packing<seqs = 2, tokens = 3>,
         tensor<1xf64>, tensor<2x1x2xf64>) -> (tensor<3x1xf64>, tensor<2x1x2xf64>)
  return %y, %state : tensor<3x1xf64>, tensor<2x1x2xf64>
}

// Pre-activations: 0.5 + 1*7 + 10*8 + 100*1 = 187.5;
// 0.5 + 1*(-1) + 10*(-2) + 100*2 = 179.5; 0.5 + 1*(-2) + 10*2 + 100*3 = 318.5.
// SiLU(x) = x for these to double precision.
// CHECK:      result #0: 3x1xf64
// CHECK-NEXT:   187.5 179.5 318.5
// Final states: [8, 1] (one token, back-filled) and [2, 3].
// CHECK:      result #1: 2x1x2xf64
// CHECK-NEXT:   8 1 2 3
