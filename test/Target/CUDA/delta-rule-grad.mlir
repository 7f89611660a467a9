// gdn-translate --gdn-to-cuda on the delta-rule backward kernel op: its
// banner and Config (bf16 gradients, states; the fused reverse kernel
// without GQA and with bf16 gradients only), its scratch query (the
// backward's workspace), its checks (every tensor, per-token and
// per-sequence, 16-byte alignment), the launch with the packing's status
// and split chains, and the whole function's roles and workspace slot.
// RUN: gdn-translate --gdn-to-cuda %S/Inputs/delta_rule_grad_gqa16x32.mlir | FileCheck %s
// The same op without GQA (32 key heads) selects the fused reverse kernel,
// unless its gradients are fp32 (it is measured with bf16 gradients only).
// RUN: sed 's/x16x128/x32x128/g; s/key_heads = 16/key_heads = 32/' \
// RUN:   %S/Inputs/delta_rule_grad_gqa16x32.mlir | gdn-translate --gdn-to-cuda | FileCheck %s --check-prefix=MHA
// MHA: static constexpr int kKeyHeads = 32;
// MHA: static constexpr bool kChunkGradWgmma = true;
// MHA-NEXT: // The reverse scan and the chunk gradients as one kernel.
// MHA-NEXT: static constexpr bool kFusedBackwardWgmma = true;
// MHA-NEXT: static constexpr bool kHasInitialState = true;
// RUN: sed 's/x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x128xbf16>,/x16x128xf32>, tensor<?x16x128xf32>, tensor<?x32x128xf32>,/; s/x16x128/x32x128/g; s/key_heads = 16/key_heads = 32/' \
// RUN:   %S/Inputs/delta_rule_grad_gqa16x32.mlir | gdn-translate --gdn-to-cuda | FileCheck %s --check-prefix=FP32
// FP32: using Gradient = float;
// FP32-NEXT: static constexpr int kKeyHeads = 32;
// FP32-NOT: kFusedBackwardWgmma
// FP32: static constexpr bool kHasFinalState = false;
// RUN: gdn-opt %s --split-input-file --verify-diagnostics

// CHECK: // Kernel gdn_delta_rule_grad_gqa16x32_k0_delta_rule_grad: gdn_kernel.delta_rule_grad at
// CHECK-NEXT: //   from gdn.delta_rule_grad; chunked (64 tokens): prepare, forward scan (saving S and Vnew),
// CHECK-NEXT: //   reverse state-gradient scan, chunk gradients, GQA sums; no atomics
// CHECK-NEXT: //   forward recomputation, reverse scan and chunk gradients: wgmma (sm_90a: warpgroup products, TMA copies)
// CHECK-NEXT: //   key heads 16 x 128, value heads 32 x 128, scale 8.838835e-02
// CHECK-NEXT: //   gradients of q, k, v in bf16; initial state yes, final state cotangent yes
// CHECK-NEXT: struct gdn_delta_rule_grad_gqa16x32_k0_delta_rule_grad_config {
// CHECK-NEXT:   using Element = __nv_bfloat16;
// CHECK-NEXT:   using Gradient = __nv_bfloat16;
// CHECK-NEXT:   static constexpr int kKeyHeads = 16;
// CHECK-NEXT:   static constexpr int kValueHeads = 32;
// CHECK-NEXT:   static constexpr int kHeadDimK = 128;
// CHECK-NEXT:   static constexpr int kHeadDimV = 128;
// CHECK:        static constexpr int kValueTile = 128;
// CHECK-NEXT:   static constexpr bool kScanWgmma = true;
// CHECK-NEXT:   static constexpr bool kReverseScanWgmma = true;
// CHECK-NEXT:   static constexpr bool kChunkGradWgmma = true;
// CHECK-NEXT:   static constexpr bool kHasInitialState = true;
// CHECK-NEXT:   static constexpr bool kHasFinalState = false;
// CHECK-NEXT: };

// CHECK: return gdn::device::deltaRuleBackwardWorkspaceBytes<gdn_delta_rule_grad_gqa16x32_k0_delta_rule_grad_config>(
// CHECK: if (!gdn::checkTensor(operands[0], GDN_BF16, {tokens, 32, 128}))
// CHECK: if (!gdn::checkTensor(operands[1], GDN_BF16, {tokens, 16, 128}))
// CHECK: if (!gdn::checkTensor(operands[6], GDN_F32, {seqs, 32, 128, 128}))
// CHECK: if (!gdn::checkTensor(operands[7], GDN_F32, {seqs, 32, 128, 128}))
// CHECK: if (!gdn::checkTensor(results[0], GDN_BF16, {tokens, 16, 128}))
// CHECK: if (!gdn::checkTensor(results[3], GDN_F32, {tokens, 32}))
// CHECK: if (!gdn::checkTensor(results[5], GDN_F32, {seqs, 32, 128, 128}))
// CHECK: if (!gdn::isVectorAligned(operands[i]))
// CHECK: if (!gdn::isVectorAligned(results[i]))
// CHECK: gdn::device::DeltaRuleBackwardArgs<Config> args = {};
// CHECK: args.dO = static_cast<const __nv_bfloat16 *>(operands[0].data);
// CHECK: args.initialState = static_cast<const float *>(operands[6].data);
// CHECK-NEXT: args.dInitialState = static_cast<float *>(results[5].data);
// CHECK-NEXT: args.dFinalState = static_cast<const float *>(operands[7].data);
// CHECK-NEXT: args.dq = static_cast<__nv_bfloat16 *>(results[0].data);
// CHECK: args.status =
// CHECK-NEXT: gdn::device::PackingWorkspace::carve(packing->workspace).status;
// CHECK-NEXT: // Long chains split in both scans (segments sized at run time).
// CHECK-NEXT: gdn::device::deltaRuleBackwardSplit(args, 132,
// CHECK-NEXT: -1.663553e+01f /* -24 ln 2 */);
// CHECK-NEXT: return gdn::device::launchDeltaRuleBackward<Config>(args, scratch, stream) ==

// CHECK: arg_roles[] = {GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_PER_SEQUENCE, GDN_ROLE_PER_SEQUENCE, GDN_ROLE_CU_SEQLENS};
// CHECK: result_roles[] = {GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_PER_SEQUENCE};
// CHECK: offsets[1] = bytes; // scratch of gdn_delta_rule_grad_gqa16x32_k0_delta_rule_grad

// -----

func.func @bad_gradient_type(%do: tensor<?x2x64xbf16>, %q: tensor<?x1x64xbf16>, %v: tensor<?x2x64xbf16>,
                             %g: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{q_grad, k_grad and v_grad must share one element type}}
  %dq, %dk, %dv, %dg, %db = gdn_kernel.delta_rule_grad %do, %q, %q, %v, %g, %g, %p
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64,
       head_dim_v = 64 : i64, scale = 0.125 : f64}
      : (tensor<?x2x64xbf16>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>,
         tensor<?x2xf32>, tensor<?x2xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x1x64xbf16>, tensor<?x1x64xf32>, tensor<?x2x64xbf16>, tensor<?x2xf32>,
          tensor<?x2xf32>)
  return
}

// -----

func.func @missing_state_gradient(%do: tensor<?x2x64xbf16>, %q: tensor<?x1x64xbf16>, %v: tensor<?x2x64xbf16>,
                                  %g: tensor<?x2xf32>, %s: tensor<?x2x64x64xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{initial_state_grad must be returned exactly when an initial_state is given}}
  %dq, %dk, %dv, %dg, %db = gdn_kernel.delta_rule_grad %do, %q, %q, %v, %g, %g, %p initial_state(%s)
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64,
       head_dim_v = 64 : i64, scale = 0.125 : f64}
      : (tensor<?x2x64xbf16>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>,
         tensor<?x2xf32>, tensor<?x2xf32>, !gdn.packing<seqs = ?, tokens = ?>, tensor<?x2x64x64xf32>)
      -> (tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<?x2x64xf32>, tensor<?x2xf32>,
          tensor<?x2xf32>)
  return
}

// -----

func.func @f32_operands(%do: tensor<?x2x64xf32>, %q: tensor<?x1x64xbf16>, %v: tensor<?x2x64xbf16>,
                        %g: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{o_grad, q, k and v must be bf16}}
  %dq, %dk, %dv, %dg, %db = gdn_kernel.delta_rule_grad %do, %q, %q, %v, %g, %g, %p
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64,
       head_dim_v = 64 : i64, scale = 0.125 : f64}
      : (tensor<?x2x64xf32>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>,
         tensor<?x2xf32>, tensor<?x2xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<?x2x64xf32>, tensor<?x2xf32>,
          tensor<?x2xf32>)
  return
}

// -----

func.func @head_dim_32(%do: tensor<?x2x32xbf16>, %q: tensor<?x1x32xbf16>, %v: tensor<?x2x32xbf16>,
                       %g: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{the kernels take K and V in {64, 128}; found K = 32, V = 32}}
  %dq, %dk, %dv, %dg, %db = gdn_kernel.delta_rule_grad %do, %q, %q, %v, %g, %g, %p
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 32 : i64,
       head_dim_v = 32 : i64, scale = 0.125 : f64}
      : (tensor<?x2x32xbf16>, tensor<?x1x32xbf16>, tensor<?x1x32xbf16>, tensor<?x2x32xbf16>,
         tensor<?x2xf32>, tensor<?x2xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x1x32xf32>, tensor<?x1x32xf32>, tensor<?x2x32xf32>, tensor<?x2xf32>,
          tensor<?x2xf32>)
  return
}

// -----

func.func @heads_not_grouped(%do: tensor<?x3x64xbf16>, %q: tensor<?x2x64xbf16>, %v: tensor<?x3x64xbf16>,
                             %g: tensor<?x3xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{value heads (3) must be a multiple of key heads (2)}}
  %dq, %dk, %dv, %dg, %db = gdn_kernel.delta_rule_grad %do, %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 3 : i64, head_dim_k = 64 : i64,
       head_dim_v = 64 : i64, scale = 0.125 : f64}
      : (tensor<?x3x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x3x64xbf16>,
         tensor<?x3xf32>, tensor<?x3xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xf32>, tensor<?x2x64xf32>, tensor<?x3x64xf32>, tensor<?x3xf32>,
          tensor<?x3xf32>)
  return
}

// -----

func.func @zero_scale(%do: tensor<?x2x64xbf16>, %q: tensor<?x1x64xbf16>, %v: tensor<?x2x64xbf16>,
                      %g: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{scale must be > 0, found 0}}
  %dq, %dk, %dv, %dg, %db = gdn_kernel.delta_rule_grad %do, %q, %q, %v, %g, %g, %p
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64,
       head_dim_v = 64 : i64, scale = 0.0 : f64}
      : (tensor<?x2x64xbf16>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>,
         tensor<?x2xf32>, tensor<?x2xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<?x2x64xf32>, tensor<?x2xf32>,
          tensor<?x2xf32>)
  return
}

// -----

func.func @wrong_gradient_shape(%do: tensor<?x2x64xbf16>, %q: tensor<?x1x64xbf16>, %v: tensor<?x2x64xbf16>,
                                %g: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{v_grad}}
  %dq, %dk, %dv, %dg, %db = gdn_kernel.delta_rule_grad %do, %q, %q, %v, %g, %g, %p
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64,
       head_dim_v = 64 : i64, scale = 0.125 : f64}
      : (tensor<?x2x64xbf16>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>,
         tensor<?x2xf32>, tensor<?x2xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<?x2xf32>,
          tensor<?x2xf32>)
  return
}

// -----

func.func @warmup_without_split(%do: tensor<?x2x64xbf16>, %q: tensor<?x1x64xbf16>, %v: tensor<?x2x64xbf16>,
                                %g: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{warmup_bits needs split_target_blocks (only split chains warm up)}}
  %dq, %dk, %dv, %dg, %db = gdn_kernel.delta_rule_grad %do, %q, %q, %v, %g, %g, %p
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64,
       head_dim_v = 64 : i64, scale = 0.125 : f64, warmup_bits = 24 : i64}
      : (tensor<?x2x64xbf16>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>,
         tensor<?x2xf32>, tensor<?x2xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2xf32>,
          tensor<?x2xf32>)
  return
}

// -----

func.func @warmup_beyond_fp32(%do: tensor<?x2x64xbf16>, %q: tensor<?x1x64xbf16>, %v: tensor<?x2x64xbf16>,
                              %g: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{warmup_bits (127) must be at most 126 (a bound below fp32's range); 0 makes every segment exact}}
  %dq, %dk, %dv, %dg, %db = gdn_kernel.delta_rule_grad %do, %q, %q, %v, %g, %g, %p
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64,
       head_dim_v = 64 : i64, scale = 0.125 : f64, split_target_blocks = 132 : i64,
       warmup_bits = 127 : i64}
      : (tensor<?x2x64xbf16>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>,
         tensor<?x2xf32>, tensor<?x2xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2xf32>,
          tensor<?x2xf32>)
  return
}

// -----

func.func @unknown_scan(%do: tensor<?x2x64xbf16>, %q: tensor<?x1x64xbf16>, %v: tensor<?x2x64xbf16>,
                        %g: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{scan must be "mma_sync" or "wgmma", found "tma"}}
  %dq, %dk, %dv, %dg, %db = gdn_kernel.delta_rule_grad %do, %q, %q, %v, %g, %g, %p
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64,
       head_dim_v = 64 : i64, scale = 0.125 : f64, scan = "tma"}
      : (tensor<?x2x64xbf16>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>,
         tensor<?x2xf32>, tensor<?x2xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2xf32>,
          tensor<?x2xf32>)
  return
}
