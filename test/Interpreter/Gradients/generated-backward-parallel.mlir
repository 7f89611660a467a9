// The backward of a P-rank program is itself a P-rank program: generated
// after gdn-context-parallel or gdn-sequence-parallel, with the transposed
// collectives, and run on simulated ranks (--run-backward: every rank's
// @f_forward keeps its own saved values for its @f_backward), it gives the
// gradients of the P = 1 program (the interpreter's reverse sweep of it)
// within 1e-12: headwise and chunkwise CP over 4 ranks (contiguous and
// zigzag shards, both state chains, 8 ranks with the scan), SP over 2 and
// 4 ranks, SP inside CP (2 x 4), on the cores and layers the parallel passes are
// tested with (padding, conv and delta states in and out, GQA, sequences
// of length 0 and 1, sequences that span several shards, stacked layers),
// under the three save policies.
// RUN: rm -rf %t && mkdir -p %t
// RUN: gdn-opt --gdn-context-parallel="ranks=4" --gdn-generate-backward %S/../../Transforms/Inputs/cp_core.mlir -o %t/head4.mlir
// RUN: gdn-run --compare %t/head4.mlir %S/../../Transforms/Inputs/cp_core.mlir --entry=core --run-backward --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 | FileCheck %s --check-prefix=CORE
// RUN: gdn-opt --gdn-context-parallel="ranks=4" --gdn-generate-backward=save=activations %S/../../Transforms/Inputs/cp_core.mlir -o %t/head4-activations.mlir
// RUN: gdn-run --compare %t/head4-activations.mlir %S/../../Transforms/Inputs/cp_core.mlir --entry=core --run-backward --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 | FileCheck %s --check-prefix=CORE
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=chunkwise" --gdn-generate-backward %S/../../Transforms/Inputs/cp_core.mlir -o %t/chunk4.mlir
// RUN: gdn-run --compare %t/chunk4.mlir %S/../../Transforms/Inputs/cp_core.mlir --entry=core --run-backward --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 | FileCheck %s --check-prefix=CORE
// RUN: gdn-run --compare %t/chunk4.mlir %S/../../Transforms/Inputs/cp_core.mlir --entry=core --run-backward --seqlens=1,3,1,3,1,3,1,3,2,2,2,2,1,1,1,1 --seed=3 | FileCheck %s --check-prefix=CORE
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=chunkwise" --gdn-generate-backward=save=none %S/../../Transforms/Inputs/cp_core.mlir -o %t/chunk4-none.mlir
// RUN: gdn-run --compare %t/chunk4-none.mlir %S/../../Transforms/Inputs/cp_core.mlir --entry=core --run-backward --seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 | FileCheck %s --check-prefix=CORE
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=chunkwise layout=zigzag" --gdn-generate-backward %S/../../Transforms/Inputs/cp_core.mlir -o %t/zigzag4.mlir
// RUN: gdn-run --compare %t/zigzag4.mlir %S/../../Transforms/Inputs/cp_core.mlir --entry=core --run-backward --seqlens=16,1,40 --slots=16,8,40 --seed=5 | FileCheck %s --check-prefix=CORE
// RUN: gdn-opt --gdn-context-parallel="ranks=8 mode=chunkwise chain=scan" --gdn-generate-backward %S/../../Transforms/Inputs/cp_core_slow_decay.mlir -o %t/scan8.mlir
// RUN: gdn-run --compare %t/scan8.mlir %S/../../Transforms/Inputs/cp_core_slow_decay.mlir --entry=core --run-backward --seqlens=200 --seed=2 | FileCheck %s --check-prefix=SLOW
// A sequence that starts one row before a shard: its halo's last row is its
// first token, the two before come from its initial conv state.
// RUN: gdn-opt --gdn-context-parallel="ranks=4 mode=chunkwise" --gdn-generate-backward %S/../../Transforms/Inputs/cp_core_slow_decay.mlir -o %t/slow4.mlir
// RUN: gdn-run --compare %t/slow4.mlir %S/../../Transforms/Inputs/cp_core_slow_decay.mlir --entry=core --run-backward --seqlens=14,20,28 --slots=15,21,28 | FileCheck %s --check-prefix=SLOW
//
// CORE:         comparing @core (generated backward, 4 rank(s)) against @core (1 rank(s))
// CORE-COUNT-3: {{^result #[0-2]: .*  ok$}}
// CORE-COUNT-9: {{^gradient #[0-8]: .*  ok$}}
// A_log is a constant in the slow-decay core: 8 gradients.
// SLOW:         comparing @core (generated backward, {{[48]}} rank(s)) against @core (1 rank(s))
// SLOW-COUNT-3: {{^result #[0-2]: .*  ok$}}
// SLOW-COUNT-8: {{^gradient #[0-7]: .*  ok$}}
//
// Whole layers.
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=4" --gdn-generate-backward %S/../../Transforms/Inputs/cp_layer.mlir -o %t/layer-head4.mlir
// RUN: gdn-run --compare %t/layer-head4.mlir %S/../../Transforms/Inputs/cp_layer.mlir --entry=qwen3_next --run-backward --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-run --compare %t/layer-head4.mlir %S/../../Transforms/Inputs/cp_layer.mlir --entry=qwen3_5 --run-backward --seqlens=8,16,0,40 --seed=1 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=4 mode=chunkwise" --gdn-generate-backward=save=activations %S/../../Transforms/Inputs/cp_layer.mlir -o %t/layer-chunk4.mlir
// RUN: gdn-run --compare %t/layer-chunk4.mlir %S/../../Transforms/Inputs/cp_layer.mlir --entry=qwen3_5 --run-backward --seqlens=130,2 --seed=2 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=4 mode=chunkwise layout=zigzag" --gdn-generate-backward %S/../../Transforms/Inputs/cp_layer.mlir -o %t/layer-zigzag4.mlir
// RUN: gdn-run --compare %t/layer-zigzag4.mlir %S/../../Transforms/Inputs/cp_layer.mlir --entry=stacked --run-backward --seqlens=8,16,0,40 --seed=8 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=4 mode=chunkwise" --gdn-generate-backward=save=operands %S/../../Transforms/Inputs/cp_layer.mlir -o %t/layer-chunk4-operands.mlir
// RUN: gdn-run --compare %t/layer-chunk4-operands.mlir %S/../../Transforms/Inputs/cp_layer.mlir --entry=qwen3_next --run-backward --seqlens=130,2,0,64 --seed=3 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-opt --gdn-expand-layer --gdn-sequence-parallel="ranks=2" --gdn-generate-backward=save=operands %S/../../Transforms/Inputs/cp_layer.mlir -o %t/sp2-operands.mlir
// RUN: gdn-run --compare %t/sp2-operands.mlir %S/../../Transforms/Inputs/cp_layer.mlir --entry=qwen3_5 --run-backward --seqlens=0,1,63,64,65,7 --seed=6 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-opt --gdn-expand-layer --gdn-sequence-parallel="ranks=2" --gdn-generate-backward=save=none %S/../../Transforms/Inputs/cp_layer.mlir -o %t/sp2.mlir
// RUN: gdn-run --compare %t/sp2.mlir %S/../../Transforms/Inputs/cp_layer.mlir --entry=qwen3_next --run-backward --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-run --compare %t/sp2.mlir %S/../../Transforms/Inputs/cp_layer.mlir --entry=stacked --run-backward --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-opt --gdn-expand-layer --gdn-sequence-parallel="ranks=4" --gdn-generate-backward %S/../../Transforms/Inputs/cp_layer.mlir -o %t/sp4.mlir
// RUN: gdn-run --compare %t/sp4.mlir %S/../../Transforms/Inputs/cp_layer.mlir --entry=qwen3_5 --run-backward --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-run --compare %t/sp4.mlir %S/../../Transforms/Inputs/cp_layer.mlir --entry=stacked --run-backward --seqlens=0,1,63,64,65,7 --seed=4 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-opt --gdn-expand-layer --gdn-sequence-parallel="ranks=2" --gdn-context-parallel="ranks=4 mode=chunkwise layout=zigzag" --gdn-generate-backward %S/../../Transforms/Inputs/sp_cp_layer_slow_decay.mlir -o %t/sp2cp4.mlir
// RUN: gdn-run --compare %t/sp2cp4.mlir %S/../../Transforms/Inputs/sp_cp_layer_slow_decay.mlir --entry=layer --run-backward --seqlens=8,0,40,16,64 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-opt --gdn-sequence-parallel="ranks=2" --gdn-context-parallel="ranks=2 mode=chunkwise" --gdn-generate-backward %S/../../Transforms/Inputs/sp_final_state.mlir -o %t/sp-final.mlir
// RUN: gdn-run --compare %t/sp-final.mlir %S/../../Transforms/Inputs/sp_final_state.mlir --entry=final_state_returned --run-backward --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=LAYER
//
// LAYER:     comparing @{{[a-z0-9_]+}} (generated backward, {{[248]}} rank(s)) against @{{[a-z0-9_]+}} (1 rank(s))
// LAYER-NOT: FAIL
// LAYER:     gradient #{{[0-9]+}}: {{.*}}  ok
