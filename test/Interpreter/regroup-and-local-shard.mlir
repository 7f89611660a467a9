// Known answers for headwise CP's slicing ops. Channels [q q | k k | v v v v]
// = [0 1 | 2 3 | 4 5 6 7] regrouped over 2 groups list group 0's share of
// every section, then group 1's: [0 2 4 5 | 1 3 6 7]; the inverse restores
// the order. On 2 ranks, local_shard hands rank r block r of the regrouped
// channels, and gathering the blocks back gives the regrouped order.
// RUN: gdn-run %s --entry=regroup --print-values | FileCheck %s --check-prefix=REGROUP
// RUN: gdn-run %s --entry=shards --print-values | FileCheck %s --check-prefix=SHARDS
// Sizes the verifier cannot see (dynamic) are checked at run time.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %make_npy %t/arg0.npy '<f8' 1,6 0 1 2 3 4 5
// RUN: not gdn-run %s --entry=regroup_dynamic --inputs=%t 2>&1 | FileCheck %s --check-prefix=EXTENT
// RUN: not gdn-run %s --entry=shard_dynamic --inputs=%t 2>&1 | FileCheck %s --check-prefix=DIVIDE
// EXTENT: dimension 1 has 6 elements, but the sections cover 8
// DIVIDE: dimension 1 (6) is not divisible by the group's 4 ranks

func.func @regroup() -> (tensor<1x8xf64>, tensor<1x8xf64>) {
  %x = arith.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]]> : tensor<1x8xf64>
  %r = gdn.regroup_sections %x {dim = 1 : i64, section_sizes = array<i64: 2, 2, 4>, groups = 2 : i64}
      : tensor<1x8xf64> -> tensor<1x8xf64>
  %back = gdn.regroup_sections %r {dim = 1 : i64, section_sizes = array<i64: 2, 2, 4>, groups = 2 : i64, inverse = true}
      : tensor<1x8xf64> -> tensor<1x8xf64>
  return %r, %back : tensor<1x8xf64>, tensor<1x8xf64>
}
// REGROUP:      result #0: 1x8xf64
// REGROUP-NEXT:   0 2 4 5 1 3 6 7
// REGROUP:      result #1: 1x8xf64
// REGROUP-NEXT:   0 1 2 3 4 5 6 7

func.func @shards() -> tensor<8x1xf64> {
  %x = arith.constant dense<[[0.0], [1.0], [2.0], [3.0], [4.0], [5.0], [6.0], [7.0]]> : tensor<8x1xf64>
  %r = gdn.regroup_sections %x {dim = 0 : i64, section_sizes = array<i64: 2, 2, 4>, groups = 2 : i64}
      : tensor<8x1xf64> -> tensor<8x1xf64>
  %mine = gdn_comm.local_shard %r {group = #gdn_comm.group<cp, 2>, dim = 0 : i64}
      : tensor<8x1xf64> -> tensor<4x1xf64>
  %all = gdn_comm.all_gather %mine {group = #gdn_comm.group<cp, 2>, dim = 0 : i64}
      : tensor<4x1xf64> -> tensor<8x1xf64>
  return %all : tensor<8x1xf64>
}
// SHARDS:      result #0: 8x1xf64
// SHARDS-NEXT:   0 2 4 5 1 3 6 7

func.func @regroup_dynamic(%x: tensor<1x?xf64>) -> tensor<1x?xf64> {
  %r = gdn.regroup_sections %x {dim = 1 : i64, section_sizes = array<i64: 2, 2, 4>, groups = 2 : i64}
      : tensor<1x?xf64> -> tensor<1x?xf64>
  return %r : tensor<1x?xf64>
}

func.func @shard_dynamic(%x: tensor<1x?xf64>) -> tensor<1x?xf64> {
  %mine = gdn_comm.local_shard %x {group = #gdn_comm.group<cp, 4>, dim = 1 : i64}
      : tensor<1x?xf64> -> tensor<1x?xf64>
  %all = gdn_comm.all_gather %mine {group = #gdn_comm.group<cp, 4>, dim = 1 : i64}
      : tensor<1x?xf64> -> tensor<1x?xf64>
  return %all : tensor<1x?xf64>
}
