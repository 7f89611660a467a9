// gdn-hoist-layouts: after zigzag CP, the token-local ops around each core
// run on zigzag shards and every core converts mixed_qkv, a and b in and its
// output out. Moving the conversions to the edge of each token-local region
// leaves one conversion of the hidden states in and one out per function,
// even for two stacked layers (8 -> 2 conversions), and the program still
// equals P = 1. On the bare core every token-indexed argument meets its core
// directly, so nothing is cheaper and nothing moves.
// RUN: rm -rf %t && mkdir -p %t
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=4 layout=zigzag" %S/Inputs/cp_layer.mlir -o %t/headwise.mlir
// RUN: gdn-opt --gdn-hoist-layouts %t/headwise.mlir -o %t/headwise-hoisted.mlir
// RUN: FileCheck %s --check-prefix=BEFORE < %t/headwise.mlir
// RUN: FileCheck %s < %t/headwise-hoisted.mlir
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/headwise-hoisted.mlir --entry=qwen3_next --seqlens=8,16,0,40 --seed=4 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/headwise-hoisted.mlir --entry=qwen3_5 --seqlens=64,8 --seed=5 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/headwise-hoisted.mlir --entry=stacked --seqlens=8,16,0,40 --seed=7 | FileCheck %s --check-prefix=SAME
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=4 layout=zigzag mode=chunkwise" --gdn-hoist-layouts %S/Inputs/cp_layer.mlir -o %t/chunkwise-hoisted.mlir
// RUN: FileCheck %s < %t/chunkwise-hoisted.mlir
// RUN: gdn-run --compare %S/Inputs/cp_layer.mlir %t/chunkwise-hoisted.mlir --entry=stacked --seqlens=8,16,0,40 --seed=8 | FileCheck %s --check-prefix=SAME

// The bare core: unchanged.
// RUN: gdn-opt --gdn-context-parallel="ranks=4 layout=zigzag" %S/Inputs/cp_core.mlir -o %t/core.mlir
// RUN: gdn-opt --gdn-hoist-layouts %t/core.mlir -o %t/core-hoisted.mlir
// RUN: diff %t/core.mlir %t/core-hoisted.mlir

// Before: 3 conversions in and 1 out per core.
// BEFORE-LABEL: func.func @stacked(
// BEFORE-COUNT-8: gdn.convert_layout
// BEFORE-NOT: gdn.convert_layout

// CHECK-LABEL: func.func @qwen3_next(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x8xf64, #gdn.seq<zigzag, ranks = 4>>
// CHECK-SAME: -> tensor<?x8xf64, #gdn.seq<zigzag, ranks = 4>>
// CHECK: %[[P:.*]] = gdn.packing
// CHECK-NEXT: %[[C:.*]] = gdn.convert_layout %[[X]], %[[P]] {{.*}} -> tensor<?x8xf64, #gdn.seq<contiguous, ranks = 4>>
// CHECK: gdn.linear %[[C]]
// CHECK-NOT: gdn.convert_layout
// CHECK: %[[Y:.*]] = gdn.linear {{.*}} -> tensor<?x8xf64, #gdn.seq<contiguous, ranks = 4>>
// CHECK-NEXT: %[[OUT:.*]] = gdn.convert_layout %[[Y]], %[[P]] {{.*}} -> tensor<?x8xf64, #gdn.seq<zigzag, ranks = 4>>
// CHECK-NEXT: return %[[OUT]]
// CHECK-LABEL: func.func @qwen3_5(
// CHECK-COUNT-2: gdn.convert_layout
// CHECK-NOT: gdn.convert_layout
// CHECK-LABEL: func.func @stacked(
// CHECK-COUNT-2: gdn.convert_layout
// CHECK-NOT: gdn.convert_layout

// SAME: result #0: {{.*}} ok
