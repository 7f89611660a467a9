// Round trip of gdn_comm.reduce_scatter: token scatters into contiguous
// shards, feature scatters that keep the token layout, static and dynamic.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s

// SP: after out_proj, every rank keeps its contiguous quarter of the tokens.
// CHECK-LABEL: func.func @scatter_to_contiguous_shard
// CHECK: gdn_comm.reduce_scatter %{{.*}} {dim = 0 : i64, group = #gdn_comm.group<sp, 4>}
// CHECK-SAME: : tensor<2048x2048xbf16> -> tensor<512x2048xbf16, #gdn.seq<contiguous, ranks = 4>>
func.func @scatter_to_contiguous_shard(%y: tensor<2048x2048xbf16>)
    -> tensor<512x2048xbf16, #gdn.seq<contiguous, ranks = 4>> {
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 4>, dim = 0 : i64}
      : tensor<2048x2048xbf16> -> tensor<512x2048xbf16, #gdn.seq<contiguous, ranks = 4>>
  return %r : tensor<512x2048xbf16, #gdn.seq<contiguous, ranks = 4>>
}

// Dynamic token counts on both sides.
// CHECK-LABEL: func.func @scatter_dynamic_tokens
// CHECK: gdn_comm.reduce_scatter %{{.*}} {dim = 0 : i64, group = #gdn_comm.group<sp, 2>}
// CHECK-SAME: : tensor<?x64xf32> -> tensor<?x64xf32, #gdn.seq<contiguous, ranks = 2>>
func.func @scatter_dynamic_tokens(%y: tensor<?x64xf32>)
    -> tensor<?x64xf32, #gdn.seq<contiguous, ranks = 2>> {
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 2>, dim = 0 : i64}
      : tensor<?x64xf32> -> tensor<?x64xf32, #gdn.seq<contiguous, ranks = 2>>
  return %r : tensor<?x64xf32, #gdn.seq<contiguous, ranks = 2>>
}

// A static input divisible by the group may scatter into a dynamic result.
// CHECK-LABEL: func.func @scatter_static_into_dynamic
// CHECK: gdn_comm.reduce_scatter %{{.*}} {dim = 0 : i64, group = #gdn_comm.group<cp, 4>}
// CHECK-SAME: : tensor<64x16xf16> -> tensor<?x16xf16>
func.func @scatter_static_into_dynamic(%y: tensor<64x16xf16>) -> tensor<?x16xf16> {
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<cp, 4>, dim = 0 : i64}
      : tensor<64x16xf16> -> tensor<?x16xf16>
  return %r : tensor<?x16xf16>
}

// Without layouts: a plain tensor scattered along a feature dimension.
// CHECK-LABEL: func.func @scatter_features_no_layout
// CHECK: gdn_comm.reduce_scatter %{{.*}} {dim = 1 : i64, group = #gdn_comm.group<sp, 4>}
// CHECK-SAME: : tensor<512x256xf32> -> tensor<512x64xf32>
func.func @scatter_features_no_layout(%y: tensor<512x256xf32>) -> tensor<512x64xf32> {
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 4>, dim = 1 : i64}
      : tensor<512x256xf32> -> tensor<512x64xf32>
  return %r : tensor<512x64xf32>
}

// Scattering features moves no token: the token shard stays on the result.
// CHECK-LABEL: func.func @scatter_features_keeps_shard
// CHECK: gdn_comm.reduce_scatter %{{.*}} {dim = 1 : i64, group = #gdn_comm.group<sp, 2>}
// CHECK-SAME: : tensor<256x128xbf16, #gdn.seq<contiguous, ranks = 4>> -> tensor<256x64xbf16, #gdn.seq<contiguous, ranks = 4>>
func.func @scatter_features_keeps_shard(%y: tensor<256x128xbf16, #gdn.seq<contiguous, ranks = 4>>)
    -> tensor<256x64xbf16, #gdn.seq<contiguous, ranks = 4>> {
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 2>, dim = 1 : i64}
      : tensor<256x128xbf16, #gdn.seq<contiguous, ranks = 4>>
      -> tensor<256x64xbf16, #gdn.seq<contiguous, ranks = 4>>
  return %r : tensor<256x64xbf16, #gdn.seq<contiguous, ranks = 4>>
}

// SP inside CP (SP ranks innermost): scattering the CP shard over 4 ranks
// over the SP group of 2 gives the shard over 8 ranks.
// CHECK-LABEL: func.func @scatter_sp_inside_cp
// CHECK: gdn_comm.reduce_scatter %{{.*}} {dim = 0 : i64, group = #gdn_comm.group<sp, 2>}
// CHECK-SAME: : tensor<1024x64xbf16, #gdn.seq<contiguous, ranks = 4>> -> tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 8>>
func.func @scatter_sp_inside_cp(%y: tensor<1024x64xbf16, #gdn.seq<contiguous, ranks = 4>>)
    -> tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 8>> {
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 2>, dim = 0 : i64}
      : tensor<1024x64xbf16, #gdn.seq<contiguous, ranks = 4>> -> tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 8>>
  return %r : tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 8>>
}

// The reverse: the zigzag CP shard scattered over the SP group nests it.
// CHECK-LABEL: func.func @scatter_into_zigzag_cp
// CHECK: gdn_comm.reduce_scatter
// CHECK-SAME: : tensor<512x64xbf16, #gdn.seq<zigzag, ranks = 4>> -> tensor<256x64xbf16, #gdn.seq<zigzag, ranks = 4, inner = 2>>
func.func @scatter_into_zigzag_cp(%y: tensor<512x64xbf16, #gdn.seq<zigzag, ranks = 4>>)
    -> tensor<256x64xbf16, #gdn.seq<zigzag, ranks = 4, inner = 2>> {
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 2>, dim = 0 : i64}
      : tensor<512x64xbf16, #gdn.seq<zigzag, ranks = 4>> -> tensor<256x64xbf16, #gdn.seq<zigzag, ranks = 4, inner = 2>>
  return %r : tensor<256x64xbf16, #gdn.seq<zigzag, ranks = 4, inner = 2>>
}
