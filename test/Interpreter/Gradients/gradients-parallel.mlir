// Gradients of parallel programs: the interpreter differentiates a P-rank
// program on its ranks, collectives included (an all-gather's cotangents
// are reduce-scattered back, an all-to-all's go through the transposed
// all-to-all, the halo's back to the rows it copied, the chunkwise state
// chain's through its reverse chain), and the gradients of every argument
// equal those of the P = 1 program within 1e-12 (--rtol's default):
// headwise and chunkwise CP, contiguous and zigzag shards, SP, and SP inside
// CP, on the cores and layers the parallel passes are tested with (padding,
// conv and delta states in and out, GQA, sequences of length 0 and 1 and
// sequences that span several shards).
// RUN: rm -rf %t && mkdir -p %t
// RUN: gdn-opt --gdn-context-parallel="ranks=4" %S/../../Transforms/Inputs/cp_core.mlir -o %t/head4.mlir
// RUN: gdn-run --compare %S/../../Transforms/Inputs/cp_core.mlir %t/head4.mlir --gradients --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 | FileCheck %s --check-prefix=CORE
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=chunkwise" %S/../../Transforms/Inputs/cp_core.mlir -o %t/chunk4.mlir
// RUN: gdn-run --compare %S/../../Transforms/Inputs/cp_core.mlir %t/chunk4.mlir --gradients --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 | FileCheck %s --check-prefix=CORE
// RUN: gdn-run --compare %S/../../Transforms/Inputs/cp_core.mlir %t/chunk4.mlir --gradients --seqlens=1,3,1,3,1,3,1,3,2,2,2,2,1,1,1,1 --seed=3 | FileCheck %s --check-prefix=CORE
// RUN: gdn-run --compare %S/../../Transforms/Inputs/cp_core.mlir %t/chunk4.mlir --gradients --seqlens=0,0 --slots=4,4 | FileCheck %s --check-prefix=CORE
// RUN: gdn-opt --gdn-context-parallel="ranks=8 mode=chunkwise chain=scan" %S/../../Transforms/Inputs/cp_core_slow_decay.mlir -o %t/scan8.mlir
// RUN: gdn-run --compare %S/../../Transforms/Inputs/cp_core_slow_decay.mlir %t/scan8.mlir --gradients --seqlens=200 --seed=2 | FileCheck %s --check-prefix=SLOW
// Shards of 100 rows: the state summary's backward recomputes its rows in
// two segments of 64.
// RUN: gdn-opt --gdn-context-parallel="ranks=2 mode=chunkwise" %S/../../Transforms/Inputs/cp_core_slow_decay.mlir -o %t/slow2.mlir
// RUN: gdn-run --compare %S/../../Transforms/Inputs/cp_core_slow_decay.mlir %t/slow2.mlir --gradients --seqlens=200 | FileCheck %s --check-prefix=SLOW
// RUN: gdn-run --compare %S/../../Transforms/Inputs/cp_core_slow_decay.mlir %t/slow2.mlir --gradients --seqlens=20,150,30 | FileCheck %s --check-prefix=SLOW
// A sequence that starts one row before a shard continues into it: the
// halo's last row is its first token, the two before come from its initial
// conv state.
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=chunkwise" %S/../../Transforms/Inputs/cp_core_slow_decay.mlir -o %t/slow4.mlir
// RUN: gdn-run --compare %S/../../Transforms/Inputs/cp_core_slow_decay.mlir %t/slow4.mlir --gradients --seqlens=14,20,28 --slots=15,21,28 | FileCheck %s --check-prefix=SLOW
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=chunkwise layout=zigzag" %S/../../Transforms/Inputs/cp_core.mlir -o %t/zigzag4.mlir
// RUN: gdn-run --compare %S/../../Transforms/Inputs/cp_core.mlir %t/zigzag4.mlir --gradients --seqlens=16,1,40 --slots=16,8,40 --seed=5 | FileCheck %s --check-prefix=CORE
//
// CORE:         comparing @core (1 rank(s)) against @core ({{[48]}} rank(s))
// CORE-COUNT-3: {{^result #[0-2]: .*  ok$}}
// CORE-COUNT-9: {{^gradient #[0-8]: .*  ok$}}
// A_log is a constant in the slow-decay core: 8 gradients.
// SLOW:         comparing @core (1 rank(s)) against @core ({{[248]}} rank(s))
// SLOW-COUNT-3: {{^result #[0-2]: .*  ok$}}
// SLOW-COUNT-8: {{^gradient #[0-7]: .*  ok$}}
//
// Whole layers (the P = 4 programs of the headwise and chunkwise tests).
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=4" %S/../../Transforms/Inputs/cp_layer.mlir -o %t/layer-head4.mlir
// RUN: gdn-run --compare %S/../../Transforms/Inputs/cp_layer.mlir %t/layer-head4.mlir --entry=qwen3_next --gradients --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=4 mode=chunkwise" %S/../../Transforms/Inputs/cp_layer.mlir -o %t/layer-chunk4.mlir
// RUN: gdn-run --compare %S/../../Transforms/Inputs/cp_layer.mlir %t/layer-chunk4.mlir --entry=qwen3_5 --gradients --seqlens=130,2 --seed=2 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=4 mode=chunkwise layout=zigzag" %S/../../Transforms/Inputs/cp_layer.mlir -o %t/layer-zigzag4.mlir
// RUN: gdn-run --compare %S/../../Transforms/Inputs/cp_layer.mlir %t/layer-zigzag4.mlir --entry=stacked --gradients --seqlens=8,16,0,40 --seed=8 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-opt --gdn-expand-layer --gdn-sequence-parallel="ranks=2" %S/../../Transforms/Inputs/cp_layer.mlir -o %t/sp2.mlir
// RUN: gdn-run --compare %S/../../Transforms/Inputs/cp_layer.mlir %t/sp2.mlir --entry=qwen3_next --gradients --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-opt --gdn-expand-layer --gdn-sequence-parallel="ranks=2" --gdn-context-parallel="ranks=4 mode=chunkwise layout=zigzag" %S/../../Transforms/Inputs/sp_cp_layer_slow_decay.mlir -o %t/sp2cp4.mlir
// RUN: gdn-run --compare %S/../../Transforms/Inputs/sp_cp_layer_slow_decay.mlir %t/sp2cp4.mlir --gradients --seqlens=8,0,40,16,64 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-opt --gdn-sequence-parallel="ranks=2" --gdn-context-parallel="ranks=2 mode=chunkwise" %S/../../Transforms/Inputs/sp_final_state.mlir -o %t/sp-final.mlir
// RUN: gdn-run --compare %S/../../Transforms/Inputs/sp_final_state.mlir %t/sp-final.mlir --gradients --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=LAYER
//
// LAYER:     comparing @{{[a-z0-9_]+}} (1 rank(s)) against @{{[a-z0-9_]+}} ({{[248]}} rank(s))
// LAYER-NOT: FAIL
// LAYER:     gradient #{{[0-9]+}}: {{.*}}  ok
//
// The P-rank gradients also agree with finite differences of the P-rank
// program itself, independently of the P = 1 program.
// RUN: gdn-run %t/chunk4.mlir --gradcheck --gradcheck-entries=16 --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 | FileCheck %s --check-prefix=FD
// FD:          gradient check of @core (4 rank(s))
// FD-COUNT-9:  {{  ok$}}
// RUN: gdn-run %t/slow2.mlir --gradcheck --gradcheck-entries=8 --seqlens=20,150,30 | FileCheck %s --check-prefix=FD2
// FD2:         gradient check of @core (2 rank(s))
// FD2-COUNT-8: {{  ok$}}
