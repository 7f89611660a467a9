// Round trip of the layout encodings #gdn.seq and #gdn.heads on tensors and as plain attributes.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s
// RUN: gdn-opt %s --mlir-print-op-generic | gdn-opt | FileCheck %s

// CHECK-LABEL: func.func @seq_kinds
// CHECK-SAME: tensor<8192x2048xbf16, #gdn.seq<natural>>
// CHECK-SAME: tensor<2048x2048xbf16, #gdn.seq<contiguous, ranks = 4>>
// CHECK-SAME: tensor<1024x2048xbf16, #gdn.seq<zigzag, ranks = 8>>
// CHECK-SAME: tensor<512x2048xbf16, #gdn.seq<zigzag, ranks = 8, inner = 2>>
func.func @seq_kinds(%a: tensor<8192x2048xbf16, #gdn.seq<natural>>,
                     %b: tensor<2048x2048xbf16, #gdn.seq<contiguous, ranks = 4>>,
                     %c: tensor<1024x2048xbf16, #gdn.seq<zigzag, ranks = 8>>,
                     %d: tensor<512x2048xbf16, #gdn.seq<zigzag, ranks = 8, inner = 2>>) {
  return
}

// ranks = 1 is the default and is not printed.
// CHECK-LABEL: func.func @natural_default_ranks
// CHECK-SAME: tensor<16xf32, #gdn.seq<natural>>
// CHECK-NOT: ranks = 1
func.func @natural_default_ranks(%a: tensor<16xf32, #gdn.seq<natural, ranks = 1>>) {
  return
}

// A token layout fits any tensor with a token dimension, including rank 1
// and dynamic token counts.
// CHECK-LABEL: func.func @seq_ranks_and_dynamic
// CHECK-SAME: tensor<?xi32, #gdn.seq<contiguous, ranks = 2>>
// CHECK-SAME: tensor<?x16x128xf64, #gdn.seq<zigzag, ranks = 2>>
func.func @seq_ranks_and_dynamic(%a: tensor<?xi32, #gdn.seq<contiguous, ranks = 2>>,
                                 %b: tensor<?x16x128xf64, #gdn.seq<zigzag, ranks = 2>>) {
  return
}

// CHECK-LABEL: func.func @heads
// CHECK-SAME: tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>
// CHECK-SAME: tensor<?x4xf32, #gdn.heads<ranks = 8>>
func.func @heads(%a: tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>,
                 %b: tensor<?x4xf32, #gdn.heads<ranks = 8>>) {
  return
}

// The encodings are attributes and can stand alone.
// CHECK-LABEL: func.func @standalone
// CHECK-SAME: attributes {heads = #gdn.heads<ranks = 2>, seq = #gdn.seq<zigzag, ranks = 4>}
func.func @standalone() attributes {seq = #gdn.seq<zigzag, ranks = 4>,
                                    heads = #gdn.heads<ranks = 2>} {
  return
}
