// gdn-fuse preserves the program's function: the fused kernel ops, run by the
// interpreter, equal the gdn ops they replace within the fp32 and bf16
// tolerances of docs/spec.md (the fused prologue does not round the conv output
// to storage before the L2 norm, so the two differ by that one rounding).
// RUN: gdn-opt --gdn-fuse %s -o %t.mlir
// RUN: gdn-run --compare %s %t.mlir --entry=f32_layer --rtol=1e-5 --seqlens=0,1,63,64,65 --slots=8,8,64,72,72 | FileCheck %s --check-prefix=F32
// RUN: gdn-run --compare %s %t.mlir --entry=bf16_prologue --seqlens=5,70 --rtol=5e-3 | FileCheck %s --check-prefix=BF16
// RUN: FileCheck %s --check-prefix=FUSED < %t.mlir

// FUSED-LABEL: func.func @f32_layer
// FUSED: gdn_kernel.prologue
// FUSED-NOT: gdn.causal_conv1d
// FUSED: gdn_kernel.gated_rmsnorm
// FUSED-LABEL: func.func @bf16_prologue
// FUSED: gdn_kernel.prologue

// F32: result #0: {{.*}}  ok
// F32: result #1: {{.*}}  ok
// BF16-COUNT-5: {{.*}}  ok

// A layer core in f32 with conv states, bias, padding and the epilogue.
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

// The prologue alone in bf16, returning what the kernel writes.
func.func @bf16_prologue(%mixed: tensor<?x48xbf16>, %conv: tensor<48x4xbf16>,
                         %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>,
                         %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
                         %cu: tensor<?xi32>)
    -> (tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<?x4x4xbf16>,
        tensor<?x4xf32>, tensor<?x4xf32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x48xbf16>, tensor<48x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>)
      -> tensor<?x48xbf16>
  %q, %k, %v = gdn.split_qkv %c : tensor<?x48xbf16>
      -> tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<?x4x4xbf16>
  %qn = gdn.l2norm %q : tensor<?x2x8xbf16>
  %kn = gdn.l2norm %k : tensor<?x2x8xbf16>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<?x4xf32>, tensor<?x4xf32>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<?x4x4xbf16>, tensor<?x4xf32>,
         tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x4x4xbf16>, tensor<?x4x8x4xf32>)
  return %qn, %kn, %v, %g, %beta
      : tensor<?x2x8xbf16>, tensor<?x2x8xbf16>, tensor<?x4x4xbf16>, tensor<?x4xf32>, tensor<?x4xf32>
}
