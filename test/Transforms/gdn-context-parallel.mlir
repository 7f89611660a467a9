// gdn-context-parallel, mode=headwise: the distributed core equals the P = 1
// core (float64, relative RMS below 1e-12) for P = 2, 4 and 8 on the test
// matrix: sequences straddling rank boundaries with lengths 0, 1, 63, 64, 65
// and alignment padding; one long sequence; many short documents; tail
// padding. GQA (8 key heads, 16 value heads), bias, initial and final conv
// states and an initial delta-rule state are all present.
// RUN: rm -rf %t && mkdir -p %t
// RUN: gdn-opt --gdn-context-parallel="ranks=2" %S/Inputs/cp_core.mlir -o %t/p2.mlir
// RUN: gdn-opt --gdn-context-parallel="ranks=4" %S/Inputs/cp_core.mlir -o %t/p4.mlir
// RUN: gdn-opt --gdn-context-parallel="ranks=8" %S/Inputs/cp_core.mlir -o %t/p8.mlir
// RUN: FileCheck %s < %t/p4.mlir
// RUN: gdn-opt --gdn-context-parallel="ranks=1" %S/Inputs/cp_core.mlir | FileCheck %s --check-prefix=ONE

// Straddling mix with padding.
// RUN: gdn-run --compare %S/Inputs/cp_core.mlir %t/p2.mlir --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_core.mlir %t/p4.mlir --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_core.mlir %t/p8.mlir --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 | FileCheck %s --check-prefix=SAME
// One long sequence.
// RUN: gdn-run --compare %S/Inputs/cp_core.mlir %t/p8.mlir --seqlens=200 --seed=2 | FileCheck %s --check-prefix=SAME
// Many short documents.
// RUN: gdn-run --compare %S/Inputs/cp_core.mlir %t/p4.mlir --seqlens=1,3,1,3,1,3,1,3,2,2,2,2,1,1,1,1 --seed=3 | FileCheck %s --check-prefix=SAME
// Tail padding.
// RUN: gdn-run --compare %S/Inputs/cp_core.mlir %t/p8.mlir --seqlens=50,30 --slots=56,40 --seed=4 | FileCheck %s --check-prefix=SAME

// Zigzag token shards (sequence lengths multiples of 2P), including a
// zero-length sequence and padding, and the run-time diagnostic naming the
// sequence whose length does not split into 2P pieces.
// RUN: gdn-opt --gdn-context-parallel="ranks=2 layout=zigzag" %S/Inputs/cp_core.mlir -o %t/z2.mlir
// RUN: gdn-opt --gdn-context-parallel="ranks=4 layout=zigzag" %S/Inputs/cp_core.mlir -o %t/z4.mlir
// RUN: gdn-opt --gdn-context-parallel="ranks=8 layout=zigzag" %S/Inputs/cp_core.mlir -o %t/z8.mlir
// RUN: FileCheck %s --check-prefix=ZIGZAG < %t/z4.mlir
// RUN: gdn-run --compare %S/Inputs/cp_core.mlir %t/z2.mlir --seqlens=4,8,12,0,20 --slots=4,8,12,0,24 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_core.mlir %t/z4.mlir --seqlens=16,1,40 --slots=16,8,40 --seed=5 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_core.mlir %t/z8.mlir --seqlens=16,64,32 --seed=6 | FileCheck %s --check-prefix=SAME
// RUN: not gdn-run --compare %S/Inputs/cp_core.mlir %t/z4.mlir --seqlens=16,10 --slots=16,12 2>&1 | FileCheck %s --check-prefix=ODD
// ODD: zigzag sharding over 4 ranks needs every sequence's length to be a multiple of 8, but sequence 1 has length 12; pad the sequence or use the contiguous layout

// bf16 activations (the gate inputs stay bf16 through their all_to_all),
// and a gated RMSNorm whose z is its own argument.
// RUN: gdn-opt --gdn-context-parallel="ranks=4" %S/Inputs/cp_core_bf16.mlir -o %t/bf16.mlir
// RUN: gdn-run --compare %S/Inputs/cp_core_bf16.mlir %t/bf16.mlir --seqlens=0,1,63,64,65,7 --rtol=5e-3 | FileCheck %s --check-prefix=BF16
// BF16: result #0: {{.*}}xbf16  rel_rms = {{.*}}  ok
// BF16: result #1: {{.*}}xf32  rel_rms = {{.*}}  ok
// RUN: gdn-opt --gdn-context-parallel="ranks=2" %S/Inputs/cp_core_zarg.mlir -o %t/zarg.mlir
// RUN: gdn-run --compare %S/Inputs/cp_core_zarg.mlir %t/zarg.mlir --seqlens=3,0,65,4 | FileCheck %s --check-prefix=ZARG
// ZARG: result #0: {{.*}}  ok

// SAME: comparing @core (1 rank(s)) against @core ({{[248]}} rank(s))
// SAME-NEXT: result #0: {{.*}} ok
// SAME-NEXT: result #1: {{.*}} ok
// SAME-NEXT: result #2: {{.*}} ok

// The token-indexed arguments and the output become contiguous token
// shards; the conv channels are regrouped per q/k/v section before the
// all_to_all, and the conv parameters are regrouped before each rank takes
// its block; A_log, dt_bias and the delta-rule state are cut by head.
// CHECK-LABEL: func.func @core(
// CHECK-SAME: %[[MIXED:[a-z0-9]+]]: tensor<?x64xf64, #gdn.seq<contiguous, ranks = 4>>, %[[W:[a-z0-9]+]]: tensor<64x4xf64>
// CHECK-SAME: -> (tensor<?x16x2xf64, #gdn.seq<contiguous, ranks = 4>>, tensor<?x16x2x2xf64>, tensor<?x64x3xf64>)
// CHECK: %[[R:.*]] = gdn.regroup_sections %[[MIXED]] {dim = 1 : i64, groups = 4 : i64, section_sizes = array<i64: 16, 16, 32>}
// CHECK: %[[X:.*]] = gdn_comm.all_to_all %[[R]] {concat_dim = 0 : i64, group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64} : tensor<?x64xf64, #gdn.seq<contiguous, ranks = 4>> -> tensor<?x16xf64>
// CHECK: %[[RW:.*]] = gdn.regroup_sections %[[W]] {dim = 0 : i64, groups = 4 : i64, section_sizes = array<i64: 16, 16, 32>}
// CHECK: %[[MYW:.*]] = gdn_comm.local_shard %[[RW]] {dim = 0 : i64, group = #gdn_comm.group<cp, 4>} : tensor<64x4xf64> -> tensor<16x4xf64>
// CHECK: gdn_comm.local_shard %{{.*}} {dim = 0 : i64, group = #gdn_comm.group<cp, 4>} : tensor<16xf64> -> tensor<4xf64>
// CHECK: gdn_comm.local_shard %{{.*}} {dim = 1 : i64, group = #gdn_comm.group<cp, 4>} : tensor<?x16x2x2xf64> -> tensor<?x4x2x2xf64>
// CHECK: gdn.causal_conv1d %[[X]], %[[MYW]]
// CHECK-SAME: -> (tensor<?x16xf64>, tensor<?x16x3xf64>)
// CHECK: gdn.split_qkv {{.*}} -> tensor<?x2x2xf64>, tensor<?x2x2xf64>, tensor<?x4x2xf64>
// CHECK: gdn.delta_rule
// CHECK-SAME: -> (tensor<?x4x2xf64>, tensor<?x4x2x2xf64>)
// CHECK: gdn_comm.all_to_all %{{.*}} {concat_dim = 1 : i64, group = #gdn_comm.group<cp, 4>, split_dim = 0 : i64} : tensor<?x4x2xf64> -> tensor<?x16x2xf64, #gdn.seq<contiguous, ranks = 4>>
// CHECK: gdn_comm.all_gather %{{.*}} {dim = 1 : i64, group = #gdn_comm.group<cp, 4>} : tensor<?x4x2x2xf64> -> tensor<?x16x2x2xf64>
// CHECK: %[[H:.*]] = gdn_comm.all_gather %{{.*}} {dim = 1 : i64, group = #gdn_comm.group<cp, 4>} : tensor<?x16x3xf64> -> tensor<?x64x3xf64>
// CHECK: gdn.regroup_sections %[[H]] {dim = 1 : i64, groups = 4 : i64, inverse = true, section_sizes = array<i64: 16, 16, 32>}

// ZIGZAG-LABEL: func.func @core(
// ZIGZAG-SAME: tensor<?x64xf64, #gdn.seq<zigzag, ranks = 4>>
// ZIGZAG-SAME: -> (tensor<?x16x2xf64, #gdn.seq<zigzag, ranks = 4>>,
// ZIGZAG: %[[C:.*]] = gdn.convert_layout %arg0, %{{.*}} : (tensor<?x64xf64, #gdn.seq<zigzag, ranks = 4>>, !gdn.packing<seqs = ?, tokens = ?, padded>) -> tensor<?x64xf64, #gdn.seq<contiguous, ranks = 4>>
// ZIGZAG: gdn.regroup_sections %[[C]]
// ZIGZAG: %[[O:.*]] = gdn_comm.all_to_all %{{.*}} {concat_dim = 1 : i64, group = #gdn_comm.group<cp, 4>, split_dim = 0 : i64} : tensor<?x4x2xf64> -> tensor<?x16x2xf64, #gdn.seq<contiguous, ranks = 4>>
// ZIGZAG: gdn.convert_layout %[[O]], %{{.*}} -> tensor<?x16x2xf64, #gdn.seq<zigzag, ranks = 4>>

// ranks=1 leaves the function alone.
// ONE-NOT: gdn_comm
// ONE: gdn.causal_conv1d %arg0, %arg1
