// Round trip of gdn_comm.all_to_all: the Ulysses token<->head exchange in
// both directions, layout-free exchanges, static and dynamic sizes.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s

// Headwise CP, forward: a contiguous token shard becomes a head shard.
// CHECK-LABEL: func.func @tokens_to_heads
// CHECK: gdn_comm.all_to_all %{{.*}} {concat_dim = 0 : i64, group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64}
// CHECK-SAME: : tensor<2048x32x128xbf16, #gdn.seq<contiguous, ranks = 4>> -> tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>
func.func @tokens_to_heads(%x: tensor<2048x32x128xbf16, #gdn.seq<contiguous, ranks = 4>>)
    -> tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>> {
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64, concat_dim = 0 : i64}
      : tensor<2048x32x128xbf16, #gdn.seq<contiguous, ranks = 4>>
      -> tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>
  return %h : tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>
}

// Headwise CP, inverse: the head shard goes back to the token shard.
// CHECK-LABEL: func.func @heads_to_tokens
// CHECK: gdn_comm.all_to_all %{{.*}} {concat_dim = 1 : i64, group = #gdn_comm.group<cp, 4>, split_dim = 0 : i64}
// CHECK-SAME: : tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>> -> tensor<2048x32x128xbf16, #gdn.seq<contiguous, ranks = 4>>
func.func @heads_to_tokens(%o: tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>)
    -> tensor<2048x32x128xbf16, #gdn.seq<contiguous, ranks = 4>> {
  %t = gdn_comm.all_to_all %o {group = #gdn_comm.group<cp, 4>, split_dim = 0 : i64, concat_dim = 1 : i64}
      : tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>
      -> tensor<2048x32x128xbf16, #gdn.seq<contiguous, ranks = 4>>
  return %t : tensor<2048x32x128xbf16, #gdn.seq<contiguous, ranks = 4>>
}

// Dynamic token counts, no layouts.
// CHECK-LABEL: func.func @dynamic_tokens_no_layout
// CHECK: gdn_comm.all_to_all %{{.*}} {concat_dim = 0 : i64, group = #gdn_comm.group<cp, 2>, split_dim = 1 : i64}
// CHECK-SAME: : tensor<?x16x64xf32> -> tensor<?x8x64xf32>
func.func @dynamic_tokens_no_layout(%x: tensor<?x16x64xf32>) -> tensor<?x8x64xf32> {
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 2>, split_dim = 1 : i64, concat_dim = 0 : i64}
      : tensor<?x16x64xf32> -> tensor<?x8x64xf32>
  return %h : tensor<?x8x64xf32>
}

// Exchanging two feature dimensions keeps the token shard.
// CHECK-LABEL: func.func @features_keep_shard
// CHECK: gdn_comm.all_to_all %{{.*}} {concat_dim = 2 : i64, group = #gdn_comm.group<cp, 2>, split_dim = 1 : i64}
// CHECK-SAME: : tensor<64x8x32xf32, #gdn.seq<zigzag, ranks = 2>> -> tensor<64x4x64xf32, #gdn.seq<zigzag, ranks = 2>>
func.func @features_keep_shard(%x: tensor<64x8x32xf32, #gdn.seq<zigzag, ranks = 2>>)
    -> tensor<64x4x64xf32, #gdn.seq<zigzag, ranks = 2>> {
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 2>, split_dim = 1 : i64, concat_dim = 2 : i64}
      : tensor<64x8x32xf32, #gdn.seq<zigzag, ranks = 2>>
      -> tensor<64x4x64xf32, #gdn.seq<zigzag, ranks = 2>>
  return %h : tensor<64x4x64xf32, #gdn.seq<zigzag, ranks = 2>>
}

// split_dim = concat_dim keeps the shape (a block transpose across ranks).
// CHECK-LABEL: func.func @same_split_and_concat
// CHECK: gdn_comm.all_to_all %{{.*}} {concat_dim = 0 : i64, group = #gdn_comm.group<sp, 4>, split_dim = 0 : i64}
// CHECK-SAME: : tensor<16x8xf16> -> tensor<16x8xf16>
func.func @same_split_and_concat(%x: tensor<16x8xf16>) -> tensor<16x8xf16> {
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<sp, 4>, split_dim = 0 : i64, concat_dim = 0 : i64}
      : tensor<16x8xf16> -> tensor<16x8xf16>
  return %h : tensor<16x8xf16>
}
