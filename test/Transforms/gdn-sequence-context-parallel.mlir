// SP and CP composed on one program: gdn-sequence-parallel (S ranks, heads
// split, tokens gathered inside the layer) then gdn-context-parallel (P
// ranks, tokens split) give an S x P grid with SP ranks innermost (rank g is
// SP rank g % S and CP rank g / S, Megatron's order). The function's
// activations are shards over S * P ranks; the SP all-gather yields this
// rank's CP shard, the SP reduce-scatter returns to the S * P shard. Equal to
// P = 1 in float64 for S = 2 with P = 2, 4 and 8 (16 ranks), chunkwise and
// (where the S-split heads still divide) headwise, both projection layouts
// and stacked layers; a slowly decaying layer shows the state chain across
// CP ranks, and removing the received state fails the comparison.
// RUN: rm -rf %t && mkdir -p %t
// RUN: gdn-opt --gdn-expand-layer --gdn-sequence-parallel="ranks=2" --gdn-context-parallel="ranks=4 mode=chunkwise" %S/Inputs/sp_cp_layer_slow_decay.mlir -o %t/slow_s2c4.mlir
// RUN: FileCheck %s < %t/slow_s2c4.mlir
// RUN: gdn-run --compare %S/Inputs/sp_cp_layer_slow_decay.mlir %t/slow_s2c4.mlir --seqlens=200 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/sp_cp_layer_slow_decay.mlir %t/slow_s2c4.mlir --seqlens=0,1,63,64,65,7 --seed=2 | FileCheck %s --check-prefix=SAME
// RUN: gdn-opt --gdn-expand-layer --gdn-sequence-parallel="ranks=2" --gdn-context-parallel="ranks=8 mode=chunkwise chain=scan" %S/Inputs/sp_cp_layer_slow_decay.mlir -o %t/slow_s2c8.mlir
// RUN: gdn-run --compare %S/Inputs/sp_cp_layer_slow_decay.mlir %t/slow_s2c8.mlir --seqlens=0,1,63,64,65,15 --seed=3 | FileCheck %s --check-prefix=SAME
// RUN: sed -e 's/ initial_state(%%17) / /' -e 's/tokens = ?>, tensor<?x4x2x2xf64>) -> (tensor<?x4x2xf64, #gdn.seq<contiguous, ranks = 4>>/tokens = ?>) -> (tensor<?x4x2xf64, #gdn.seq<contiguous, ranks = 4>>/' %t/slow_s2c4.mlir > %t/no-state.mlir
// RUN: not gdn-run --compare %S/Inputs/sp_cp_layer_slow_decay.mlir %t/no-state.mlir --seqlens=200 | FileCheck %s --check-prefix=DIFF

// Both layouts and stacked layers, chunkwise and headwise.
// RUN: gdn-opt --gdn-expand-layer --gdn-sequence-parallel="ranks=2" --gdn-context-parallel="ranks=2 mode=chunkwise" %S/Inputs/cp_layer.mlir -o %t/c.mlir
// RUN: gdn-opt --gdn-expand-layer --gdn-sequence-parallel="ranks=2" --gdn-context-parallel="ranks=2 mode=headwise" %S/Inputs/cp_layer.mlir -o %t/h.mlir
// RUN: FileCheck %s --check-prefix=HEADWISE < %t/h.mlir
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/c.mlir --entry=qwen3_next --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/c.mlir --entry=qwen3_5 --seqlens=130,2 --seed=2 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/c.mlir --entry=stacked --seqlens=1,3,1,3,1,3,1,3,2,2,2,2,1,1,1,1 --seed=3 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/h.mlir --entry=qwen3_next --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/h.mlir --entry=qwen3_5 --seqlens=130,2 --seed=2 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/h.mlir --entry=stacked --seqlens=0,1,63,64,65,7 --seed=4 | FileCheck %s --check-prefix=SAME

// Final states returned: gathered over the SP heads (SP alone, P = 2 and 4),
// then over the CP group.
// RUN: gdn-opt --gdn-sequence-parallel="ranks=2" %S/Inputs/sp_final_state.mlir -o %t/fs_s2.mlir
// RUN: gdn-opt --gdn-sequence-parallel="ranks=4" %S/Inputs/sp_final_state.mlir -o %t/fs_s4.mlir
// RUN: gdn-opt --gdn-sequence-parallel="ranks=2" --gdn-context-parallel="ranks=2 mode=headwise" %S/Inputs/sp_final_state.mlir -o %t/fs_h.mlir
// RUN: gdn-opt --gdn-sequence-parallel="ranks=2" --gdn-context-parallel="ranks=4 mode=chunkwise" %S/Inputs/sp_final_state.mlir -o %t/fs_c.mlir
// RUN: FileCheck %s --check-prefix=FINAL < %t/fs_s2.mlir
// RUN: gdn-run --compare %S/Inputs/sp_final_state.mlir %t/fs_s2.mlir --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=STATES
// RUN: gdn-run --compare %S/Inputs/sp_final_state.mlir %t/fs_s4.mlir --seqlens=0,1,63,64,65,7 --seed=2 | FileCheck %s --check-prefix=STATES
// RUN: gdn-run --compare %S/Inputs/sp_final_state.mlir %t/fs_h.mlir --seqlens=0,1,63,64,65,7 --seed=3 | FileCheck %s --check-prefix=STATES
// RUN: gdn-run --compare %S/Inputs/sp_final_state.mlir %t/fs_c.mlir --seqlens=0,1,63,64,65,15 --seed=4 | FileCheck %s --check-prefix=STATES
// FINAL: %[[S:.*]] = gdn_comm.all_gather %{{.*}} {dim = 1 : i64, group = #gdn_comm.group<sp, 2>} : tensor<?x4x2x2xf64> -> tensor<?x8x2x2xf64>
// FINAL: return %{{.*}}, %[[S]]
// STATES: result #0: {{.*}} ok
// STATES-NEXT: result #1: {{.*}} ok

// Zigzag CP shards under SP: gdn-sequence-context-parallel-zigzag.mlir.

// CHECK-LABEL: func.func @layer(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x8xf64, #gdn.seq<contiguous, ranks = 8>>
// CHECK-SAME: -> tensor<?x8xf64, #gdn.seq<contiguous, ranks = 8>>
// CHECK: %[[G:.*]] = gdn_comm.all_gather %[[X]] {dim = 0 : i64, group = #gdn_comm.group<sp, 2>} : tensor<?x8xf64, #gdn.seq<contiguous, ranks = 8>> -> tensor<?x8xf64, #gdn.seq<contiguous, ranks = 4>>
// CHECK: gdn.linear %[[G]]
// CHECK: gdn_comm.local_packing {{.*}}group = #gdn_comm.group<cp, 4>
// CHECK: gdn_comm.state_exchange
// CHECK: gdn.delta_rule {{.*}} -> (tensor<?x4x2xf64, #gdn.seq<contiguous, ranks = 4>>, tensor<?x4x2x2xf64>)
// CHECK: gdn_comm.reduce_scatter {{.*}}group = #gdn_comm.group<sp, 2>} : tensor<?x8xf64, #gdn.seq<contiguous, ranks = 4>> -> tensor<?x8xf64, #gdn.seq<contiguous, ranks = 8>>

// HEADWISE: gdn_comm.all_to_all {{.*}}group = #gdn_comm.group<cp, 2>
// HEADWISE: gdn.delta_rule {{.*}}{gdn.cp_mode = "headwise"}

// SAME: comparing @{{.*}} (1 rank(s)) against @{{.*}} ({{4|8|16}} rank(s))
// SAME-NEXT: result #0: {{.*}} ok
// DIFF: result #0: {{.*}} FAIL
