// A gradient op's states and their cotangents hold one row per sequence:
// the input generator draws a final-state cotangent per sequence (it used
// to draw token rows, which the conv's VJP read as if its first rows were
// the sequences'), and one given with token rows is refused, naming the
// argument and the shape it needs.
// RUN: rm -rf %t && mkdir -p %t/tokens
// RUN: %make_npy %t/tokens/arg4.npy '<f8' 8,4,2 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16
// RUN: not gdn-run %s --entry=conv_grad --inputs=%t/tokens --seqlens=3,5 2>&1 | FileCheck %s --check-prefix=ROWS
// ROWS: gdn-run: error: arg4.npy has shape 8x4x2xf64 but argument #4 of @conv_grad needs 2x4x2
// RUN: gdn-run %s --entry=conv_grad --seqlens=3,5 --save-inputs=%t/drawn > /dev/null
// RUN: head -c 80 %t/drawn/arg4.npy | FileCheck %s --check-prefix=DRAWN
// DRAWN: 'shape': (2, 4, 2)

func.func @conv_grad(%dy: tensor<?x4xf64>, %x: tensor<?x4xf64>, %w: tensor<4x3xf64>,
                     %cu: tensor<?xi32>, %dh: tensor<?x4x2xf64>)
    -> (tensor<?x4xf64>, tensor<4x3xf64>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %dx, %dw = gdn.causal_conv1d_grad %dy, %x, %w, %p final_state_grad(%dh) {width = 3 : i64}
      : (tensor<?x4xf64>, tensor<?x4xf64>, tensor<4x3xf64>, !gdn.packing<seqs = ?, tokens = ?>,
         tensor<?x4x2xf64>) -> (tensor<?x4xf64>, tensor<4x3xf64>)
  return %dx, %dw : tensor<?x4xf64>, tensor<4x3xf64>
}
