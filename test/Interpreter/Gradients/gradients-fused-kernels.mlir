// The gdn_kernel ops have the gradients of the gdn ops they fuse: the
// interpreter differentiates gdn_kernel.prologue by composing the VJPs of
// the conv, split, L2 norms and gates, and gdn_kernel.delta_rule and
// gdn_kernel.gated_rmsnorm by the rules of their gdn counterparts, so the
// gradients of a gdn-fuse'd program match its source's. The kernel ops take
// f32/bf16 only, so finite differences cannot check them directly; their
// gdn counterparts are checked in float64 by the gradcheck tests.
// RUN: gdn-opt --gdn-fuse %s -o %t.mlir
// RUN: FileCheck %s --check-prefix=FUSED < %t.mlir
//
// f32: the fused prologue keeps the conv output in float64 where the source
// rounds it to f32 before the L2 norm, so the two differ by that rounding.
// RUN: gdn-run --compare %s %t.mlir --gradients --entry=f32_layer --rtol=1e-5 --seqlens=0,1,63,64,65 --slots=8,8,64,72,72 | FileCheck %s --check-prefix=F32
//
// bf16 delta rule: both programs compute the same recurrence on the same
// bf16 operands, so outputs and gradients are bit-identical.
// RUN: gdn-run --compare %s %t.mlir --gradients --entry=bf16_delta_rule --seqlens=3,0,70,1 | FileCheck %s --check-prefix=BF16

// FUSED-LABEL: func.func @f32_layer
// FUSED:       gdn_kernel.prologue
// FUSED:       gdn_kernel.gated_rmsnorm
// FUSED-LABEL: func.func @bf16_delta_rule
// FUSED:       gdn_kernel.delta_rule

// F32:          comparing @f32_layer
// F32-COUNT-12: {{^(result|gradient) #[0-9]+: .*  ok$}}
// F32-NOT:      FAIL

func.func @f32_layer(%mixed: tensor<?x48xf32>, %conv: tensor<48x4xf32>,
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

// BF16:         comparing @bf16_delta_rule
// BF16-COUNT-8: {{^(result|gradient) #[0-9]+: .*rel_rms = 0\.000e\+00  max_abs = 0\.000e\+00  ok$}}
func.func @bf16_delta_rule(%q: tensor<?x1x64xbf16>, %k: tensor<?x1x64xbf16>,
                           %v: tensor<?x2x64xbf16>, %g: tensor<?x2xf32>,
                           %beta: tensor<?x2xf32>, %s0: tensor<?x2x64x64xf32>,
                           %cu: tensor<?xi32>)
    -> (tensor<?x2x64xbf16>, tensor<?x2x64x64xf32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta, %p initial_state(%s0)
      : (tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2xf32>,
         tensor<?x2xf32>, !gdn.packing<seqs = ?, tokens = ?>, tensor<?x2x64x64xf32>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64x64xf32>)
  return %o, %s : tensor<?x2x64xbf16>, tensor<?x2x64x64xf32>
}
