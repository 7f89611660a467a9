// Known answer: one token from the initial state S0 = I. S' = e^g I,
// d = beta (v - S'^T k), S = S' + k d^T, o = scale S^T q; the default scale is
// K^-1/2 = 1/sqrt(2).
// RUN: gdn-run %s --print-values | FileCheck %s

func.func @main() -> (tensor<1x1x2xf64>, tensor<1x1x2x2xf64>) {
  %q = arith.constant dense<[[[1.0, 1.0]]]> : tensor<1x1x2xf64>
  %k = arith.constant dense<[[[1.0, 0.0]]]> : tensor<1x1x2xf64>
  %v = arith.constant dense<[[[1.0, 1.0]]]> : tensor<1x1x2xf64>
  // g = ln(0.5): the state halves before the update.
  %g = arith.constant dense<[[-0.69314718055994530942]]> : tensor<1x1xf64>
  %beta = arith.constant dense<[[1.0]]> : tensor<1x1xf64>
  %s0 = arith.constant dense<[[[[1.0, 0.0], [0.0, 1.0]]]]> : tensor<1x1x2x2xf64>
  %cu = arith.constant dense<[0, 1]> : tensor<2xi32>
  %p = gdn.packing %cu : tensor<2xi32> -> !gdn.packing<seqs = 1, tokens = 1>
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta, %p initial_state(%s0)
      : (tensor<1x1x2xf64>, tensor<1x1x2xf64>, tensor<1x1x2xf64>, tensor<1x1xf64>,
         tensor<1x1xf64>, !gdn.packing<seqs = 1, tokens = 1>, tensor<1x1x2x2xf64>)
      -> (tensor<1x1x2xf64>, tensor<1x1x2x2xf64>)
  return %o, %s : tensor<1x1x2xf64>, tensor<1x1x2x2xf64>
}

// S' = 0.5 I; S'^T k = [0.5, 0]; d = [0.5, 1]; S = [[1, 1], [0, 0.5]];
// S^T q = [1, 1.5]; o = [1, 1.5] / sqrt(2).
// CHECK:      result #0: 1x1x2xf64
// CHECK-NEXT:   0.7071067812 1.060660172
// CHECK:      result #1: 1x1x2x2xf64
// CHECK-NEXT:   1 1 0 0.5
