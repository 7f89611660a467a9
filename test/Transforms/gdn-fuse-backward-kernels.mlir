// gdn-fuse on backward programs: the VJPs of a prologue (l2norm_grad of q
// and k, merge_qkv, causal_conv1d_grad, gates_grad) become one
// gdn_kernel.prologue_grad, the prologue the backward recomputes becomes a
// gdn_kernel.prologue, and gdn.gated_rmsnorm_grad becomes
// gdn_kernel.gated_rmsnorm_grad. The fused program computes the same
// gradients: in f32 the two differ only by the roundings to storage the
// unfused ops make between them (below 1e-6); in bf16 those roundings
// (six between the delta rule's gradient and the conv's) add up to 4-5e-3,
// within the gradient tolerance of docs/spec.md (Tolerances), 8e-3.
// RUN: gdn-opt %s --gdn-generate-backward -o %t.unfused.mlir
// RUN: gdn-opt %t.unfused.mlir --gdn-fuse -o %t.fused.mlir
// RUN: FileCheck %s < %t.fused.mlir
// RUN: gdn-run --compare %t.unfused.mlir %t.fused.mlir --entry=f32_core_backward --rtol=1e-6 --seqlens=0,1,63,64,65 --slots=8,8,64,72,72 | FileCheck %s --check-prefix=F32
// RUN: gdn-run --compare %t.unfused.mlir %t.fused.mlir --entry=bf16_core_backward --rtol=8e-3 --seqlens=5,70,1 | FileCheck %s --check-prefix=BF16
//
// Under save=operands the delta rule's gradient reads the saved q, k, v, g
// and beta: nothing recomputes the prologue, and its gradient ops still
// become one prologue_grad, matched from the norms' VJPs, which read the
// split of the conv the backward recomputes for them (the kernel recomputes
// it inside, so that conv goes too).
// RUN: gdn-opt %s --gdn-generate-backward=save=operands -o %t.operands.mlir
// RUN: gdn-opt %t.operands.mlir --gdn-fuse --canonicalize -o %t.operands-fused.mlir
// RUN: FileCheck %s --check-prefix=OPERANDS < %t.operands-fused.mlir
// RUN: gdn-run --compare %t.operands.mlir %t.operands-fused.mlir --entry=f32_core_backward --rtol=1e-6 --seqlens=0,1,63,64,65 --slots=8,8,64,72,72 | FileCheck %s --check-prefix=F32
// RUN: gdn-run --compare %t.operands.mlir %t.operands-fused.mlir --entry=bf16_core_backward --rtol=8e-3 --seqlens=5,70,1 | FileCheck %s --check-prefix=BF16

// CHECK-LABEL: func.func @f32_core_backward(
// CHECK: %x_grad, %z_grad, %weight_grad = gdn_kernel.gated_rmsnorm_grad %arg13, %arg12, %arg8, %arg9
// CHECK-SAME: blocks = 528 : i64, eps = 9.9999999999999995E-7 : f64, threads = 256 : i64
// CHECK: %[[P:.*]] = gdn.packing
// CHECK: %q, %k, %v, %g, %beta, %{{.*}} = gdn_kernel.prologue %arg0, %arg1, %arg4, %arg5, %arg6, %arg7, %[[P]] bias(%arg2) initial_state(%arg3)
// CHECK: %q_grad, %k_grad, %v_grad, %g_grad, %beta_grad = gdn.delta_rule_grad %x_grad, %q, %k, %v, %g, %beta, %[[P]]
// CHECK: %mixed_qkv_grad, %conv_weight_grad, %a_grad, %b_grad, %a_log_grad, %dt_bias_grad, %optional_grads:2 = gdn_kernel.prologue_grad %arg0, %arg1, %arg4, %arg5, %arg6, %arg7, %[[P]] bias(%arg2) initial_state(%arg3)
// CHECK-SAME: cotangents(%q_grad, %k_grad, %v_grad, %g_grad, %beta_grad, final_state %arg14)
// CHECK-SAME: row_blocks = 396 : i64, rows_in_flight = 6 : i64, threads = 128 : i64, value_heads = 4 : i64, vector_bytes = 8 : i64
// CHECK-NOT: gdn.l2norm_grad
// CHECK-NOT: gdn.merge_qkv
// CHECK-NOT: gdn.causal_conv1d_grad
// CHECK-NOT: gdn.gates_grad
// CHECK: return %mixed_qkv_grad, %conv_weight_grad, %optional_grads#0, %optional_grads#1, %a_grad, %b_grad, %a_log_grad, %dt_bias_grad, %z_grad, %weight_grad
// CHECK-LABEL: func.func @bf16_core_backward(
// CHECK: gdn_kernel.prologue %
// CHECK: gdn_kernel.delta_rule_grad
// CHECK: gdn_kernel.prologue_grad
// CHECK-NOT: gdn.causal_conv1d_grad
// The conv's output is also returned: the prologue cannot fuse, so neither
// does its gradient.
// CHECK-LABEL: func.func @conv_escapes_backward(
// CHECK-NOT: gdn_kernel.prologue
// CHECK: gdn.causal_conv1d_grad

// OPERANDS-LABEL: func.func @f32_core_backward(
// OPERANDS-NOT: gdn_kernel.prologue %
// OPERANDS-NOT: gdn.causal_conv1d
// OPERANDS: delta_rule_grad %x_grad
// OPERANDS-NOT: gdn_kernel.prologue %
// OPERANDS: gdn_kernel.prologue_grad
// OPERANDS-NOT: gdn.causal_conv1d
// OPERANDS-NOT: gdn.l2norm_grad
// OPERANDS-NOT: gdn.gates_grad
// OPERANDS: return
// OPERANDS-LABEL: func.func @bf16_core_backward(
// OPERANDS-NOT: gdn_kernel.prologue %
// OPERANDS: gdn_kernel.prologue_grad
// OPERANDS-NOT: gdn.causal_conv1d_grad
// OPERANDS-LABEL: func.func @conv_escapes_backward(
// OPERANDS: gdn.causal_conv1d_grad

// F32-COUNT-10: {{.*}}  ok
// BF16-COUNT-6: {{.*}}  ok

// A layer core in f32 with conv bias, initial and final conv states,
// padding and the epilogue.
func.func @f32_core(%mixed: tensor<?x48xf32>, %conv: tensor<48x4xf32>,
                    %bias: tensor<48xf32>, %h0: tensor<?x48x3xf32>,
                    %a: tensor<?x4xf32>, %b: tensor<?x4xf32>,
                    %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
                    %z: tensor<?x4x4xf32>, %norm: tensor<4xf32>,
                    %cu: tensor<?xi32>, %cu_padded: tensor<?xi32>)
    -> (tensor<?x4x4xf32>, tensor<?x48x3xf32>) {
  %p = gdn.packing %cu padded %cu_padded
      : tensor<?xi32>, tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
  %c, %h = gdn.causal_conv1d %mixed, %conv, %p bias(%bias) initial_state(%h0)
      {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x48xf32>, tensor<48x4xf32>, !gdn.packing<seqs = ?, tokens = ?, padded>,
         tensor<48xf32>, tensor<?x48x3xf32>) -> (tensor<?x48xf32>, tensor<?x48x3xf32>)
  %q, %k, %v = gdn.split_qkv %c : tensor<?x48xf32>
      -> tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x4x4xf32>
  %qn = gdn.l2norm %q : tensor<?x2x8xf32>
  %kn = gdn.l2norm %k : tensor<?x2x8xf32>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<?x4xf32>, tensor<?x4xf32>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x4x4xf32>, tensor<?x4xf32>,
         tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?, padded>)
      -> (tensor<?x4x4xf32>, tensor<?x4x8x4xf32>)
  %y = gdn.gated_rmsnorm %o, %z, %norm
      : (tensor<?x4x4xf32>, tensor<?x4x4xf32>, tensor<4xf32>) -> tensor<?x4x4xf32>
  return %y, %h : tensor<?x4x4xf32>, tensor<?x48x3xf32>
}

// The core in bf16 with the model's head dims (the kernels' own types).
func.func @bf16_core(%mixed: tensor<?x512xbf16>, %conv: tensor<512x4xbf16>,
                     %a: tensor<?x2xbf16>, %b: tensor<?x2xbf16>,
                     %a_log: tensor<2xf32>, %dt_bias: tensor<2xf32>,
                     %cu: tensor<?xi32>) -> tensor<?x2x128xbf16> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x512xbf16>, tensor<512x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>)
      -> tensor<?x512xbf16>
  %q, %k, %v = gdn.split_qkv %c : tensor<?x512xbf16>
      -> tensor<?x1x128xbf16>, tensor<?x1x128xbf16>, tensor<?x2x128xbf16>
  %qn = gdn.l2norm %q : tensor<?x1x128xbf16>
  %kn = gdn.l2norm %k : tensor<?x1x128xbf16>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xf32>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<?x1x128xbf16>, tensor<?x1x128xbf16>, tensor<?x2x128xbf16>, tensor<?x2xf32>,
         tensor<?x2xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x128xbf16>, tensor<?x2x128x128xf32>)
  return %o : tensor<?x2x128xbf16>
}

func.func @conv_escapes(%mixed: tensor<?x512xbf16>, %conv: tensor<512x4xbf16>,
                        %a: tensor<?x2xbf16>, %b: tensor<?x2xbf16>,
                        %a_log: tensor<2xf32>, %dt_bias: tensor<2xf32>,
                        %cu: tensor<?xi32>) -> (tensor<?x2x128xbf16>, tensor<?x512xbf16>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x512xbf16>, tensor<512x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>)
      -> tensor<?x512xbf16>
  %q, %k, %v = gdn.split_qkv %c : tensor<?x512xbf16>
      -> tensor<?x1x128xbf16>, tensor<?x1x128xbf16>, tensor<?x2x128xbf16>
  %qn = gdn.l2norm %q : tensor<?x1x128xbf16>
  %kn = gdn.l2norm %k : tensor<?x1x128xbf16>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xf32>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<?x1x128xbf16>, tensor<?x1x128xbf16>, tensor<?x2x128xbf16>, tensor<?x2xf32>,
         tensor<?x2xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x128xbf16>, tensor<?x2x128x128xf32>)
  return %o, %c : tensor<?x2x128xbf16>, tensor<?x512xbf16>
}
