// The backward program gdn-generate-backward builds, run by the interpreter
// (--run-backward: @f_forward, then @f_backward with the saved values and
// the cotangents), gives the gradients of the interpreter's own reverse
// sweep of @f within 1e-12 (--rtol's default), and @f_forward gives @f's
// results. Every op alone (the programs of the gradcheck tests: sequences
// of length 0, 1, 2, 63, 64, 65 and 130, padding, GQA, initial and final
// states, softplus on both sides of its threshold), and whole expanded
// Qwen3-Next and Qwen3.5 layers (padded, with every state, two stacked
// layers), under each save policy.
// RUN: rm -rf %t && mkdir -p %t
//
// RUN: gdn-opt --gdn-generate-backward %S/gradcheck-conv.mlir -o %t/conv.mlir
// RUN: gdn-run --compare %t/conv.mlir %t/conv.mlir --entry=conv --run-backward --seqlens=0,1,2,5,3 | FileCheck %s --check-prefix=CONV
// RUN: gdn-run --compare %t/conv.mlir %t/conv.mlir --entry=padded --run-backward --seqlens=2,0,1,7 --slots=8,0,8,8 | FileCheck %s --check-prefix=CONV
// RUN: gdn-run --compare %t/conv.mlir %t/conv.mlir --entry=plain --run-backward --seqlens=4,0,6 --seed=2 | FileCheck %s --check-prefix=OK
// CONV:         comparing @{{[a-z]+}} (generated backward, 1 rank(s)) against @{{[a-z]+}} (1 rank(s))
// CONV-COUNT-2: {{^result #[01]: .*  ok$}}
// CONV-COUNT-4: {{^gradient #[0-3]: .*  ok$}}
//
// RUN: gdn-opt --gdn-generate-backward=save=activations %S/gradcheck-delta-rule.mlir -o %t/delta.mlir
// RUN: gdn-run --compare %t/delta.mlir %t/delta.mlir --entry=delta --run-backward --seqlens=0,1,63,64,65,130 | FileCheck %s --check-prefix=OK
// RUN: gdn-run --compare %t/delta.mlir %t/delta.mlir --entry=delta --run-backward --seqlens=70,0,1 --delta-rule=chunked --seed=4 | FileCheck %s --check-prefix=OK
// RUN: gdn-run --compare %t/delta.mlir %t/delta.mlir --entry=padded --run-backward --seqlens=3,0,70,1 --slots=8,0,72,8 --seed=2 | FileCheck %s --check-prefix=OK
// RUN: gdn-run --compare %t/delta.mlir %t/delta.mlir --entry=one_head --run-backward --seqlens=2,5 | FileCheck %s --check-prefix=OK
//
// RUN: gdn-opt --gdn-generate-backward=save=none %S/gradcheck-norms-and-gates.mlir -o %t/norms.mlir
// RUN: gdn-run --compare %t/norms.mlir %t/norms.mlir --entry=l2norm --run-backward | FileCheck %s --check-prefix=OK
// RUN: gdn-run --compare %t/norms.mlir %t/norms.mlir --entry=gates --run-backward | FileCheck %s --check-prefix=OK
// RUN: gdn-run --compare %t/norms.mlir %t/norms.mlir --entry=gates_neg --run-backward --seed=5 | FileCheck %s --check-prefix=OK
// RUN: gdn-run --compare %t/norms.mlir %t/norms.mlir --entry=rmsnorm --run-backward | FileCheck %s --check-prefix=OK
// RUN: %make_npy %t/arg0.npy '<f8' 2,4 25 -30 0 18.5 60 -5 3 19.9
// RUN: %make_npy %t/arg1.npy '<f8' 2,4 -40 40 0 1 -3 3 0.5 -0.5
// RUN: gdn-run --compare %t/norms.mlir %t/norms.mlir --entry=gates_extreme --inputs=%t --run-backward | FileCheck %s --check-prefix=OK
//
// RUN: gdn-opt --gdn-generate-backward %S/gradcheck-projections.mlir -o %t/projections.mlir
// RUN: gdn-run --compare %t/projections.mlir %t/projections.mlir --entry=linear --run-backward | FileCheck %s --check-prefix=OK
// RUN: gdn-run --compare %t/projections.mlir %t/projections.mlir --entry=splits --run-backward --seed=1 | FileCheck %s --check-prefix=OK
// RUN: gdn-run --compare %t/projections.mlir %t/projections.mlir --entry=regroup --run-backward | FileCheck %s --check-prefix=OK
//
// Whole layers, expanded, under the three policies; the reference is the
// sweep of the unexpanded gdn.layer, whose rule recomputes the layer with
// the interpreter's own kernels.
// RUN: gdn-opt --gdn-expand-layer --gdn-generate-backward=save=inputs %S/gradcheck-layers.mlir -o %t/layers-inputs.mlir
// RUN: gdn-opt --gdn-expand-layer --gdn-generate-backward=save=activations %S/gradcheck-layers.mlir -o %t/layers-activations.mlir
// RUN: gdn-opt --gdn-expand-layer --gdn-generate-backward=save=none %S/gradcheck-layers.mlir -o %t/layers-none.mlir
// RUN: gdn-opt --gdn-expand-layer --gdn-generate-backward=save=operands %S/gradcheck-layers.mlir -o %t/layers-operands.mlir
// RUN: gdn-run --compare %t/layers-operands.mlir %S/gradcheck-layers.mlir --entry=qwen3_next --run-backward --seqlens=3,0,1,65,11 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-run --compare %t/layers-operands.mlir %S/gradcheck-layers.mlir --entry=qwen3_next_padded --run-backward --seqlens=3,0,1,65 --slots=8,0,8,72 --seed=1 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-run --compare %t/layers-operands.mlir %S/gradcheck-layers.mlir --entry=qwen3_5 --run-backward --seqlens=65,1,0,14 --seed=3 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-run --compare %t/layers-operands.mlir %S/gradcheck-layers.mlir --entry=with_states --run-backward --seqlens=0,1,70,5 --slots=0,8,72,8 --seed=2 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-run --compare %t/layers-inputs.mlir %S/gradcheck-layers.mlir --entry=qwen3_next --run-backward --seqlens=3,0,1,65,11 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-run --compare %t/layers-activations.mlir %S/gradcheck-layers.mlir --entry=qwen3_next --run-backward --seqlens=3,0,1,65,11 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-run --compare %t/layers-none.mlir %S/gradcheck-layers.mlir --entry=qwen3_next --run-backward --seqlens=3,0,1,65,11 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-run --compare %t/layers-inputs.mlir %S/gradcheck-layers.mlir --entry=qwen3_next_padded --run-backward --seqlens=3,0,1,65 --slots=8,0,8,72 --seed=1 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-run --compare %t/layers-inputs.mlir %S/gradcheck-layers.mlir --entry=qwen3_5 --run-backward --seqlens=65,1,0,14 --seed=3 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-run --compare %t/layers-none.mlir %S/gradcheck-layers.mlir --entry=qwen3_5 --run-backward --seqlens=70,1 --delta-rule=chunked | FileCheck %s --check-prefix=LAYER
// RUN: gdn-run --compare %t/layers-activations.mlir %S/gradcheck-layers.mlir --entry=with_states --run-backward --seqlens=0,1,70,5 --slots=0,8,72,8 --seed=2 | FileCheck %s --check-prefix=LAYER
// RUN: gdn-opt --gdn-expand-layer --gdn-generate-backward %S/../../Transforms/Inputs/cp_layer.mlir -o %t/stacked.mlir
// RUN: gdn-run --compare %t/stacked.mlir %S/../../Transforms/Inputs/cp_layer.mlir --entry=stacked --run-backward --seqlens=0,1,63,64,65,7 | FileCheck %s --check-prefix=LAYER
//
// LAYER:     comparing @{{[a-z0-9_]+}} (generated backward, 1 rank(s)) against @{{[a-z0-9_]+}} (1 rank(s))
// LAYER-NOT: FAIL
// LAYER:     gradient #{{[0-9]+}}: {{.*}}  ok
//
// OK:     comparing @{{[a-z0-9_]+}} (generated backward, 1 rank(s))
// OK-NOT: FAIL
// OK:     gradient #0: {{.*}}  ok
//
// A bf16 program (fp32 gates and states): the generated backward stores
// every cotangent in its value's type, as GPU kernels will, so it differs
// from the sweep's unrounded float64 cotangents by bf16 rounding (observed
// 3.4e-3 at most), within the bf16 tolerance for gradients (8e-3) of
// docs/spec.md (Tolerances); on 4 ranks it gives the same numbers.
// RUN: gdn-opt --gdn-generate-backward %S/../../Transforms/Inputs/cp_core_bf16.mlir -o %t/bf16.mlir
// RUN: gdn-run --compare %t/bf16.mlir %S/../../Transforms/Inputs/cp_core_bf16.mlir --entry=core --run-backward --seqlens=0,1,63,64,65,7 --rtol=8e-3 | FileCheck %s --check-prefix=BF16
// RUN: gdn-opt --gdn-context-parallel=ranks=4 --gdn-generate-backward %S/../../Transforms/Inputs/cp_core_bf16.mlir -o %t/bf16-head4.mlir
// RUN: gdn-run --compare %t/bf16-head4.mlir %S/../../Transforms/Inputs/cp_core_bf16.mlir --entry=core --run-backward --seqlens=0,1,63,64,65,7 --rtol=8e-3 | FileCheck %s --check-prefix=BF16
// BF16:         comparing @core (generated backward, {{[14]}} rank(s)) against @core (1 rank(s))
// BF16-COUNT-2: {{^result #[01]: .*  ok$}}
// BF16-COUNT-6: {{^gradient #[0-5]: .*  ok$}}
