// gdn-context-parallel mode=chunkwise on whole layers (after
// gdn-expand-layer), both projection layouts and two stacked layers: the
// projections, split_qkvz, the gated RMSNorm and out_proj run on each rank's
// token shard, and so does the core, with its halo and state chain. Equal to
// P = 1 in float64 for P = 2, 4 and 8 (8 does not divide these layers' 4 key
// heads: only chunkwise can use 8 ranks), contiguous and zigzag shards,
// lengths 0, 1, 63, 64, 65, a sequence over every rank; then composed with
// gdn-fuse, whose prologue runs on the rank's shard with the local packing.
// RUN: rm -rf %t && mkdir -p %t
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=2 mode=chunkwise" %S/Inputs/cp_layer.mlir -o %t/p2.mlir
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=4 mode=chunkwise" %S/Inputs/cp_layer.mlir -o %t/p4.mlir
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=8 mode=chunkwise" %S/Inputs/cp_layer.mlir -o %t/p8.mlir
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=4 mode=chunkwise layout=zigzag" %S/Inputs/cp_layer.mlir -o %t/z4.mlir
// RUN: FileCheck %s < %t/p8.mlir
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/p2.mlir --entry=qwen3_next --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/p8.mlir --entry=qwen3_next --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/p4.mlir --entry=qwen3_5 --seqlens=130,2 --seed=2 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/p8.mlir --entry=qwen3_5 --seqlens=200 --seed=3 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/z4.mlir --entry=qwen3_next --seqlens=8,16,0,40 --seed=4 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/z4.mlir --entry=qwen3_5 --seqlens=64,8 --seed=5 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/p4.mlir --entry=stacked --seqlens=0,1,63,64,65,7 --seed=6 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/p8.mlir --entry=stacked --seqlens=200 --seed=7 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/z4.mlir --entry=stacked --seqlens=8,16,0,40 --seed=8 | FileCheck %s --check-prefix=SAME

// Composed with gdn-fuse (f32 layer of gdn-context-parallel-fuse.mlir).
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=4 mode=chunkwise" --gdn-fuse %S/gdn-context-parallel-fuse.mlir -o %t/fused.mlir
// RUN: FileCheck %s --check-prefix=FUSED < %t/fused.mlir
// RUN: gdn-run --compare %S/gdn-context-parallel-fuse.mlir %t/fused.mlir --seqlens=0,1,63,64,65,7 --rtol=1e-6 | FileCheck %s --check-prefix=SAME

// SAME: comparing @{{qwen3_next|qwen3_5|stacked|layer}} (1 rank(s)) against @{{.*}} ({{[248]}} rank(s))
// SAME-NEXT: result #0: {{.*}} ok

// CHECK-LABEL: func.func @qwen3_next(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x8xf64, #gdn.seq<contiguous, ranks = 8>>
// CHECK: gdn.linear %[[X]], %{{.*}} -> tensor<?x48xf64, #gdn.seq<contiguous, ranks = 8>>
// CHECK: gdn_comm.local_packing
// CHECK: gdn_comm.halo_exchange
// CHECK: gdn_comm.state_exchange
// CHECK: %[[O:.*]], %{{.*}} = gdn.delta_rule {{.*}} {gdn.cp_mode = "chunkwise"}
// CHECK: %[[N:.*]] = gdn.gated_rmsnorm %[[O]], {{.*}} -> tensor<?x8x2xf64, #gdn.seq<contiguous, ranks = 8>>
// CHECK: gdn.linear %[[N]], {{.*}} -> tensor<?x8xf64, #gdn.seq<contiguous, ranks = 8>>
// CHECK-NOT: all_to_all
// CHECK-LABEL: func.func @qwen3_5(

// FUSED: %[[LOCAL:.*]] = gdn_comm.local_packing
// FUSED: gdn_kernel.prologue {{.*}}, %[[LOCAL]] initial_state(
// FUSED-SAME: -> (tensor<?x4x4xf32, #gdn.seq<contiguous, ranks = 4>>,
// FUSED: gdn.delta_rule {{.*}}, %[[LOCAL]] initial_state(
// FUSED: gdn_kernel.gated_rmsnorm
