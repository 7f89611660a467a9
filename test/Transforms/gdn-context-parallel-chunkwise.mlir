// gdn-context-parallel, mode=chunkwise: every rank runs the core on its
// contiguous token shard; the conv halo and the chained delta-rule state
// carry each sequence across rank boundaries. The distributed core equals
// the P = 1 core (float64, relative RMS below 1e-12) for P = 2, 4 and 8, with
// contiguous and zigzag shards and both state chains, on the test matrix:
// lengths 0, 1, 63, 64, 65 straddling ranks with padding, one long sequence
// over every rank, many short documents, tail padding. GQA (8 key heads, 16
// value heads), bias, initial/final conv states and an initial delta-rule
// state are all present. The core decays slowly (cp_core_slow_decay.mlir),
// so what crosses a boundary shows in the outputs: the last RUN lines
// remove the received state, or the halo, and the comparison fails.
// RUN: rm -rf %t && mkdir -p %t
// RUN: gdn-opt --gdn-context-parallel="ranks=2 mode=chunkwise" %S/Inputs/cp_core_slow_decay.mlir -o %t/p2.mlir
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=chunkwise" %S/Inputs/cp_core_slow_decay.mlir -o %t/p4.mlir
// RUN: gdn-opt --gdn-context-parallel="ranks=8 mode=chunkwise" %S/Inputs/cp_core_slow_decay.mlir -o %t/p8.mlir
// RUN: gdn-opt --gdn-context-parallel="ranks=8 mode=chunkwise chain=scan" %S/Inputs/cp_core_slow_decay.mlir -o %t/s8.mlir
// RUN: FileCheck %s < %t/p4.mlir
// RUN: FileCheck %s --check-prefix=SCAN < %t/s8.mlir

// Straddling mix with padding.
// RUN: gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/p2.mlir --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/p4.mlir --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/p8.mlir --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 | FileCheck %s --check-prefix=SAME
// One long sequence over every rank (each rank inside it: M and S chained).
// RUN: gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/p8.mlir --seqlens=200 --seed=2 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/s8.mlir --seqlens=200 --seed=2 | FileCheck %s --check-prefix=SAME
// Sequences exactly on shard boundaries, and one shorter than the halo
// that crosses one (rows 31-33 of 64 over 2 ranks).
// RUN: gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/p2.mlir --seqlens=31,2,31 --seed=8 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/p4.mlir --seqlens=16,16,16,16 --seed=9 | FileCheck %s --check-prefix=SAME
// Many short documents.
// RUN: gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/p4.mlir --seqlens=1,3,1,3,1,3,1,3,2,2,2,2,1,1,1,1 --seed=3 | FileCheck %s --check-prefix=SAME
// Tail padding; padding that straddles a shard boundary.
// RUN: gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/p8.mlir --seqlens=50,30 --slots=56,40 --seed=4 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/s8.mlir --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 --seed=5 | FileCheck %s --check-prefix=SAME

// Shards shorter than the conv halo (2 rows, W - 1 = 3: the halo reaches
// back over two ranks), and an empty pack.
// RUN: gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/p8.mlir --seqlens=5,3,1,7 --seed=10 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/p4.mlir --seqlens=0,0 --slots=4,4 | FileCheck %s --check-prefix=SAME

// A gate input computed after the conv (both modes).
// RUN: gdn-opt --gdn-context-parallel="ranks=2 mode=chunkwise" %S/Inputs/cp_core_late_gates.mlir -o %t/late-c.mlir
// RUN: gdn-opt --gdn-context-parallel="ranks=2 mode=headwise" %S/Inputs/cp_core_late_gates.mlir -o %t/late-h.mlir
// RUN: gdn-run --compare %S/Inputs/cp_core_late_gates.mlir %t/late-c.mlir --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=LATE
// RUN: gdn-run --compare %S/Inputs/cp_core_late_gates.mlir %t/late-h.mlir --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=LATE
// LATE: result #0: {{.*}} ok
// LATE-NEXT: result #1: {{.*}} ok

// Zigzag token shards are made contiguous around the core.
// RUN: gdn-opt --gdn-context-parallel="ranks=2 mode=chunkwise layout=zigzag" %S/Inputs/cp_core_slow_decay.mlir -o %t/z2.mlir
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=chunkwise layout=zigzag" %S/Inputs/cp_core_slow_decay.mlir -o %t/z4.mlir
// RUN: gdn-opt --gdn-context-parallel="ranks=8 mode=chunkwise layout=zigzag" %S/Inputs/cp_core_slow_decay.mlir -o %t/z8.mlir
// RUN: FileCheck %s --check-prefix=ZIGZAG < %t/z4.mlir
// RUN: gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/z2.mlir --seqlens=4,8,12,0,20 --slots=4,8,12,0,24 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/z4.mlir --seqlens=16,1,40 --slots=16,8,40 --seed=5 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/z8.mlir --seqlens=16,64,32 --seed=6 | FileCheck %s --check-prefix=SAME

// The fast-decaying core of the headwise tests, and bf16 (bit for bit here:
// these states never cross a boundary with any weight).
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=chunkwise" %S/Inputs/cp_core.mlir -o %t/fast4.mlir
// RUN: gdn-run --compare %S/Inputs/cp_core.mlir %t/fast4.mlir --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 | FileCheck %s --check-prefix=SAME
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=chunkwise" %S/Inputs/cp_core_bf16.mlir -o %t/bf16.mlir
// RUN: gdn-run --compare %S/Inputs/cp_core_bf16.mlir %t/bf16.mlir --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=BF16

// Mutations: without the received state, or without the halo, the
// comparison fails.
// RUN: sed -e 's/ initial_state(%7) / /' -e 's/, tensor<?x16x2x2xf64>) -> (tensor<?x16x2xf64, #gdn.seq<contiguous, ranks = 8>>/) -> (tensor<?x16x2xf64, #gdn.seq<contiguous, ranks = 8>>/' %t/p8.mlir > %t/no-state.mlir
// RUN: not gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/no-state.mlir --seqlens=200 --seed=2 | FileCheck %s --check-prefix=DIFF
// RUN: sed -e 's/ initial_state(%3) / initial_state(%arg3) /' %t/p8.mlir > %t/no-halo.mlir
// RUN: not gdn-run --compare %S/Inputs/cp_core_slow_decay.mlir %t/no-halo.mlir --seqlens=200 --seed=2 | FileCheck %s --check-prefix=DIFF

// CHECK: %[[P:.*]] = gdn.packing
// CHECK: %[[LOCAL:.*]] = gdn_comm.local_packing %[[P]] {group = #gdn_comm.group<cp, 4>}
// CHECK: %[[HALO:.*]] = gdn_comm.halo_exchange %arg0 {group = #gdn_comm.group<cp, 4>, tokens = 3 : i64} {{.*}} -> tensor<3x64xf64>
// CHECK: %[[CS:.*]] = gdn_comm.continue_conv_state %[[HALO]], %[[P]] initial_state(%arg3)
// CHECK: gdn.causal_conv1d %arg0, %arg1, %[[LOCAL]] bias(%arg2) initial_state(%[[CS]])
// CHECK-SAME: -> (tensor<?x64xf64, #gdn.seq<contiguous, ranks = 4>>, tensor<?x64x3xf64>)
// CHECK: %[[M:.*]], %[[S:.*]] = gdn_comm.state_summary {{.*}}, %[[P]] initial_state(%arg7)
// CHECK-SAME: -> (tensor<16x2x2xf64>, tensor<16x2x2xf64>)
// CHECK: %[[IN:.*]] = gdn_comm.state_exchange %[[M]], %[[S]] {group = #gdn_comm.group<cp, 4>}
// CHECK: %[[S0:.*]] = gdn_comm.continue_state %[[IN]], %[[P]] initial_state(%arg7)
// CHECK: gdn.delta_rule {{.*}}, %[[LOCAL]] initial_state(%[[S0]]) {gdn.cp_mode = "chunkwise"}
// CHECK: gdn_comm.gather_sequence_states
// CHECK: gdn_comm.gather_sequence_states
// CHECK-NOT: all_to_all

// SCAN: gdn_comm.state_exchange {{.*}}chain = #gdn_comm.chain<scan>

// ZIGZAG: gdn.convert_layout %arg0{{.*}} -> tensor<?x64xf64, #gdn.seq<contiguous, ranks = 4>>
// ZIGZAG: gdn.delta_rule
// ZIGZAG: gdn.convert_layout {{.*}} -> tensor<?x16x2xf64, #gdn.seq<zigzag, ranks = 4>>

// SAME-NOT: FAIL
// SAME: result #0: {{.*}} ok
// SAME: result #1: {{.*}} ok
// SAME: result #2: {{.*}} ok

// BF16-NOT: FAIL
// BF16: result #0: {{.*}} ok
// BF16: result #1: {{.*}} ok

// DIFF: result #0: {{.*}} FAIL
