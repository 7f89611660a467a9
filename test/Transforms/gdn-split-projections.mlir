// gdn-split-projections: Qwen3-Next's split_qkvz of the fused projections
// becomes one projection per part by the weights' rows regrouped per key
// head, and the backward's merge_qkvz feeding the projections' linear_grad
// one linear_grad per part. The function computes the same values: exactly
// in f64 (the x gradient's sum reassociates, 1e-15), and in bf16 within
// the extra roundings of the x gradient's two more terms.
// RUN: rm -rf %t && mkdir -p %t
// RUN: gdn-opt --gdn-expand-layer --gdn-generate-backward="save=inputs functions=qwen3_next" %S/Inputs/cp_layer.mlir -o %t/train.mlir
// RUN: gdn-opt --gdn-split-projections %t/train.mlir -o %t/split.mlir
// RUN: FileCheck %s < %t/split.mlir --implicit-check-not=gdn.split_qkvz --implicit-check-not=gdn.merge_qkvz
// RUN: gdn-run --compare %t/train.mlir %t/split.mlir --entry=qwen3_next --seqlens=8,16,0,40 --seed=4 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %t/train.mlir %t/split.mlir --entry=qwen3_next_forward --seqlens=8,16,0,40 --seed=4 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %t/train.mlir %t/split.mlir --entry=qwen3_next_backward --seqlens=8,16,0,40 --seed=4 | FileCheck %s --check-prefix=SAME
// After sequence or context parallelism (the projections run on every
// rank's tokens), the same:
// RUN: gdn-opt --gdn-expand-layer --gdn-sequence-parallel=ranks=2 --gdn-generate-backward="save=inputs functions=qwen3_next" %S/Inputs/cp_layer.mlir -o %t/sp.mlir
// RUN: gdn-opt --gdn-split-projections %t/sp.mlir -o %t/sp-split.mlir
// RUN: FileCheck %s --check-prefix=FOLDED < %t/sp-split.mlir
// RUN: gdn-run --compare %t/sp.mlir %t/sp-split.mlir --entry=qwen3_next_backward --seqlens=8,16,0,40 --seed=4 | FileCheck %s --check-prefix=SAME
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=4 mode=chunkwise" --gdn-generate-backward="save=inputs functions=qwen3_next" %S/Inputs/cp_layer.mlir -o %t/cp.mlir
// RUN: gdn-opt --gdn-split-projections %t/cp.mlir -o %t/cp-split.mlir
// RUN: FileCheck %s --check-prefix=FOLDED < %t/cp-split.mlir
// RUN: gdn-run --compare %t/cp.mlir %t/cp-split.mlir --entry=qwen3_next_backward --seqlens=8,16,0,40 --seed=4 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %t/cp.mlir %t/cp-split.mlir --entry=qwen3_next --seqlens=8,16,0,40 --seed=4 | FileCheck %s --check-prefix=SAME
// FOLDED-NOT: gdn.split_qkvz
// FOLDED-NOT: gdn.merge_qkvz
// FOLDED: func.func @qwen3_next_backward
// RUN: gdn-opt --gdn-expand-layer=f32-projections=true --gdn-generate-backward %s -o %t/bf16.mlir
// RUN: gdn-opt --gdn-split-projections %t/bf16.mlir -o %t/bf16-split.mlir
// RUN: gdn-run --compare %t/bf16.mlir %t/bf16-split.mlir --entry=bf16_layer_forward --seqlens=5,70,0,1 --seed=3 --rtol=0 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %t/bf16.mlir %t/bf16-split.mlir --entry=bf16_layer_backward --seqlens=5,70,0,1 --seed=3 --rtol=8e-3 | FileCheck %s --check-prefix=SAME

// The forward: W_qkvz's rows [q_h | k_h | v_h | z_h] per key head regroup
// into [q | k | v | z], W_ba's [b_h | a_h] into [b | a]; each part is a
// projection by a block of rows.
// CHECK-LABEL: func.func @qwen3_next(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<?x8xf64>, %{{[^:]+}}: tensor<?xi32>, %[[WQKVZ:[^:]+]]: tensor<48x8xf64>, %[[WBA:[^:]+]]: tensor<16x8xf64>
// CHECK:         %[[WG:.+]] = gdn.regroup_sections %[[WQKVZ]] {dim = 0 : i64, groups = 4 : i64, inverse = true, section_sizes = array<i64: 8, 8, 16, 16>}
// CHECK:         %[[WBAG:.+]] = gdn.regroup_sections %[[WBA]] {dim = 0 : i64, groups = 4 : i64, inverse = true, section_sizes = array<i64: 8, 8>}
// CHECK:         %[[WM:.+]] = tensor.extract_slice %[[WG]][0, 0] [32, 8] [1, 1]
// CHECK:         %[[MIXED:.+]] = gdn.linear %[[X]], %[[WM]] {{.*}} -> tensor<?x32xf64>
// CHECK:         %[[WZ:.+]] = tensor.extract_slice %[[WG]][32, 0] [16, 8] [1, 1]
// CHECK:         gdn.linear %[[X]], %[[WZ]] {{.*}} -> tensor<?x8x2xf64>
// CHECK:         %[[WB:.+]] = tensor.extract_slice %[[WBAG]][0, 0] [8, 8] [1, 1]
// CHECK:         gdn.linear %[[X]], %[[WB]] {{.*}} -> tensor<?x8xf64>
// CHECK:         %[[WA:.+]] = tensor.extract_slice %[[WBAG]][8, 0] [8, 8] [1, 1]
// CHECK:         gdn.linear %[[X]], %[[WA]] {{.*}} -> tensor<?x8xf64>
// CHECK:         gdn.causal_conv1d %[[MIXED]]
// CHECK-LABEL: func.func @qwen3_next_forward(
// CHECK-COUNT-4: gdn.linear %arg0
// The backward: one linear_grad per part, the x gradients summed (folded
// into the GEMMs by the CUDA lowering), the weight gradients stacked and
// regrouped back into the interleaved rows.
// CHECK-LABEL: func.func @qwen3_next_backward(
// CHECK:         %[[DXB:[^,]+]], %[[DWB:.+]] = gdn.linear_grad %{{.+}}, %arg0, %{{.+}} : (tensor<?x8xf64>, tensor<?x8xf64>, tensor<8x8xf64>)
// CHECK:         %[[DXA:[^,]+]], %[[DWA:.+]] = gdn.linear_grad %{{.+}}, %arg0, %{{.+}} : (tensor<?x8xf64>, tensor<?x8xf64>, tensor<8x8xf64>)
// CHECK:         arith.addf %[[DXB]], %[[DXA]]
// CHECK:         tensor.insert_slice %[[DWB]] into %{{.+}}[0, 0] [8, 8] [1, 1]
// CHECK:         tensor.insert_slice %[[DWA]] into %{{.+}}[8, 0] [8, 8] [1, 1]
// CHECK:         gdn.regroup_sections %{{.+}} {dim = 0 : i64, groups = 4 : i64, section_sizes = array<i64: 8, 8>}
// CHECK:         %[[DXM:[^,]+]], %{{.+}} = gdn.linear_grad %{{.+}}, %arg0, %{{.+}} : (tensor<?x32xf64>, tensor<?x8xf64>, tensor<32x8xf64>)
// CHECK:         %[[DXZ:[^,]+]], %{{.+}} = gdn.linear_grad %{{.+}}, %arg0, %{{.+}} : (tensor<?x8x2xf64>, tensor<?x8xf64>, tensor<16x8xf64>)
// CHECK:         arith.addf %[[DXM]], %[[DXZ]]
// CHECK:         gdn.regroup_sections %{{.+}} {dim = 0 : i64, groups = 4 : i64, section_sizes = array<i64: 8, 8, 16, 16>}
// CHECK:         return

// SAME-NOT: FAIL

// A bf16 layer with f32 projection outputs (as gdn_torch compiles it).
func.func @bf16_layer(%x: tensor<?x256xbf16>, %cu: tensor<?xi32>,
    %w_qkvz: tensor<1536x256xbf16>, %w_ba: tensor<8x256xbf16>, %conv: tensor<1024x4xbf16>,
    %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %norm: tensor<128xbf16>,
    %w_out: tensor<256x512xbf16>) -> tensor<?x256xbf16> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %y = gdn.layer %x, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64,
       conv_width = 4 : i64}
      : (tensor<?x256xbf16>, !gdn.packing<seqs = ?, tokens = ?>, tensor<1536x256xbf16>,
         tensor<8x256xbf16>, tensor<1024x4xbf16>, tensor<4xf32>, tensor<4xf32>,
         tensor<128xbf16>, tensor<256x512xbf16>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}

// A projection with another user than the split (here: returned) keeps its
// split: folding would compute the projection twice.
// RUN: gdn-opt --gdn-split-projections %s | FileCheck %s --check-prefix=KEPT
// KEPT-LABEL: func.func @qkvz_returned(
// KEPT:         %[[QKVZ:.+]] = gdn.linear
// KEPT:         gdn.split_qkvz %[[QKVZ]]
// KEPT:         return %[[QKVZ]]
func.func @qkvz_returned(%x: tensor<?x16xf32>, %w_qkvz: tensor<48x16xf32>,
    %w_ba: tensor<16x16xf32>) -> (tensor<?x48xf32>, tensor<?x32xf32>) {
  %qkvz = gdn.linear %x, %w_qkvz : (tensor<?x16xf32>, tensor<48x16xf32>) -> tensor<?x48xf32>
  %ba = gdn.linear %x, %w_ba : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 4 : i64, head_dim_k = 2 : i64}
      : (tensor<?x48xf32>, tensor<?x16xf32>) -> (tensor<?x32xf32>, tensor<?x8x2xf32>, tensor<?x8xf32>, tensor<?x8xf32>)
  return %qkvz, %mixed : tensor<?x48xf32>, tensor<?x32xf32>
}
