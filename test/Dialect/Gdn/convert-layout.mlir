// Round trip of gdn.convert_layout between natural, contiguous, zigzag and head-sharded layouts.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s
// RUN: gdn-opt %s --mlir-print-op-generic | gdn-opt | FileCheck %s

!P = !gdn.packing<seqs = 4, tokens = 8192>
!Pd = !gdn.packing<seqs = ?, tokens = ?>

// All tokens to this rank's zigzag shard: 8192 / 8 rows.
// CHECK-LABEL: func.func @natural_to_zigzag
// CHECK: gdn.convert_layout %{{.*}}, %{{.*}} : (tensor<8192x2048xbf16>, !gdn.packing<seqs = 4, tokens = 8192>) -> tensor<1024x2048xbf16, #gdn.seq<zigzag, ranks = 8>>
func.func @natural_to_zigzag(%x: tensor<8192x2048xbf16>, %p: !P) -> tensor<1024x2048xbf16, #gdn.seq<zigzag, ranks = 8>> {
  %y = gdn.convert_layout %x, %p : (tensor<8192x2048xbf16>, !P) -> tensor<1024x2048xbf16, #gdn.seq<zigzag, ranks = 8>>
  return %y : tensor<1024x2048xbf16, #gdn.seq<zigzag, ranks = 8>>
}

// Back to all tokens; #gdn.seq<natural> is the same as no encoding.
// CHECK-LABEL: func.func @zigzag_to_natural
// CHECK: gdn.convert_layout %{{.*}}, %{{.*}} : (tensor<1024x2048xbf16, #gdn.seq<zigzag, ranks = 8>>, !gdn.packing<seqs = 4, tokens = 8192>) -> tensor<8192x2048xbf16, #gdn.seq<natural>>
func.func @zigzag_to_natural(%x: tensor<1024x2048xbf16, #gdn.seq<zigzag, ranks = 8>>, %p: !P) -> tensor<8192x2048xbf16, #gdn.seq<natural>> {
  %y = gdn.convert_layout %x, %p : (tensor<1024x2048xbf16, #gdn.seq<zigzag, ranks = 8>>, !P) -> tensor<8192x2048xbf16, #gdn.seq<natural>>
  return %y : tensor<8192x2048xbf16, #gdn.seq<natural>>
}

// The Ulysses all-to-all: a token shard becomes a head shard.
// CHECK-LABEL: func.func @tokens_to_heads
// CHECK: gdn.convert_layout %{{.*}}, %{{.*}} : (tensor<2048x16x128xbf16, #gdn.seq<contiguous, ranks = 4>>, !gdn.packing<seqs = 4, tokens = 8192>) -> tensor<8192x4x128xbf16, #gdn.heads<ranks = 4>>
// CHECK: gdn.convert_layout %{{.*}}, %{{.*}} : (tensor<8192x4x128xbf16, #gdn.heads<ranks = 4>>, !gdn.packing<seqs = 4, tokens = 8192>) -> tensor<2048x16x128xbf16, #gdn.seq<contiguous, ranks = 4>>
func.func @tokens_to_heads(%x: tensor<2048x16x128xbf16, #gdn.seq<contiguous, ranks = 4>>, %p: !P) -> tensor<2048x16x128xbf16, #gdn.seq<contiguous, ranks = 4>> {
  %h = gdn.convert_layout %x, %p : (tensor<2048x16x128xbf16, #gdn.seq<contiguous, ranks = 4>>, !P) -> tensor<8192x4x128xbf16, #gdn.heads<ranks = 4>>
  %y = gdn.convert_layout %h, %p : (tensor<8192x4x128xbf16, #gdn.heads<ranks = 4>>, !P) -> tensor<2048x16x128xbf16, #gdn.seq<contiguous, ranks = 4>>
  return %y : tensor<2048x16x128xbf16, #gdn.seq<contiguous, ranks = 4>>
}

// Contiguous to zigzag with dynamic tokens and a run-time packing, in f64.
// CHECK-LABEL: func.func @dynamic_f64
// CHECK: gdn.convert_layout %{{.*}}, %{{.*}} : (tensor<?x4xf64, #gdn.seq<contiguous, ranks = 2>>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4xf64, #gdn.seq<zigzag, ranks = 2>>
func.func @dynamic_f64(%x: tensor<?x4xf64, #gdn.seq<contiguous, ranks = 2>>, %p: !Pd) -> tensor<?x4xf64, #gdn.seq<zigzag, ranks = 2>> {
  %y = gdn.convert_layout %x, %p : (tensor<?x4xf64, #gdn.seq<contiguous, ranks = 2>>, !Pd) -> tensor<?x4xf64, #gdn.seq<zigzag, ranks = 2>>
  return %y : tensor<?x4xf64, #gdn.seq<zigzag, ranks = 2>>
}

// A rank-1 per-token tensor (e.g. position ids) has a layout too.
// CHECK-LABEL: func.func @rank1
// CHECK: gdn.convert_layout %{{.*}}, %{{.*}} : (tensor<8192xf32>, !gdn.packing<seqs = 4, tokens = 8192>) -> tensor<4096xf32, #gdn.seq<zigzag, ranks = 2>>
func.func @rank1(%x: tensor<8192xf32>, %p: !P) -> tensor<4096xf32, #gdn.seq<zigzag, ranks = 2>> {
  %y = gdn.convert_layout %x, %p : (tensor<8192xf32>, !P) -> tensor<4096xf32, #gdn.seq<zigzag, ranks = 2>>
  return %y : tensor<4096xf32, #gdn.seq<zigzag, ranks = 2>>
}
