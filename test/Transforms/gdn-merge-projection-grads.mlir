// gdn-merge-projection-grads: the backward's gdn.linear_grad ops of one x
// (after gdn-split-projections, one per part of Qwen3-Next's two fused
// projections) whose cotangents a kernel writes (the prologue's and the
// gated RMSNorm's backward) become one linear_grad of the cotangents
// stacked as columns and the weights stacked as rows. The weight
// gradients are bit for bit the same; the x gradient is the same sum in
// another order (f32: rounding, 5e-8; bf16: one rounding instead of four).
// RUN: rm -rf %t && mkdir -p %t
// RUN: gdn-opt --gdn-expand-layer=f32-projections=true --gdn-generate-backward="functions=bf16_layer,f32_layer" %s | gdn-opt --gdn-split-projections --gdn-fuse -o %t/fused.mlir
// RUN: gdn-opt --gdn-merge-projection-grads %t/fused.mlir -o %t/merged.mlir
// RUN: FileCheck %s < %t/merged.mlir
// RUN: gdn-run --compare %t/fused.mlir %t/merged.mlir --entry=f32_layer_backward --seqlens=5,70,0,1 --seed=3 --rtol=1e-7 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %t/fused.mlir %t/merged.mlir --entry=bf16_layer_backward --seqlens=5,70,0,1 --seed=3 --rtol=8e-3 | FileCheck %s --check-prefix=SAME
// SAME-NOT: FAIL
// SAME: result #0: {{.*}} ok

// The b and a rows of the regrouped W_ba, then all rows of the regrouped
// W_qkvz (mixed and z: consecutive rows of one tensor stack as a whole);
// the cotangents in the same order, z's [T, HV, V] flattened to [T, HV V].
// CHECK-LABEL: func.func @bf16_layer_backward(
// CHECK:         %{{[^,]+}}, %[[DZ:[^,]+]], %{{.+}} = gdn_kernel.gated_rmsnorm_grad
// CHECK:         %[[DMIXED:[^,]+]], %{{[^,]+}}, %[[DA:[^,]+]], %[[DB:[^,]+]], %{{.+}} = gdn_kernel.prologue_grad
// CHECK:         %[[WBA:.+]] = gdn.regroup_sections %arg3 {{.*}}inverse = true
// CHECK:         %[[WQKVZ:.+]] = gdn.regroup_sections %arg2 {{.*}}inverse = true
// CHECK:         %[[W1:.+]] = tensor.insert_slice %[[WBA]] into %{{.+}}[0, 0] [8, 256] [1, 1] : tensor<8x256xbf16> into tensor<1544x256xbf16>
// CHECK:         %[[W:.+]] = tensor.insert_slice %[[WQKVZ]] into %[[W1]][8, 0] [1536, 256] [1, 1]
// CHECK:         %[[T:.+]] = tensor.dim %arg0, %c0
// CHECK:         %[[S0:.+]] = tensor.splat %{{.+}}[%[[T]]] : tensor<?x1544xbf16>
// CHECK:         %[[S1:.+]] = tensor.insert_slice %[[DB]] into %[[S0]][0, 0] [%[[T]], 4] [1, 1]
// CHECK:         %[[S2:.+]] = tensor.insert_slice %[[DA]] into %[[S1]][0, 4] [%[[T]], 4] [1, 1]
// CHECK:         %[[S3:.+]] = tensor.insert_slice %[[DMIXED]] into %[[S2]][0, 8] [%[[T]], 1024] [1, 1]
// CHECK:         %[[FLAT:.+]] = tensor.collapse_shape %[[DZ]] {{\[}}[0], [1, 2]] : tensor<?x4x128xbf16> into tensor<?x512xbf16>
// CHECK:         %[[DY:.+]] = tensor.insert_slice %[[FLAT]] into %[[S3]][0, 1032] [%[[T]], 512] [1, 1]
// CHECK:         %[[DX:[^,]+]], %[[DW:.+]] = gdn.linear_grad %[[DY]], %arg0, %[[W]] : (tensor<?x1544xbf16>, tensor<?x256xbf16>, tensor<1544x256xbf16>)
// The qkvz weight gradient, stacked back from its parts' rows, is rows 8
// .. 1543 of the merged one; the ba gradient rows 0 .. 7.
// CHECK:         %[[DWQKVZ:.+]] = tensor.extract_slice %[[DW]][8, 0] [1536, 256] [1, 1]
// CHECK:         gdn.regroup_sections %[[DWQKVZ]] {dim = 0 : i64, groups = 2 : i64, section_sizes = array<i64: 256, 256, 512, 512>}
// CHECK:         %[[DWBA:.+]] = tensor.extract_slice %[[DW]][0, 0] [8, 256] [1, 1]
// CHECK:         gdn.regroup_sections %[[DWBA]] {dim = 0 : i64, groups = 2 : i64, section_sizes = array<i64: 4, 4>}
// CHECK:         return %[[DX]],
// CHECK-LABEL: func.func @f32_layer_backward(
// CHECK-COUNT-1: gdn.linear_grad %{{.+}}, %arg0,
// CHECK-NOT:     gdn.linear_grad %{{.+}}, %arg0,
// CHECK:         return

// A bf16 layer with f32 projection outputs (as gdn_torch compiles it), and
// the same layer in f32.
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

func.func @f32_layer(%x: tensor<?x256xf32>, %cu: tensor<?xi32>,
    %w_qkvz: tensor<1536x256xf32>, %w_ba: tensor<8x256xf32>, %conv: tensor<1024x4xf32>,
    %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %norm: tensor<128xf32>,
    %w_out: tensor<256x512xf32>) -> tensor<?x256xf32> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %y = gdn.layer %x, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64,
       conv_width = 4 : i64}
      : (tensor<?x256xf32>, !gdn.packing<seqs = ?, tokens = ?>, tensor<1536x256xf32>,
         tensor<8x256xf32>, tensor<1024x4xf32>, tensor<4xf32>, tensor<4xf32>,
         tensor<128xf32>, tensor<256x512xf32>) -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// Cotangents that no kernel writes with a row stride (here: arguments) keep
// their linear_grads.
// RUN: gdn-opt --gdn-merge-projection-grads %s | FileCheck %s --check-prefix=KEPT
// KEPT-LABEL: func.func @not_stackable(
// KEPT-COUNT-2: gdn.linear_grad
// KEPT:         arith.addf
func.func @not_stackable(%dy1: tensor<?x8xf32>, %dy2: tensor<?x4xf32>, %x: tensor<?x16xf32>,
    %w1: tensor<8x16xf32>, %w2: tensor<4x16xf32>) -> (tensor<?x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>) {
  %dx1, %dw1 = gdn.linear_grad %dy1, %x, %w1 : (tensor<?x8xf32>, tensor<?x16xf32>, tensor<8x16xf32>) -> (tensor<?x16xf32>, tensor<8x16xf32>)
  %dx2, %dw2 = gdn.linear_grad %dy2, %x, %w2 : (tensor<?x4xf32>, tensor<?x16xf32>, tensor<4x16xf32>) -> (tensor<?x16xf32>, tensor<4x16xf32>)
  %dx = arith.addf %dx1, %dx2 : tensor<?x16xf32>
  return %dx, %dw1, %dw2 : tensor<?x16xf32>, tensor<8x16xf32>, tensor<4x16xf32>
}

// Two gated RMSNorm backwards' z gradients, [T, 2, 8] each, stack as
// flattened columns of one [T, 32] cotangent; the merged function computes
// the same gradients.
// RUN: gdn-opt --gdn-merge-projection-grads %s -o %t/hand.mlir
// RUN: FileCheck %s --check-prefix=HAND < %t/hand.mlir
// RUN: gdn-run --compare %s %t/hand.mlir --entry=independent --seqlens=5,12 --seed=2 --rtol=8e-3 | FileCheck %s --check-prefix=SAME
// HAND-LABEL: func.func @independent(
// HAND-COUNT-2: tensor.collapse_shape
// HAND:         gdn.linear_grad %{{.+}}, %arg0, %{{.+}} : (tensor<?x32xbf16>, tensor<?x16xbf16>, tensor<32x16xbf16>)
// HAND-NOT:     gdn.linear_grad
// HAND-LABEL: func.func @dependent(
// A member that reads another member's weight gradient (here through a
// projection) cannot join it: the merged op would need its own result.
// HAND-COUNT-2: gdn.linear_grad %{{.+}}, %arg0, %{{.+}} : (tensor<?x2x8xbf16>
// HAND:         arith.addf

func.func @independent(%x: tensor<?x16xbf16>, %dy1: tensor<?x2x8xbf16>, %dy2: tensor<?x2x8xbf16>,
    %o: tensor<?x2x8xbf16>, %z: tensor<?x2x8xbf16>, %wn: tensor<8xbf16>,
    %w1: tensor<16x16xbf16>, %w2: tensor<16x16xbf16>) -> (tensor<?x16xbf16>, tensor<16x16xbf16>, tensor<16x16xbf16>) {
  %a:3 = gdn_kernel.gated_rmsnorm_grad %dy1, %o, %z, %wn {eps = 1.0e-06 : f64, threads = 256 : i64, blocks = 8 : i64}
      : (tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<8xbf16>) -> (tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<8xbf16>)
  %dx1, %dw1 = gdn.linear_grad %a#1, %x, %w1 : (tensor<?x2x8xbf16>, tensor<?x16xbf16>, tensor<16x16xbf16>) -> (tensor<?x16xbf16>, tensor<16x16xbf16>)
  %b:3 = gdn_kernel.gated_rmsnorm_grad %dy2, %o, %z, %wn {eps = 1.0e-06 : f64, threads = 256 : i64, blocks = 8 : i64}
      : (tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<8xbf16>) -> (tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<8xbf16>)
  %dx2, %dw2 = gdn.linear_grad %b#1, %x, %w2 : (tensor<?x2x8xbf16>, tensor<?x16xbf16>, tensor<16x16xbf16>) -> (tensor<?x16xbf16>, tensor<16x16xbf16>)
  %dx = arith.addf %dx1, %dx2 : tensor<?x16xbf16>
  return %dx, %dw1, %dw2 : tensor<?x16xbf16>, tensor<16x16xbf16>, tensor<16x16xbf16>
}
func.func @dependent(%x: tensor<?x16xbf16>, %dy1: tensor<?x2x8xbf16>,
    %o: tensor<?x2x8xbf16>, %z: tensor<?x2x8xbf16>, %wn: tensor<8xbf16>,
    %w1: tensor<16x16xbf16>, %w2: tensor<16x16xbf16>) -> (tensor<?x16xbf16>, tensor<16x16xbf16>) {
  %a:3 = gdn_kernel.gated_rmsnorm_grad %dy1, %o, %z, %wn {eps = 1.0e-06 : f64, threads = 256 : i64, blocks = 8 : i64}
      : (tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<8xbf16>) -> (tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<8xbf16>)
  %dx1, %dw1 = gdn.linear_grad %a#1, %x, %w1 : (tensor<?x2x8xbf16>, tensor<?x16xbf16>, tensor<16x16xbf16>) -> (tensor<?x16xbf16>, tensor<16x16xbf16>)
  %y2 = gdn.linear %x, %dw1 : (tensor<?x16xbf16>, tensor<16x16xbf16>) -> tensor<?x2x8xbf16>
  %b:3 = gdn_kernel.gated_rmsnorm_grad %y2, %o, %z, %wn {eps = 1.0e-06 : f64, threads = 256 : i64, blocks = 8 : i64}
      : (tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<8xbf16>) -> (tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<8xbf16>)
  %dx2, %dw2 = gdn.linear_grad %b#1, %x, %w2 : (tensor<?x2x8xbf16>, tensor<?x16xbf16>, tensor<16x16xbf16>) -> (tensor<?x16xbf16>, tensor<16x16xbf16>)
  %dx = arith.addf %dx1, %dx2 : tensor<?x16xbf16>
  return %dx, %dw2 : tensor<?x16xbf16>, tensor<16x16xbf16>
}
