// The backward of a layer expanded with f32-projections, after context
// parallelism: the cotangents of the f32 projection outputs travel in bf16
// through the transposed collectives (headwise: the all-to-all and the
// regroup; chunkwise: the halo's return and the conv state's chain), and
// the 2-rank program's gradients match the 1-rank program's (the
// interpreter's reverse sweep of the same storage) within the bf16
// rounding of their cotangents; the output is the same to the bit.
// RUN: rm -rf %t && mkdir -p %t
// RUN: gdn-opt --gdn-expand-layer=f32-projections=true %S/../../Integration/Inputs/layer_qwen3_next_small.mlir -o %t/p1.mlir
// RUN: gdn-opt --gdn-expand-layer=f32-projections=true --gdn-context-parallel=ranks=2 --gdn-generate-backward %S/../../Integration/Inputs/layer_qwen3_next_small.mlir -o %t/head2.mlir
// RUN: FileCheck %s --check-prefix=HEAD-IR < %t/head2.mlir
// RUN: gdn-run --compare %t/head2.mlir %t/p1.mlir --entry=layer_qwen3_next_small --run-backward --seqlens=1,63,64,65,0,131 --rtol=6e-3 | FileCheck %s
// RUN: gdn-opt --gdn-expand-layer=f32-projections=true --gdn-context-parallel="ranks=2 mode=chunkwise" --gdn-generate-backward %S/../../Integration/Inputs/layer_qwen3_next_small.mlir -o %t/chunk2.mlir
// RUN: FileCheck %s --check-prefix=CHUNK-IR < %t/chunk2.mlir
// RUN: gdn-run --compare %t/chunk2.mlir %t/p1.mlir --entry=layer_qwen3_next_small --run-backward --seqlens=1,63,64,65,0,131 --rtol=6e-3 | FileCheck %s

// HEAD-IR-LABEL: func.func @layer_qwen3_next_small_backward
// HEAD-IR: gdn_comm.all_to_all {{.*}} : tensor<?x512xbf16> -> tensor<?x1024xbf16, #gdn.seq<contiguous, ranks = 2>>
// CHUNK-IR-LABEL: func.func @layer_qwen3_next_small_backward
// CHUNK-IR: gdn_comm.continue_conv_state_grad {{.*}} -> tensor<3x1024xbf16>
// CHUNK-IR: gdn_comm.return_halo {{.*}} : tensor<3x1024xbf16>, tensor<?x1024xbf16, #gdn.seq<contiguous, ranks = 2>>

// CHECK: (generated backward, 2 rank(s))
// CHECK: result #0: {{.*}}rel_rms = 0.000e+00 {{.*}} ok
// CHECK-COUNT-8: gradient #{{[0-9]}}: {{.*}} ok
