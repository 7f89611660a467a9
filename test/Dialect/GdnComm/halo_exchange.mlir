// Round trip of gdn_comm.halo_exchange: the conv halo of a contiguous token
// shard, with and without a layout, static and dynamic sizes.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s

// Chunkwise CP: the W - 1 = 3 last rows of the previous rank's shard.
// CHECK-LABEL: func.func @conv_halo
// CHECK: gdn_comm.halo_exchange %{{.*}} {group = #gdn_comm.group<cp, 4>, tokens = 3 : i64}
// CHECK-SAME: : tensor<2048x8192xbf16, #gdn.seq<contiguous, ranks = 4>> -> tensor<3x8192xbf16>
func.func @conv_halo(%x: tensor<2048x8192xbf16, #gdn.seq<contiguous, ranks = 4>>)
    -> tensor<3x8192xbf16> {
  %h = gdn_comm.halo_exchange %x {group = #gdn_comm.group<cp, 4>, tokens = 3 : i64}
      : tensor<2048x8192xbf16, #gdn.seq<contiguous, ranks = 4>> -> tensor<3x8192xbf16>
  return %h : tensor<3x8192xbf16>
}

// Dynamic shard length, no layout; the halo has exactly `tokens` rows.
// CHECK-LABEL: func.func @dynamic_shard_no_layout
// CHECK: gdn_comm.halo_exchange %{{.*}} {group = #gdn_comm.group<cp, 2>, tokens = 1 : i64}
// CHECK-SAME: : tensor<?x64xf32> -> tensor<1x64xf32>
func.func @dynamic_shard_no_layout(%x: tensor<?x64xf32>) -> tensor<1x64xf32> {
  %h = gdn_comm.halo_exchange %x {group = #gdn_comm.group<cp, 2>, tokens = 1 : i64}
      : tensor<?x64xf32> -> tensor<1x64xf32>
  return %h : tensor<1x64xf32>
}

// A dynamic halo and feature dimension, on a rank-3 activation.
// CHECK-LABEL: func.func @dynamic_halo
// CHECK: gdn_comm.halo_exchange %{{.*}} {group = #gdn_comm.group<cp, 8>, tokens = 2 : i64}
// CHECK-SAME: : tensor<?x?x128xf16, #gdn.seq<contiguous, ranks = 8>> -> tensor<?x?x128xf16>
func.func @dynamic_halo(%x: tensor<?x?x128xf16, #gdn.seq<contiguous, ranks = 8>>)
    -> tensor<?x?x128xf16> {
  %h = gdn_comm.halo_exchange %x {group = #gdn_comm.group<cp, 8>, tokens = 2 : i64}
      : tensor<?x?x128xf16, #gdn.seq<contiguous, ranks = 8>> -> tensor<?x?x128xf16>
  return %h : tensor<?x?x128xf16>
}

// A shard shorter than the halo: the rows come from further back.
// CHECK-LABEL: func.func @short_shard
// CHECK: gdn_comm.halo_exchange %{{.*}} {group = #gdn_comm.group<cp, 4>, tokens = 3 : i64} : tensor<2x8xf32> -> tensor<3x8xf32>
func.func @short_shard(%x: tensor<2x8xf32>) -> tensor<3x8xf32> {
  %h = gdn_comm.halo_exchange %x {group = #gdn_comm.group<cp, 4>, tokens = 3 : i64} : tensor<2x8xf32> -> tensor<3x8xf32>
  return %h : tensor<3x8xf32>
}
