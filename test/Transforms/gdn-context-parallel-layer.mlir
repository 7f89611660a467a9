// gdn-context-parallel on whole layers (after gdn-expand-layer), both
// projection layouts: the input projections, split_qkvz, the gated RMSNorm
// and out_proj run token by token on each rank's shard, the core head-wise.
// Equal to P = 1 in float64 for P = 2 and 4 (4 key heads), contiguous and
// zigzag token shards, with sequences of length 0, 1, 63, 64, 65.
// RUN: rm -rf %t && mkdir -p %t
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=2" %S/Inputs/cp_layer.mlir -o %t/p2.mlir
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=4" %S/Inputs/cp_layer.mlir -o %t/p4.mlir
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=4 layout=zigzag" %S/Inputs/cp_layer.mlir -o %t/z4.mlir
// RUN: FileCheck %s < %t/p4.mlir
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/p2.mlir --entry=qwen3_next --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/p4.mlir --entry=qwen3_next --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/p2.mlir --entry=qwen3_5 --seqlens=130,2 --seed=2 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/p4.mlir --entry=qwen3_5 --seqlens=1,1,1,1,2,2 --seed=3 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/z4.mlir --entry=qwen3_next --seqlens=8,16,0,40 --seed=4 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/z4.mlir --entry=qwen3_5 --seqlens=64,8 --seed=5 | FileCheck %s --check-prefix=SAME

// Two stacked layers: the second layer's input is the first one's token
// shard, never gathered in between.
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/p4.mlir --entry=stacked --seqlens=0,1,63,64,65,7 --seed=6 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/z4.mlir --entry=stacked --seqlens=8,16,0,40 --seed=7 | FileCheck %s --check-prefix=SAME

// SAME: comparing @{{qwen3_next|qwen3_5|stacked}} (1 rank(s)) against @{{.*}} ({{[24]}} rank(s))
// SAME-NEXT: result #0: {{.*}} ok

// The hidden states and the output are token shards; the projections,
// split_qkvz, gated RMSNorm and out_proj keep the shard; the core is
// head-sharded between one all_to_all in and one out.
// CHECK-LABEL: func.func @qwen3_next(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x8xf64, #gdn.seq<contiguous, ranks = 4>>
// CHECK-SAME: -> tensor<?x8xf64, #gdn.seq<contiguous, ranks = 4>>
// CHECK: gdn.linear %[[X]], %{{.*}} -> tensor<?x48xf64, #gdn.seq<contiguous, ranks = 4>>
// CHECK: gdn.split_qkvz
// CHECK-SAME: -> (tensor<?x32xf64, #gdn.seq<contiguous, ranks = 4>>, tensor<?x8x2xf64, #gdn.seq<contiguous, ranks = 4>>
// CHECK: gdn_comm.all_to_all {{.*}} -> tensor<?x8xf64>
// CHECK: gdn.delta_rule
// CHECK: %[[O:.*]] = gdn_comm.all_to_all {{.*}} -> tensor<?x8x2xf64, #gdn.seq<contiguous, ranks = 4>>
// CHECK: %[[N:.*]] = gdn.gated_rmsnorm %[[O]], {{.*}} -> tensor<?x8x2xf64, #gdn.seq<contiguous, ranks = 4>>
// CHECK: gdn.linear %[[N]], {{.*}} -> tensor<?x8xf64, #gdn.seq<contiguous, ranks = 4>>
// CHECK-LABEL: func.func @qwen3_5(
// CHECK-LABEL: func.func @stacked(
// CHECK-COUNT-4: gdn_comm.all_to_all
// CHECK-NOT: gdn_comm.all_gather {{.*}}tensor<?x8xf64>
// CHECK: return
