// Known answer: one token from a zero state. d = beta v, S = k d^T,
// o = scale S^T q = scale beta (k.q) v.
// RUN: gdn-run %s --print-values | FileCheck %s
// RUN: gdn-run %s --print-values --delta-rule=chunked | FileCheck %s

func.func @main() -> (tensor<1x1x2xf64>, tensor<1x1x2x2xf64>) {
  %q = arith.constant dense<[[[1.0, 0.0]]]> : tensor<1x1x2xf64>
  %k = arith.constant dense<[[[0.6, 0.8]]]> : tensor<1x1x2xf64>
  %v = arith.constant dense<[[[2.0, -4.0]]]> : tensor<1x1x2xf64>
  %g = arith.constant dense<[[-1.0]]> : tensor<1x1xf64>
  %beta = arith.constant dense<[[0.5]]> : tensor<1x1xf64>
  %cu = arith.constant dense<[0, 1]> : tensor<2xi32>
  %p = gdn.packing %cu : tensor<2xi32> -> !gdn.packing<seqs = 1, tokens = 1>
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta, %p {scale = 0.5 : f64}
      : (tensor<1x1x2xf64>, tensor<1x1x2xf64>, tensor<1x1x2xf64>, tensor<1x1xf64>,
         tensor<1x1xf64>, !gdn.packing<seqs = 1, tokens = 1>)
      -> (tensor<1x1x2xf64>, tensor<1x1x2x2xf64>)
  return %o, %s : tensor<1x1x2xf64>, tensor<1x1x2x2xf64>
}

// o = 0.5 * 0.5 * 0.6 * [2, -4]
// CHECK:      result #0: 1x1x2xf64
// CHECK-NEXT:   0.3 -0.6
// S = [0.6, 0.8]^T [1, -2]
// CHECK:      result #1: 1x1x2x2xf64
// CHECK-NEXT:   0.6 -1.2 0.8 -1.6
