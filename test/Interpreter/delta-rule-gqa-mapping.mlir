// Known answer for GQA: 2 key heads, 4 value heads, so value head i reads key
// head i / 2 (as repeat_interleave does), not i % 2. Key head 0 has k.q = 1,
// key head 1 has k.q = 0: only value heads 0 and 1 produce output.
// RUN: gdn-run %s --print-values | FileCheck %s

func.func @main() -> tensor<1x4x1xf64> {
  %q = arith.constant dense<[[[1.0, 0.0], [0.0, 1.0]]]> : tensor<1x2x2xf64>
  %k = arith.constant dense<[[[1.0, 0.0], [1.0, 0.0]]]> : tensor<1x2x2xf64>
  %v = arith.constant dense<[[[1.0], [2.0], [3.0], [4.0]]]> : tensor<1x4x1xf64>
  %g = arith.constant dense<0.0> : tensor<1x4xf64>
  %beta = arith.constant dense<1.0> : tensor<1x4xf64>
  %cu = arith.constant dense<[0, 1]> : tensor<2xi32>
  %p = gdn.packing %cu : tensor<2xi32> -> !gdn.packing<seqs = 1, tokens = 1>
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta, %p {scale = 1.0 : f64}
      : (tensor<1x2x2xf64>, tensor<1x2x2xf64>, tensor<1x4x1xf64>, tensor<1x4xf64>,
         tensor<1x4xf64>, !gdn.packing<seqs = 1, tokens = 1>)
      -> (tensor<1x4x1xf64>, tensor<1x4x2x1xf64>)
  return %o : tensor<1x4x1xf64>
}

// CHECK:      result #0: 1x4x1xf64
// CHECK-NEXT:   1 2 0 0
