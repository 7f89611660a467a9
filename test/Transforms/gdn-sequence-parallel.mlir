// gdn-sequence-parallel (Megatron SP with TP over heads) on whole layers,
// both projection layouts: equal to P = 1 in float64 (relative RMS below
// 1e-12: out_proj's partial sums are added in another order) for P = 2 and
// 4 on length mixes with 0, 1, 63, 64, 65, one long sequence and many short
// ones. The projections are sliced the way their rows are laid out: per
// key-head group for Qwen3-Next's interleaved in_proj_qkvz / in_proj_ba,
// per q/k/v section for Qwen3.5's in_proj_qkv.
// RUN: rm -rf %t && mkdir -p %t
// RUN: gdn-opt --gdn-expand-layer --gdn-sequence-parallel="ranks=2" %S/Inputs/cp_layer.mlir -o %t/p2.mlir
// RUN: gdn-opt --gdn-expand-layer --gdn-sequence-parallel="ranks=4" %S/Inputs/cp_layer.mlir -o %t/p4.mlir
// RUN: FileCheck %s < %t/p4.mlir
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/p2.mlir --entry=qwen3_next --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/p4.mlir --entry=qwen3_next --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/p2.mlir --entry=qwen3_5 --seqlens=200 --seed=2 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/p4.mlir --entry=qwen3_5 --seqlens=1,3,1,3,2,2,1,3 --seed=3 | FileCheck %s --check-prefix=SAME
// Two stacked layers: the second all-gathers the first one's reduce-scattered
// output.
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/p4.mlir --entry=stacked --seqlens=0,1,63,64,65,7 --seed=4 | FileCheck %s --check-prefix=SAME
// RUN: gdn-opt --gdn-expand-layer --gdn-sequence-parallel="ranks=1" %S/Inputs/cp_layer.mlir | FileCheck %s --check-prefix=ONE
// RUN: not gdn-opt --gdn-expand-layer --gdn-sequence-parallel="ranks=3" %S/Inputs/cp_layer.mlir 2>&1 | FileCheck %s --check-prefix=HEADS
// RUN: not gdn-opt --gdn-sequence-parallel="ranks=2" %S/Inputs/cp_core.mlir 2>&1 | FileCheck %s --check-prefix=CORE

// RUN: not gdn-opt --gdn-sequence-parallel="ranks=2" %S/Inputs/sp_z_returned.mlir 2>&1 | FileCheck %s --check-prefix=INNER
// INNER: error: gdn-sequence-parallel: reads a value inside a GDN layer, which the pass replaces by its head-sharded form

// SAME: comparing @{{qwen3_next|qwen3_5|stacked}} (1 rank(s)) against @{{.*}} ({{[24]}} rank(s))
// SAME-NEXT: result #0: {{.*}} ok
// ONE-NOT: gdn_comm
// HEADS: error: gdn-sequence-parallel: the key heads (4) and value heads (8) must be divisible by ranks = 3: each rank computes a share of the heads
// CORE: error: gdn-sequence-parallel: expects the conv input and the gate inputs to be projections of the hidden states (run gdn-expand-layer first)

// CHECK-LABEL: func.func @qwen3_next(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x8xf64, #gdn.seq<contiguous, ranks = 4>>, %{{[a-z0-9]+}}: tensor<?xi32>, %[[WQKVZ:[a-z0-9]+]]: tensor<48x8xf64>
// CHECK-SAME: -> tensor<?x8xf64, #gdn.seq<contiguous, ranks = 4>>
// CHECK: %[[ALL:.*]] = gdn_comm.all_gather %[[X]] {dim = 0 : i64, group = #gdn_comm.group<sp, 4>} : tensor<?x8xf64, #gdn.seq<contiguous, ranks = 4>> -> tensor<?x8xf64>
// In_proj_qkvz is grouped per key head: a rank's groups are one block.
// CHECK: %[[MYQKVZ:.*]] = gdn_comm.local_shard %[[WQKVZ]] {dim = 0 : i64, group = #gdn_comm.group<sp, 4>} : tensor<48x8xf64> -> tensor<12x8xf64>
// CHECK: gdn.regroup_sections {{.*}} : tensor<32x4xf64> -> tensor<32x4xf64>
// CHECK: gdn_comm.local_shard %{{.*}} {dim = 1 : i64, group = #gdn_comm.group<sp, 4>} : tensor<8x16xf64> -> tensor<8x4xf64>
// CHECK: gdn.linear %[[ALL]], %[[MYQKVZ]] : (tensor<?x8xf64>, tensor<12x8xf64>) -> tensor<?x12xf64>
// CHECK: gdn.split_qkvz {{.*}}key_heads = 1 : i64
// CHECK: %[[PARTIAL:.*]] = gdn.linear {{.*}} -> tensor<?x8xf64>
// CHECK: gdn_comm.reduce_scatter %[[PARTIAL]] {dim = 0 : i64, group = #gdn_comm.group<sp, 4>} : tensor<?x8xf64> -> tensor<?x8xf64, #gdn.seq<contiguous, ranks = 4>>

// Qwen3.5's in_proj_qkv is sliced per q/k/v section.
// CHECK-LABEL: func.func @qwen3_5(
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<?xi32>, %[[WQKV:[a-z0-9]+]]: tensor<32x8xf64>
// CHECK: %[[R:.*]] = gdn.regroup_sections %[[WQKV]] {dim = 0 : i64, groups = 4 : i64, section_sizes = array<i64: 8, 8, 16>}
// CHECK: gdn_comm.local_shard %[[R]] {dim = 0 : i64, group = #gdn_comm.group<sp, 4>} : tensor<32x8xf64> -> tensor<8x8xf64>
