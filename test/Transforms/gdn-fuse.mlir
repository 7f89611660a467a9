// gdn-fuse: the prologue dataflow (conv, split, l2norm q/k, gates) feeding a delta rule becomes one gdn_kernel.prologue, a bf16 delta rule with K and V in {64, 128} becomes gdn_kernel.delta_rule, gated_rmsnorm becomes gdn_kernel.gated_rmsnorm; dataflow that does not match stays as it is.
// RUN: gdn-opt %s --gdn-fuse | FileCheck %s
// RUN: gdn-opt %s --gdn-fuse="threads=128 tokens-per-block=64 rows-in-flight=4" | FileCheck %s --check-prefix=OPTS

// A small GQA config in f32: T = 16 tokens in 2 sequences, 2 key heads and 4
// value heads of 8 (two 16-byte lanes per head), 2 * 2 * 8 + 4 * 8 = 64 conv
// channels.
!P = !gdn.packing<seqs = 2, tokens = 16>
!X = tensor<16x64xf32>
!W = tensor<64x4xf32>
!QK = tensor<16x2x8xf32>
!V = tensor<16x4x8xf32>
!G = tensor<16x4xf32>
!H = tensor<4xf32>
!S = tensor<2x4x8x8xf32>

//===----------------------------------------------------------------------===//
// Fused
//===----------------------------------------------------------------------===//

// Qwen3-Next / Qwen3.5 size (16 key heads, 32 value heads of 128, bf16,
// 8192 channels): every attribute, every operand, and the results in place of
// the ops they replace.
// CHECK-LABEL: func.func @qwen3_next_prologue
// CHECK-SAME: (%[[MIXED:[^:]+]]: tensor<8192x8192xbf16>, %[[CONV:[^:]+]]: tensor<8192x4xbf16>, %[[A:[^:]+]]: tensor<8192x32xbf16>, %[[B:[^:]+]]: tensor<8192x32xbf16>, %[[ALOG:[^:]+]]: tensor<32xf32>, %[[DTB:[^:]+]]: tensor<32xf32>, %[[P:[^:]+]]: !gdn.packing
// CHECK-NEXT: %[[Q:[^ ,]+]], %[[K:[^ ,]+]], %[[V:[^ ,]+]], %[[G:[^ ,]+]], %[[BETA:[^ ,]+]] = gdn_kernel.prologue %[[MIXED]], %[[CONV]], %[[A]], %[[B]], %[[ALOG]], %[[DTB]], %[[P]]
// CHECK-SAME: {activation = #gdn.act<silu>, allow_neg_eigval = false, conv_width = 4 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64, key_heads = 16 : i64, l2norm_eps = 9.9999999999999995E-7 : f64, rows_in_flight = 8 : i64, threads = 256 : i64, tokens_per_block = 32 : i64, value_heads = 32 : i64}
// CHECK-SAME: : (tensor<8192x8192xbf16>, tensor<8192x4xbf16>, tensor<8192x32xbf16>, tensor<8192x32xbf16>, tensor<32xf32>, tensor<32xf32>, !gdn.packing<seqs = 4, tokens = 8192, max_len = 4096>)
// CHECK-SAME: -> (tensor<8192x16x128xbf16>, tensor<8192x16x128xbf16>, tensor<8192x32x128xbf16>, tensor<8192x32xf32>, tensor<8192x32xf32>)
// The delta rule (bf16, K = V = 128) becomes the chunked kernel; its final
// state is unused, so the kernel does not compute it.
// CHECK-NEXT: %[[O:[^ ,]+]] = gdn_kernel.delta_rule %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]], %[[P]]
// CHECK-SAME: {head_dim_k = 128 : i64, head_dim_v = 128 : i64, key_heads = 16 : i64, scale = 0.088388347648318433 : f64, scan_stages = 2 : i64, value_heads = 32 : i64, value_tile = 128 : i64}
// CHECK-SAME: -> tensor<8192x32x128xbf16>
// CHECK-NEXT: return %[[O]], %[[Q]], %[[G]]
// OPTS-LABEL: func.func @qwen3_next_prologue
// OPTS: gdn_kernel.prologue {{.*}}rows_in_flight = 4 : i64, threads = 128 : i64, tokens_per_block = 64 : i64,
func.func @qwen3_next_prologue(%mixed: tensor<8192x8192xbf16>, %conv: tensor<8192x4xbf16>,
    %a: tensor<8192x32xbf16>, %b: tensor<8192x32xbf16>, %a_log: tensor<32xf32>,
    %dt_bias: tensor<32xf32>, %p: !gdn.packing<seqs = 4, tokens = 8192, max_len = 4096>)
    -> (tensor<8192x32x128xbf16>, tensor<8192x16x128xbf16>, tensor<8192x32xf32>) {
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<8192x8192xbf16>, tensor<8192x4xbf16>, !gdn.packing<seqs = 4, tokens = 8192, max_len = 4096>)
      -> tensor<8192x8192xbf16>
  %q, %k, %v = gdn.split_qkv %c : tensor<8192x8192xbf16>
      -> tensor<8192x16x128xbf16>, tensor<8192x16x128xbf16>, tensor<8192x32x128xbf16>
  %qn = gdn.l2norm %q : tensor<8192x16x128xbf16>
  %kn = gdn.l2norm %k : tensor<8192x16x128xbf16>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<8192x32xbf16>, tensor<8192x32xbf16>, tensor<32xf32>, tensor<32xf32>)
      -> (tensor<8192x32xf32>, tensor<8192x32xf32>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<8192x16x128xbf16>, tensor<8192x16x128xbf16>, tensor<8192x32x128xbf16>,
         tensor<8192x32xf32>, tensor<8192x32xf32>, !gdn.packing<seqs = 4, tokens = 8192, max_len = 4096>)
      -> (tensor<8192x32x128xbf16>, tensor<4x32x128x128xf32>)
  return %o, %qn, %g : tensor<8192x32x128xbf16>, tensor<8192x16x128xbf16>, tensor<8192x32xf32>
}

// Small GQA, dynamic padded pack, with conv bias and initial and final conv
// states, another l2norm eps and 2 * sigmoid beta; the final conv state
// becomes the prologue's sixth result.
// CHECK-LABEL: func.func @gqa_states_padded
// CHECK-SAME: (%[[MIXED:[^:]+]]: tensor<?x384xbf16>, %[[CONV:[^:]+]]: tensor<384x4xbf16>, %[[BIAS:[^:]+]]: tensor<384xbf16>, %[[H0:[^:]+]]: tensor<?x384x3xbf16>, %[[A:[^:]+]]: tensor<?x4xbf16>, %[[B:[^:]+]]: tensor<?x4xbf16>, %[[ALOG:[^:]+]]: tensor<4xf32>, %[[DTB:[^:]+]]: tensor<4xf32>, %[[P:[^:]+]]: !gdn.packing
// CHECK-NEXT: %[[Q:[^ ,]+]], %[[K:[^ ,]+]], %[[V:[^ ,]+]], %[[G:[^ ,]+]], %[[BETA:[^ ,]+]], %[[HT:[^ ,]+]] = gdn_kernel.prologue %[[MIXED]], %[[CONV]], %[[A]], %[[B]], %[[ALOG]], %[[DTB]], %[[P]] bias(%[[BIAS]]) initial_state(%[[H0]])
// CHECK-SAME: {activation = #gdn.act<silu>, allow_neg_eigval = true, conv_width = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, key_heads = 2 : i64, l2norm_eps = 1.000000e-05 : f64, rows_in_flight = 8 : i64, threads = 256 : i64, tokens_per_block = 32 : i64, value_heads = 4 : i64}
// CHECK-SAME: : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<384xbf16>, tensor<?x384x3xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?, padded>)
// CHECK-SAME: -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x384x3xbf16>)
// CHECK-NEXT: %[[O:[^ ,]+]], %{{[^ ,]+}} = gdn.delta_rule %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]], %[[P]] :
// CHECK-NEXT: return %[[O]], %[[HT]]
// OPTS-LABEL: func.func @gqa_states_padded
// OPTS: gdn_kernel.prologue {{.*}} bias({{.*}}) initial_state({{.*}}) {{{.*}}rows_in_flight = 4 : i64, threads = 128 : i64, tokens_per_block = 64 : i64,
func.func @gqa_states_padded(%mixed: tensor<?x384xbf16>, %conv: tensor<384x4xbf16>,
    %bias: tensor<384xbf16>, %h0: tensor<?x384x3xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>,
    %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?, padded>)
    -> (tensor<?x4x32xbf16>, tensor<?x384x3xbf16>) {
  %c, %h = gdn.causal_conv1d %mixed, %conv, %p bias(%bias) initial_state(%h0)
      {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, !gdn.packing<seqs = ?, tokens = ?, padded>,
         tensor<384xbf16>, tensor<?x384x3xbf16>) -> (tensor<?x384xbf16>, tensor<?x384x3xbf16>)
  %q, %k, %v = gdn.split_qkv %c : tensor<?x384xbf16>
      -> tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>
  %qn = gdn.l2norm %q {eps = 1.0e-05 : f64} : tensor<?x2x64xbf16>
  %kn = gdn.l2norm %k {eps = 1.0e-05 : f64} : tensor<?x2x64xbf16>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias {allow_neg_eigval = true}
      : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<?x4xf32>, tensor<?x4xf32>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>,
         tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?, padded>)
      -> (tensor<?x4x32xbf16>, tensor<?x4x64x32xf32>)
  return %o, %h : tensor<?x4x32xbf16>, tensor<?x384x3xbf16>
}

// A conv without activation fuses too: the kernel takes it as a flag.
// CHECK-LABEL: func.func @no_activation
// CHECK-NEXT: gdn_kernel.prologue {{.*}} {activation = #gdn.act<none>, {{.*}}conv_width = 4 : i64, head_dim_k = 8 : i64, head_dim_v = 8 : i64, key_heads = 2 : i64,
// CHECK-NEXT: gdn.delta_rule
// CHECK-NEXT: return
func.func @no_activation(%mixed: !X, %conv: !W, %a: !G, %b: !G, %a_log: !H, %dt_bias: !H, %p: !P) -> !V {
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64} : (!X, !W, !P) -> !X
  %q, %k, %v = gdn.split_qkv %c : !X -> !QK, !QK, !V
  %qn = gdn.l2norm %q : !QK
  %kn = gdn.l2norm %k : !QK
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (!G, !G, !H, !H) -> (!G, !G)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p : (!QK, !QK, !V, !G, !G, !P) -> (!V, !S)
  return %o : !V
}

// v is used before the delta rule: the prologue goes right after the last
// definition of its operands, ahead of that use.
// CHECK-LABEL: func.func @early_use_of_v
// CHECK-NEXT: %{{[^ ,]+}}, %{{[^ ,]+}}, %[[V:[^ ,]+]], %{{[^ ,]+}}, %{{[^ ,]+}} = gdn_kernel.prologue
// CHECK-NEXT: %[[VN:[^ ]+]] = gdn.l2norm %[[V]]
// CHECK-NEXT: %[[O:[^ ,]+]], %{{[^ ,]+}} = gdn.delta_rule %{{[^ ,]+}}, %{{[^ ,]+}}, %[[V]],
// CHECK-NEXT: return %[[O]], %[[VN]]
func.func @early_use_of_v(%mixed: !X, %conv: !W, %a: !G, %b: !G, %a_log: !H, %dt_bias: !H, %p: !P) -> (!V, !V) {
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>} : (!X, !W, !P) -> !X
  %q, %k, %v = gdn.split_qkv %c : !X -> !QK, !QK, !V
  %vn = gdn.l2norm %v : !V
  %qn = gdn.l2norm %q : !QK
  %kn = gdn.l2norm %k : !QK
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (!G, !G, !H, !H) -> (!G, !G)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p : (!QK, !QK, !V, !G, !G, !P) -> (!V, !S)
  return %o, %vn : !V, !V
}

// Two layers in one function: one prologue each, and both epilogues.
// CHECK-LABEL: func.func @two_layers
// CHECK: gdn_kernel.prologue %{{[^ ,]+}}, %[[CONV:[^ ,]+]],
// CHECK: %[[O1:[^ ,]+]], %{{[^ ,]+}} = gdn.delta_rule
// CHECK: %[[Y1:[^ ]+]] = gdn_kernel.gated_rmsnorm %[[O1]], %{{[^ ,]+}}, %{{[^ ]+}} {eps = 9.9999999999999995E-7 : f64, threads = 256 : i64} : (tensor<16x4x8xf32>, tensor<16x4x8xf32>, tensor<8xf32>) -> tensor<16x4x8xf32>
// CHECK: gdn_kernel.prologue %{{[^ ,]+}}, %[[CONV]],
// CHECK: %[[O2:[^ ,]+]], %{{[^ ,]+}} = gdn.delta_rule
// CHECK: %[[Y2:[^ ]+]] = gdn_kernel.gated_rmsnorm %[[O2]], %[[Y1]], %{{[^ ]+}} {eps = 1.000000e-05 : f64, threads = 256 : i64}
// CHECK-NEXT: return %[[Y2]]
// OPTS-LABEL: func.func @two_layers
// OPTS: gdn_kernel.gated_rmsnorm {{.*}} {eps = 9.9999999999999995E-7 : f64, threads = 128 : i64}
func.func @two_layers(%mixed: !X, %mixed2: !X, %conv: !W, %a: !G, %b: !G, %a_log: !H, %dt_bias: !H,
                      %z: !V, %norm: tensor<8xf32>, %p: !P) -> !V {
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>} : (!X, !W, !P) -> !X
  %q, %k, %v = gdn.split_qkv %c : !X -> !QK, !QK, !V
  %qn = gdn.l2norm %q : !QK
  %kn = gdn.l2norm %k : !QK
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (!G, !G, !H, !H) -> (!G, !G)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p : (!QK, !QK, !V, !G, !G, !P) -> (!V, !S)
  %y = gdn.gated_rmsnorm %o, %z, %norm : (!V, !V, tensor<8xf32>) -> !V
  %c2 = gdn.causal_conv1d %mixed2, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>} : (!X, !W, !P) -> !X
  %q2, %k2, %v2 = gdn.split_qkv %c2 : !X -> !QK, !QK, !V
  %qn2 = gdn.l2norm %q2 : !QK
  %kn2 = gdn.l2norm %k2 : !QK
  %g2, %beta2 = gdn.gates %a, %b, %a_log, %dt_bias : (!G, !G, !H, !H) -> (!G, !G)
  %o2, %s2 = gdn.delta_rule %qn2, %kn2, %v2, %g2, %beta2, %p : (!QK, !QK, !V, !G, !G, !P) -> (!V, !S)
  %y2 = gdn.gated_rmsnorm %o2, %y, %norm {eps = 1.0e-05 : f64} : (!V, !V, tensor<8xf32>) -> !V
  return %y2 : !V
}

// The Qwen3-Next epilogue (32 value heads of 128, bf16) on its own.
// CHECK-LABEL: func.func @epilogue_gqa16x32
// CHECK-SAME: (%[[O:[^:]+]]: tensor<?x32x128xbf16>, %[[Z:[^:]+]]: tensor<?x32x128xbf16>, %[[W:[^:]+]]: tensor<128xbf16>)
// CHECK-NEXT: %[[Y:[^ ]+]] = gdn_kernel.gated_rmsnorm %[[O]], %[[Z]], %[[W]] {eps = 9.9999999999999995E-7 : f64, threads = 256 : i64} : (tensor<?x32x128xbf16>, tensor<?x32x128xbf16>, tensor<128xbf16>) -> tensor<?x32x128xbf16>
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: gdn.gated_rmsnorm
func.func @epilogue_gqa16x32(%o: tensor<?x32x128xbf16>, %z: tensor<?x32x128xbf16>,
                             %w: tensor<128xbf16>) -> tensor<?x32x128xbf16> {
  %y = gdn.gated_rmsnorm %o, %z, %w : (tensor<?x32x128xbf16>, tensor<?x32x128xbf16>, tensor<128xbf16>) -> tensor<?x32x128xbf16>
  return %y : tensor<?x32x128xbf16>
}

//===----------------------------------------------------------------------===//
// Not fused
//===----------------------------------------------------------------------===//

// The conv output has a second user: it must be materialised anyway.
// CHECK-LABEL: func.func @conv_output_reused
// CHECK-NOT: gdn_kernel.prologue
// CHECK: gdn.causal_conv1d
// CHECK: gdn.split_qkv
// CHECK: gdn.l2norm
// CHECK: gdn.l2norm
// CHECK: gdn.gates
// CHECK: gdn.delta_rule
// CHECK-NOT: gdn_kernel.prologue
// CHECK: return
func.func @conv_output_reused(%mixed: !X, %conv: !W, %a: !G, %b: !G, %a_log: !H, %dt_bias: !H, %p: !P) -> (!V, !X) {
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>} : (!X, !W, !P) -> !X
  %q, %k, %v = gdn.split_qkv %c : !X -> !QK, !QK, !V
  %qn = gdn.l2norm %q : !QK
  %kn = gdn.l2norm %k : !QK
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (!G, !G, !H, !H) -> (!G, !G)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p : (!QK, !QK, !V, !G, !G, !P) -> (!V, !S)
  return %o, %c : !V, !X
}

// q reaches the delta rule without its L2 norm.
// CHECK-LABEL: func.func @q_without_l2norm
// CHECK-NOT: gdn_kernel.prologue
// CHECK: gdn.causal_conv1d
// CHECK: %[[Q:[^ ,]+]], %{{[^ ,]+}}, %{{[^ ,]+}} = gdn.split_qkv
// CHECK: gdn.delta_rule %[[Q]],
// CHECK-NOT: gdn_kernel.prologue
// CHECK: return
func.func @q_without_l2norm(%mixed: !X, %conv: !W, %a: !G, %b: !G, %a_log: !H, %dt_bias: !H, %p: !P) -> !V {
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>} : (!X, !W, !P) -> !X
  %q, %k, %v = gdn.split_qkv %c : !X -> !QK, !QK, !V
  %kn = gdn.l2norm %k : !QK
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (!G, !G, !H, !H) -> (!G, !G)
  %o, %s = gdn.delta_rule %q, %kn, %v, %g, %beta, %p : (!QK, !QK, !V, !G, !G, !P) -> (!V, !S)
  return %o : !V
}

// The unnormalised q is also returned: the split's q must stay.
// CHECK-LABEL: func.func @unnormalised_q_reused
// CHECK-NOT: gdn_kernel.prologue
// CHECK: gdn.causal_conv1d
// CHECK: gdn.delta_rule
// CHECK-NOT: gdn_kernel.prologue
// CHECK: return
func.func @unnormalised_q_reused(%mixed: !X, %conv: !W, %a: !G, %b: !G, %a_log: !H, %dt_bias: !H, %p: !P) -> (!V, !QK) {
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>} : (!X, !W, !P) -> !X
  %q, %k, %v = gdn.split_qkv %c : !X -> !QK, !QK, !V
  %qn = gdn.l2norm %q : !QK
  %kn = gdn.l2norm %k : !QK
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (!G, !G, !H, !H) -> (!G, !G)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p : (!QK, !QK, !V, !G, !G, !P) -> (!V, !S)
  return %o, %q : !V, !QK
}

// The kernel has one l2norm epsilon for q and k.
// CHECK-LABEL: func.func @different_l2norm_eps
// CHECK-NOT: gdn_kernel.prologue
// CHECK: gdn.l2norm %{{[^ ]+}} : tensor<16x2x8xf32>
// CHECK: gdn.l2norm %{{[^ ]+}} {eps = 1.000000e-05 : f64} : tensor<16x2x8xf32>
// CHECK: gdn.delta_rule
// CHECK-NOT: gdn_kernel.prologue
// CHECK: return
func.func @different_l2norm_eps(%mixed: !X, %conv: !W, %a: !G, %b: !G, %a_log: !H, %dt_bias: !H, %p: !P) -> !V {
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>} : (!X, !W, !P) -> !X
  %q, %k, %v = gdn.split_qkv %c : !X -> !QK, !QK, !V
  %qn = gdn.l2norm %q : !QK
  %kn = gdn.l2norm %k {eps = 1.0e-05 : f64} : !QK
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (!G, !G, !H, !H) -> (!G, !G)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p : (!QK, !QK, !V, !G, !G, !P) -> (!V, !S)
  return %o : !V
}

// g and beta come from two different gates ops.
// CHECK-LABEL: func.func @gates_from_two_ops
// CHECK-NOT: gdn_kernel.prologue
// CHECK: gdn.gates
// CHECK: gdn.gates
// CHECK: gdn.delta_rule
// CHECK-NOT: gdn_kernel.prologue
// CHECK: return
func.func @gates_from_two_ops(%mixed: !X, %conv: !W, %a: !G, %b: !G, %a_log: !H, %dt_bias: !H, %p: !P) -> !V {
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>} : (!X, !W, !P) -> !X
  %q, %k, %v = gdn.split_qkv %c : !X -> !QK, !QK, !V
  %qn = gdn.l2norm %q : !QK
  %kn = gdn.l2norm %k : !QK
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (!G, !G, !H, !H) -> (!G, !G)
  %g2, %beta2 = gdn.gates %a, %b, %a_log, %dt_bias {allow_neg_eigval = true} : (!G, !G, !H, !H) -> (!G, !G)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta2, %p : (!QK, !QK, !V, !G, !G, !P) -> (!V, !S)
  return %o : !V
}

// The conv runs over another packing than the delta rule.
// CHECK-LABEL: func.func @two_packings
// CHECK-NOT: gdn_kernel.prologue
// CHECK: gdn.causal_conv1d
// CHECK: gdn.delta_rule
// CHECK-NOT: gdn_kernel.prologue
// CHECK: return
func.func @two_packings(%mixed: !X, %conv: !W, %a: !G, %b: !G, %a_log: !H, %dt_bias: !H, %p: !P, %p2: !P) -> !V {
  %c = gdn.causal_conv1d %mixed, %conv, %p2 {width = 4 : i64, activation = #gdn.act<silu>} : (!X, !W, !P) -> !X
  %q, %k, %v = gdn.split_qkv %c : !X -> !QK, !QK, !V
  %qn = gdn.l2norm %q : !QK
  %kn = gdn.l2norm %k : !QK
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (!G, !G, !H, !H) -> (!G, !G)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p : (!QK, !QK, !V, !G, !G, !P) -> (!V, !S)
  return %o : !V
}

// A key head of 4 bf16 is 8 bytes, half a 16-byte vector.
// CHECK-LABEL: func.func @head_dim_partial_vector
// CHECK-NOT: gdn_kernel.prologue
// CHECK: gdn.causal_conv1d
// CHECK: gdn.delta_rule
// CHECK-NOT: gdn_kernel.prologue
// CHECK: return
func.func @head_dim_partial_vector(%mixed: tensor<16x32xbf16>, %conv: tensor<32x4xbf16>, %a: !G, %b: !G,
                                   %a_log: !H, %dt_bias: !H, %p: !P) -> tensor<16x4x4xbf16> {
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<16x32xbf16>, tensor<32x4xbf16>, !P) -> tensor<16x32xbf16>
  %q, %k, %v = gdn.split_qkv %c : tensor<16x32xbf16>
      -> tensor<16x2x4xbf16>, tensor<16x2x4xbf16>, tensor<16x4x4xbf16>
  %qn = gdn.l2norm %q : tensor<16x2x4xbf16>
  %kn = gdn.l2norm %k : tensor<16x2x4xbf16>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (!G, !G, !H, !H) -> (!G, !G)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<16x2x4xbf16>, tensor<16x2x4xbf16>, tensor<16x4x4xbf16>, !G, !G, !P)
      -> (tensor<16x4x4xbf16>, tensor<2x4x4x4xf32>)
  return %o : tensor<16x4x4xbf16>
}

// A key head of 96 bf16 fills 12 lanes, not a power-of-two lane group.
// CHECK-LABEL: func.func @head_dim_not_power_of_two_lanes
// CHECK-NOT: gdn_kernel.prologue
// CHECK: gdn.causal_conv1d
// CHECK: gdn.delta_rule
// CHECK-NOT: gdn_kernel.prologue
// CHECK: return
func.func @head_dim_not_power_of_two_lanes(%mixed: tensor<16x512xbf16>, %conv: tensor<512x4xbf16>, %a: !G, %b: !G,
                                           %a_log: !H, %dt_bias: !H, %p: !P) -> tensor<16x4x32xbf16> {
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<16x512xbf16>, tensor<512x4xbf16>, !P) -> tensor<16x512xbf16>
  %q, %k, %v = gdn.split_qkv %c : tensor<16x512xbf16>
      -> tensor<16x2x96xbf16>, tensor<16x2x96xbf16>, tensor<16x4x32xbf16>
  %qn = gdn.l2norm %q : tensor<16x2x96xbf16>
  %kn = gdn.l2norm %k : tensor<16x2x96xbf16>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (!G, !G, !H, !H) -> (!G, !G)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<16x2x96xbf16>, tensor<16x2x96xbf16>, tensor<16x4x32xbf16>, !G, !G, !P)
      -> (tensor<16x4x32xbf16>, tensor<2x4x96x32xf32>)
  return %o : tensor<16x4x32xbf16>
}

// The kernel's conv window holds at most 4 taps.
// CHECK-LABEL: func.func @conv_width_five
// CHECK-NOT: gdn_kernel.prologue
// CHECK: gdn.causal_conv1d {{.*}}width = 5 : i64
// CHECK: gdn.delta_rule
// CHECK-NOT: gdn_kernel.prologue
// CHECK: return
func.func @conv_width_five(%mixed: !X, %conv: tensor<64x5xf32>, %a: !G, %b: !G, %a_log: !H, %dt_bias: !H, %p: !P) -> !V {
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 5 : i64, activation = #gdn.act<silu>} : (!X, tensor<64x5xf32>, !P) -> !X
  %q, %k, %v = gdn.split_qkv %c : !X -> !QK, !QK, !V
  %qn = gdn.l2norm %q : !QK
  %kn = gdn.l2norm %k : !QK
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (!G, !G, !H, !H) -> (!G, !G)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p : (!QK, !QK, !V, !G, !G, !P) -> (!V, !S)
  return %o : !V
}

// The kernel reads the bias with the weights' element type.
// CHECK-LABEL: func.func @bias_dtype_differs
// CHECK-NOT: gdn_kernel.prologue
// CHECK: gdn.causal_conv1d {{.*}} bias(
// CHECK: gdn.delta_rule
// CHECK-NOT: gdn_kernel.prologue
// CHECK: return
func.func @bias_dtype_differs(%mixed: tensor<16x64xbf16>, %conv: tensor<64x4xbf16>, %bias: tensor<64xf32>,
                              %a: !G, %b: !G, %a_log: !H, %dt_bias: !H, %p: !P) -> tensor<16x4x8xbf16> {
  %c = gdn.causal_conv1d %mixed, %conv, %p bias(%bias) {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<16x64xbf16>, tensor<64x4xbf16>, !P, tensor<64xf32>) -> tensor<16x64xbf16>
  %q, %k, %v = gdn.split_qkv %c : tensor<16x64xbf16>
      -> tensor<16x2x8xbf16>, tensor<16x2x8xbf16>, tensor<16x4x8xbf16>
  %qn = gdn.l2norm %q : tensor<16x2x8xbf16>
  %kn = gdn.l2norm %k : tensor<16x2x8xbf16>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (!G, !G, !H, !H) -> (!G, !G)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<16x2x8xbf16>, tensor<16x2x8xbf16>, tensor<16x4x8xbf16>, !G, !G, !P)
      -> (tensor<16x4x8xbf16>, tensor<2x4x8x8xf32>)
  return %o : tensor<16x4x8xbf16>
}

// Sequence-sharded activations: the conv needs taps from another rank.
// CHECK-LABEL: func.func @sequence_sharded
// CHECK-NOT: gdn_kernel.prologue
// CHECK: gdn.causal_conv1d
// CHECK: gdn.delta_rule
// CHECK-NOT: gdn_kernel.prologue
// CHECK: return
func.func @sequence_sharded(%mixed: tensor<?x64xf32, #gdn.seq<zigzag, ranks = 2>>, %conv: !W,
    %a: tensor<?x4xf32, #gdn.seq<zigzag, ranks = 2>>, %b: tensor<?x4xf32, #gdn.seq<zigzag, ranks = 2>>,
    %a_log: !H, %dt_bias: !H, %p: !gdn.packing<seqs = ?, tokens = ?>)
    -> tensor<?x4x8xf32, #gdn.seq<zigzag, ranks = 2>> {
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x64xf32, #gdn.seq<zigzag, ranks = 2>>, !W, !gdn.packing<seqs = ?, tokens = ?>)
      -> tensor<?x64xf32, #gdn.seq<zigzag, ranks = 2>>
  %q, %k, %v = gdn.split_qkv %c : tensor<?x64xf32, #gdn.seq<zigzag, ranks = 2>>
      -> tensor<?x2x8xf32, #gdn.seq<zigzag, ranks = 2>>, tensor<?x2x8xf32, #gdn.seq<zigzag, ranks = 2>>,
         tensor<?x4x8xf32, #gdn.seq<zigzag, ranks = 2>>
  %qn = gdn.l2norm %q : tensor<?x2x8xf32, #gdn.seq<zigzag, ranks = 2>>
  %kn = gdn.l2norm %k : tensor<?x2x8xf32, #gdn.seq<zigzag, ranks = 2>>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<?x4xf32, #gdn.seq<zigzag, ranks = 2>>, tensor<?x4xf32, #gdn.seq<zigzag, ranks = 2>>, !H, !H)
      -> (tensor<?x4xf32, #gdn.seq<zigzag, ranks = 2>>, tensor<?x4xf32, #gdn.seq<zigzag, ranks = 2>>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<?x2x8xf32, #gdn.seq<zigzag, ranks = 2>>, tensor<?x2x8xf32, #gdn.seq<zigzag, ranks = 2>>,
         tensor<?x4x8xf32, #gdn.seq<zigzag, ranks = 2>>, tensor<?x4xf32, #gdn.seq<zigzag, ranks = 2>>,
         tensor<?x4xf32, #gdn.seq<zigzag, ranks = 2>>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x4x8xf32, #gdn.seq<zigzag, ranks = 2>>, tensor<?x4x8x8xf32>)
  return %o : tensor<?x4x8xf32, #gdn.seq<zigzag, ranks = 2>>
}

// v is used before a gates input exists: no single place for the prologue
// dominates both, so the dataflow stays as it is.
// CHECK-LABEL: func.func @no_place_for_the_prologue
// CHECK-NOT: gdn_kernel.prologue
// CHECK: gdn.causal_conv1d
// CHECK: gdn.delta_rule
// CHECK-NOT: gdn_kernel.prologue
// CHECK: return
func.func @no_place_for_the_prologue(%mixed: !X, %conv: !W, %a: !G, %b: !G, %a_log: !H, %dt_bias: !H, %p: !P) -> (!V, !V) {
  %c = gdn.causal_conv1d %mixed, %conv, %p {width = 4 : i64, activation = #gdn.act<silu>} : (!X, !W, !P) -> !X
  %q, %k, %v = gdn.split_qkv %c : !X -> !QK, !QK, !V
  %vn = gdn.l2norm %v : !V
  %an = gdn.l2norm %a : !G
  %qn = gdn.l2norm %q : !QK
  %kn = gdn.l2norm %k : !QK
  %g, %beta = gdn.gates %an, %b, %a_log, %dt_bias : (!G, !G, !H, !H) -> (!G, !G)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p : (!QK, !QK, !V, !G, !G, !P) -> (!V, !S)
  return %o, %vn : !V, !V
}

// Epilogues the kernel cannot take: 4 bf16 per row (half a vector), f64,
// a dynamic head dim.
// CHECK-LABEL: func.func @epilogues_not_fused
// CHECK-NOT: gdn_kernel.gated_rmsnorm
// CHECK: gdn.gated_rmsnorm {{.*}} : (tensor<?x4x4xbf16>, tensor<?x4x4xbf16>, tensor<4xbf16>) -> tensor<?x4x4xbf16>
// CHECK: gdn.gated_rmsnorm {{.*}} : (tensor<?x4x8xf64>, tensor<?x4x8xf64>, tensor<8xf64>) -> tensor<?x4x8xf64>
// CHECK: gdn.gated_rmsnorm {{.*}} : (tensor<?x4x?xf32>, tensor<?x4x?xf32>, tensor<?xf32>) -> tensor<?x4x?xf32>
// CHECK-NOT: gdn_kernel.gated_rmsnorm
// CHECK: return
func.func @epilogues_not_fused(%o1: tensor<?x4x4xbf16>, %z1: tensor<?x4x4xbf16>, %w1: tensor<4xbf16>,
                               %o2: tensor<?x4x8xf64>, %z2: tensor<?x4x8xf64>, %w2: tensor<8xf64>,
                               %o3: tensor<?x4x?xf32>, %z3: tensor<?x4x?xf32>, %w3: tensor<?xf32>)
    -> (tensor<?x4x4xbf16>, tensor<?x4x8xf64>, tensor<?x4x?xf32>) {
  %y1 = gdn.gated_rmsnorm %o1, %z1, %w1 : (tensor<?x4x4xbf16>, tensor<?x4x4xbf16>, tensor<4xbf16>) -> tensor<?x4x4xbf16>
  %y2 = gdn.gated_rmsnorm %o2, %z2, %w2 : (tensor<?x4x8xf64>, tensor<?x4x8xf64>, tensor<8xf64>) -> tensor<?x4x8xf64>
  %y3 = gdn.gated_rmsnorm %o3, %z3, %w3 : (tensor<?x4x?xf32>, tensor<?x4x?xf32>, tensor<?xf32>) -> tensor<?x4x?xf32>
  return %y1, %y2, %y3 : tensor<?x4x4xbf16>, tensor<?x4x8xf64>, tensor<?x4x?xf32>
}

// z wider than x (an f32 projection output): the kernel reads it in 32-byte
// vectors beside x's 16-byte ones.
// CHECK-LABEL: func.func @epilogue_f32_gate
// CHECK: gdn_kernel.gated_rmsnorm {{.*}} : (tensor<?x4x8xbf16>, tensor<?x4x8xf32>, tensor<8xbf16>) -> tensor<?x4x8xbf16>
func.func @epilogue_f32_gate(%o: tensor<?x4x8xbf16>, %z: tensor<?x4x8xf32>, %w: tensor<8xbf16>)
    -> tensor<?x4x8xbf16> {
  %y = gdn.gated_rmsnorm %o, %z, %w : (tensor<?x4x8xbf16>, tensor<?x4x8xf32>, tensor<8xbf16>) -> tensor<?x4x8xbf16>
  return %y : tensor<?x4x8xbf16>
}
