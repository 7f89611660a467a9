// Round trip of gdn_comm.all_gather: token gathers of contiguous shards,
// feature gathers that keep the token layout, static and dynamic sizes.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s

// SP: a contiguous token shard of 4 ranks gathered over the 4-rank group.
// CHECK-LABEL: func.func @gather_contiguous_shard
// CHECK: gdn_comm.all_gather %{{.*}} {dim = 0 : i64, group = #gdn_comm.group<sp, 4>}
// CHECK-SAME: : tensor<512x2048xbf16, #gdn.seq<contiguous, ranks = 4>> -> tensor<2048x2048xbf16>
func.func @gather_contiguous_shard(%x: tensor<512x2048xbf16, #gdn.seq<contiguous, ranks = 4>>)
    -> tensor<2048x2048xbf16> {
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 4>, dim = 0 : i64}
      : tensor<512x2048xbf16, #gdn.seq<contiguous, ranks = 4>> -> tensor<2048x2048xbf16>
  return %g : tensor<2048x2048xbf16>
}

// Dynamic token counts on both sides.
// CHECK-LABEL: func.func @gather_dynamic_tokens
// CHECK: gdn_comm.all_gather %{{.*}} {dim = 0 : i64, group = #gdn_comm.group<sp, 2>}
// CHECK-SAME: : tensor<?x64xf32, #gdn.seq<contiguous, ranks = 2>> -> tensor<?x64xf32>
func.func @gather_dynamic_tokens(%x: tensor<?x64xf32, #gdn.seq<contiguous, ranks = 2>>)
    -> tensor<?x64xf32> {
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 2>, dim = 0 : i64}
      : tensor<?x64xf32, #gdn.seq<contiguous, ranks = 2>> -> tensor<?x64xf32>
  return %g : tensor<?x64xf32>
}

// A dynamic input may gather into a static result that is a multiple of 4.
// CHECK-LABEL: func.func @gather_dynamic_into_static
// CHECK: gdn_comm.all_gather %{{.*}} {dim = 0 : i64, group = #gdn_comm.group<cp, 4>}
// CHECK-SAME: : tensor<?x16xf16> -> tensor<64x16xf16>
func.func @gather_dynamic_into_static(%x: tensor<?x16xf16>) -> tensor<64x16xf16> {
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<cp, 4>, dim = 0 : i64}
      : tensor<?x16xf16> -> tensor<64x16xf16>
  return %g : tensor<64x16xf16>
}

// Without layouts: a plain tensor gathered along a feature dimension.
// CHECK-LABEL: func.func @gather_features_no_layout
// CHECK: gdn_comm.all_gather %{{.*}} {dim = 1 : i64, group = #gdn_comm.group<sp, 4>}
// CHECK-SAME: : tensor<512x64xf32> -> tensor<512x256xf32>
func.func @gather_features_no_layout(%x: tensor<512x64xf32>) -> tensor<512x256xf32> {
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 4>, dim = 1 : i64}
      : tensor<512x64xf32> -> tensor<512x256xf32>
  return %g : tensor<512x256xf32>
}

// Gathering features moves no token: the token shard stays on the result.
// CHECK-LABEL: func.func @gather_features_keeps_shard
// CHECK: gdn_comm.all_gather %{{.*}} {dim = 2 : i64, group = #gdn_comm.group<sp, 2>}
// CHECK-SAME: : tensor<256x8x64xbf16, #gdn.seq<zigzag, ranks = 4>> -> tensor<256x8x128xbf16, #gdn.seq<zigzag, ranks = 4>>
func.func @gather_features_keeps_shard(%x: tensor<256x8x64xbf16, #gdn.seq<zigzag, ranks = 4>>)
    -> tensor<256x8x128xbf16, #gdn.seq<zigzag, ranks = 4>> {
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 2>, dim = 2 : i64}
      : tensor<256x8x64xbf16, #gdn.seq<zigzag, ranks = 4>>
      -> tensor<256x8x128xbf16, #gdn.seq<zigzag, ranks = 4>>
  return %g : tensor<256x8x128xbf16, #gdn.seq<zigzag, ranks = 4>>
}

// Gathering the heads of a head shard gives all heads.
// CHECK-LABEL: func.func @gather_heads
// CHECK: gdn_comm.all_gather %{{.*}} {dim = 1 : i64, group = #gdn_comm.group<cp, 4>}
// CHECK-SAME: : tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>> -> tensor<8192x32x128xbf16>
func.func @gather_heads(%x: tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>)
    -> tensor<8192x32x128xbf16> {
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<cp, 4>, dim = 1 : i64}
      : tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>> -> tensor<8192x32x128xbf16>
  return %g : tensor<8192x32x128xbf16>
}

// SP inside CP (SP ranks innermost): gathering a shard over 8 = 2 x 4 ranks
// over the SP group of 2 gives the CP shard over 4 ranks.
// CHECK-LABEL: func.func @gather_sp_inside_cp
// CHECK: gdn_comm.all_gather %{{.*}} {dim = 0 : i64, group = #gdn_comm.group<sp, 2>}
// CHECK-SAME: : tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 8>> -> tensor<1024x64xbf16, #gdn.seq<contiguous, ranks = 4>>
func.func @gather_sp_inside_cp(%x: tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 8>>)
    -> tensor<1024x64xbf16, #gdn.seq<contiguous, ranks = 4>> {
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 2>, dim = 0 : i64}
      : tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 8>> -> tensor<1024x64xbf16, #gdn.seq<contiguous, ranks = 4>>
  return %g : tensor<1024x64xbf16, #gdn.seq<contiguous, ranks = 4>>
}

// SP inside zigzag CP: each zigzag shard over 4 ranks cut into 2 SP pieces;
// gathering over the SP group gives the zigzag shard.
// CHECK-LABEL: func.func @gather_sp_inside_zigzag_cp
// CHECK: gdn_comm.all_gather
// CHECK-SAME: : tensor<256x64xbf16, #gdn.seq<zigzag, ranks = 4, inner = 2>> -> tensor<512x64xbf16, #gdn.seq<zigzag, ranks = 4>>
func.func @gather_sp_inside_zigzag_cp(%x: tensor<256x64xbf16, #gdn.seq<zigzag, ranks = 4, inner = 2>>)
    -> tensor<512x64xbf16, #gdn.seq<zigzag, ranks = 4>> {
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 2>, dim = 0 : i64}
      : tensor<256x64xbf16, #gdn.seq<zigzag, ranks = 4, inner = 2>> -> tensor<512x64xbf16, #gdn.seq<zigzag, ranks = 4>>
  return %g : tensor<512x64xbf16, #gdn.seq<zigzag, ranks = 4>>
}
