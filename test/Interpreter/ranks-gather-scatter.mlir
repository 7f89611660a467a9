// Collectives on simulated ranks with known answers: all_gather of a
// contiguous token shard restores the global tensor on every rank;
// reduce_scatter then sums the 4 identical copies, so each rank keeps 4x its
// shard; halo_exchange hands each rank the previous rank's last token (zeros
// on rank 0).
// RUN: rm -rf %t && mkdir -p %t
// RUN: %make_npy %t/arg0.npy '<f8' 8,1 1 2 3 4 5 6 7 8
// RUN: gdn-run %s --entry=gather_then_scatter --inputs=%t --print-values | FileCheck %s --check-prefix=SUM
// RUN: gdn-run %s --entry=halo --inputs=%t --print-values | FileCheck %s --check-prefix=HALO

!shard = tensor<2x1xf64, #gdn.seq<contiguous, ranks = 4>>

func.func @gather_then_scatter(%x: !shard) -> !shard {
  %all = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 4>, dim = 0 : i64}
      : !shard -> tensor<8x1xf64>
  %mine = gdn_comm.reduce_scatter %all {group = #gdn_comm.group<sp, 4>, dim = 0 : i64}
      : tensor<8x1xf64> -> !shard
  return %mine : !shard
}
// SUM:      result #0: 8x1xf64
// SUM-NEXT:   4 8 12 16 20 24 28 32

func.func @halo(%x: !shard) -> tensor<1x1x1xf64, #gdn.seq<contiguous, ranks = 4>> {
  %h = gdn_comm.halo_exchange %x {group = #gdn_comm.group<cp, 4>, tokens = 1 : i64}
      : !shard -> tensor<1x1xf64>
  %h3 = tensor.expand_shape %h [[0, 1], [2]] output_shape [1, 1, 1]
      : tensor<1x1xf64> into tensor<1x1x1xf64, #gdn.seq<contiguous, ranks = 4>>
  return %h3 : tensor<1x1x1xf64, #gdn.seq<contiguous, ranks = 4>>
}
// HALO:      result #0: 4x1x1xf64
// HALO-NEXT:   0 2 4 6
