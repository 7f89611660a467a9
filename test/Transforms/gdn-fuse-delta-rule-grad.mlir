// The backward of a delta rule through the compiler: gdn-generate-backward
// writes gdn.delta_rule_grad into @core_backward and gdn-fuse (in
// --gdn-pipeline) lowers it to the backward kernels' op, with the
// specialization as attributes. The lowered program computes the same
// gradients as the unlowered one (gdn-run runs both: the same values). Rules the kernels cannot take stay as they are.
// RUN: gdn-opt %s --gdn-generate-backward --gdn-pipeline | FileCheck %s
// RUN: gdn-opt %s --gdn-generate-backward -o %t.unfused.mlir
// RUN: gdn-opt %t.unfused.mlir --gdn-pipeline -o %t.fused.mlir
// RUN: gdn-run --compare %t.unfused.mlir %t.fused.mlir --entry core_backward --seqlens=1,64,0,65,130 --seed 3 | FileCheck %s --check-prefix=EQUAL

// CHECK-LABEL: func.func @core_backward(
// CHECK: %[[P:.*]] = gdn.packing
// CHECK: gdn_kernel.delta_rule_grad %{{.*}}, %arg0, %arg1, %arg2, %arg3, %arg4, %[[P]] initial_state(%arg5) final_state_grad(%arg8)
// CHECK-SAME: head_dim_k = 128 : i64, head_dim_v = 128 : i64, key_heads = 16 : i64, scale = 0.088388347648318{{[0-9]*}} : f64, scan = "wgmma", split_target_blocks = 132 : i64, value_heads = 32 : i64, warmup_bits = 24 : i64
// CHECK-SAME: -> (tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x128xbf16>, tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32x128x128xf32>)
// CHECK-NOT: gdn.delta_rule_grad
// CHECK-LABEL: func.func @f32_backward(
// CHECK: gdn.delta_rule_grad
// CHECK-NOT: gdn_kernel.delta_rule_grad

// EQUAL: comparing @core_backward (1 rank(s)) against @core_backward (1 rank(s))
// EQUAL-NEXT: result #0: 260x16x128xbf16  rel_rms = 0.000e+00  max_abs = 0.000e+00  ok
// EQUAL: result #5: 5x32x128x128xf32  rel_rms = 0.000e+00  max_abs = 0.000e+00  ok


func.func @core(%q: tensor<?x16x128xbf16>, %k: tensor<?x16x128xbf16>, %v: tensor<?x32x128xbf16>,
                %g: tensor<?x32xf32>, %beta: tensor<?x32xf32>, %s0: tensor<?x32x128x128xf32>,
                %cu: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32x128x128xf32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta, %p initial_state(%s0)
      : (tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x128xbf16>,
         tensor<?x32xf32>, tensor<?x32xf32>, !gdn.packing<seqs = ?, tokens = ?>,
         tensor<?x32x128x128xf32>)
      -> (tensor<?x32x128xbf16>, tensor<?x32x128x128xf32>)
  return %o, %s : tensor<?x32x128xbf16>, tensor<?x32x128x128xf32>
}

// f32 activations: the kernels take bf16 only, so the backward stays a
// gdn.delta_rule_grad.
func.func @f32(%q: tensor<?x1x64xf32>, %k: tensor<?x1x64xf32>, %v: tensor<?x2x64xf32>,
               %g: tensor<?x2xf32>, %beta: tensor<?x2xf32>, %cu: tensor<?xi32>)
    -> tensor<?x2x64xf32> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<?x2x64xf32>,
         tensor<?x2xf32>, tensor<?x2xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xf32>, tensor<?x2x64x64xf32>)
  return %o : tensor<?x2x64xf32>
}
