// Known answer: a width-4 causal conv over two packed sequences [1, 2] and
// [3, 4, 5, 6]. Taps never cross the boundary (the first token of sequence 1
// sees only itself), and the final state holds each sequence's last 3 inputs,
// back-filled with zeros for the short sequence.
// RUN: gdn-run %s --print-values | FileCheck %s

func.func @main() -> (tensor<6x1xf64>, tensor<2x1x3xf64>) {
  %x = arith.constant dense<[[1.0], [2.0], [3.0], [4.0], [5.0], [6.0]]> : tensor<6x1xf64>
  %w = arith.constant dense<[[1.0, 10.0, 100.0, 1000.0]]> : tensor<1x4xf64>
  %cu = arith.constant dense<[0, 2, 6]> : tensor<3xi32>
  %p = gdn.packing %cu : tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 6>
  %y, %state = gdn.causal_conv1d %x, %w, %p {width = 4 : i64}
      : (tensor<6x1xf64>, tensor<1x4xf64>, !gdn.packing<seqs = 2, tokens = 6>)
      -> (tensor<6x1xf64>, tensor<2x1x3xf64>)
  return %y, %state : tensor<6x1xf64>, tensor<2x1x3xf64>
}

// CHECK:      result #0: 6x1xf64
// CHECK-NEXT:   1000 2100 3000 4300 5430 6543
// CHECK:      result #1: 2x1x3xf64
// CHECK-NEXT:   0 1 2 4 5 6
