// gdn-translate --gdn-to-cuda on a whole core's backward (every option:
// conv bias, initial conv states, final-state cotangents, 2 sigmoid beta,
// the gated RMSNorm): the prologue backward's and the gated RMSNorm
// backward's banners and Configs, scratch queries, checks (parameters by
// the sizes the attributes imply, states per sequence, 16-byte alignment)
// and launches; the whole function's roles and workspace slots, and that
// the recomputed prologue validates the packing (no separate launch).
// RUN: gdn-opt %gdn_src_root/test/Integration/Inputs/core_states.mlir --gdn-generate-backward --gdn-pipeline | gdn-translate --gdn-to-cuda | FileCheck %s
// RUN: gdn-opt %s --split-input-file --verify-diagnostics

// CHECK-LABEL: // @core_states_backward: 4 kernel(s)
// CHECK: // Kernel gdn_core_states_backward_k0_gated_rmsnorm_grad: gdn_kernel.gated_rmsnorm_grad at
// CHECK-NEXT: //   from gdn.gated_rmsnorm_grad; x bf16, z bf16, weight bf16, y_grad bf16
// CHECK-NEXT: //   rows of V = 64, eps 1.000000e-06, 256 threads per block, at most 528 blocks;
// CHECK-NEXT: struct gdn_core_states_backward_k0_gated_rmsnorm_grad_config {
// CHECK-NEXT:   using Input = __nv_bfloat16;
// CHECK-NEXT:   using Gate = __nv_bfloat16;
// CHECK-NEXT:   using Weight = __nv_bfloat16;
// CHECK-NEXT:   using OutputGrad = __nv_bfloat16;
// CHECK-NEXT:   using InputGrad = __nv_bfloat16;
// CHECK-NEXT:   using GateGrad = __nv_bfloat16;
// CHECK-NEXT:   using WeightGrad = __nv_bfloat16;
// CHECK-NEXT:   static constexpr int kHeadDimV = 64;
// CHECK-NEXT:   static constexpr int kThreads = 256;
// CHECK-NEXT:   static constexpr int kBlocks = 528;
// CHECK-NEXT:   static constexpr float kEps = 1.000000e-06f;

// CHECK: // Kernel gdn_core_states_backward_k1_prologue: gdn_kernel.prologue at
// CHECK: // Kernel gdn_core_states_backward_k2_delta_rule_grad: gdn_kernel.delta_rule_grad at
// CHECK: // Kernel gdn_core_states_backward_k3_prologue_grad: gdn_kernel.prologue_grad at
// CHECK-NEXT: //   fuses gdn.causal_conv1d_grad + gdn.merge_qkv + gdn.l2norm_grad (q, k) + gdn.gates_grad,
// CHECK-NEXT: //   recomputing the conv and the norms; parameter gradients summed per block, then in block order (no atomics)
// CHECK-NEXT: //   activations bf16, gradients bf16, 256 conv channels, conv width 4 (silu)
// CHECK-NEXT: //   key heads 1 x 64, value heads 2 x 64, l2norm eps 1.000000e-06
// CHECK-NEXT: //   tile: 128 threads x 8-byte channel slices, at most 396 row blocks, 6 rows in flight
// CHECK-NEXT: //   bias yes, initial conv state yes, final conv state cotangent yes, beta 2 * sigmoid
// CHECK-NEXT: struct gdn_core_states_backward_k3_prologue_grad_config {
// CHECK-NEXT:   using Activation = __nv_bfloat16;
// CHECK-NEXT:   using ConvWeight = __nv_bfloat16;
// CHECK-NEXT:   using ConvState = __nv_bfloat16;
// CHECK-NEXT:   using GateInput = __nv_bfloat16;
// CHECK-NEXT:   using GateParam = float;
// CHECK-NEXT:   using ActivationGrad = __nv_bfloat16;
// CHECK-NEXT:   using ConvStateGrad = __nv_bfloat16;
// CHECK-NEXT:   using GateInputGrad = __nv_bfloat16;
// CHECK-NEXT:   using ConvWeightGrad = __nv_bfloat16;
// CHECK-NEXT:   using GateParamGrad = float;
// CHECK:        static constexpr int kConvWidth = 4;
// CHECK-NEXT:   static constexpr int kVectorBytes = 8;
// CHECK-NEXT:   static constexpr int kThreads = 128;
// CHECK-NEXT:   static constexpr int kMinBlocksPerSM = 3;
// CHECK-NEXT:   static constexpr int kRowsInFlight = 6;
// CHECK-NEXT:   static constexpr int kRowBlocks = 396;
// CHECK-NEXT:   static constexpr int kGateBlocks = 132;
// CHECK-NEXT:   static constexpr bool kSilu = true;
// CHECK-NEXT:   static constexpr bool kHasBias = true;
// CHECK-NEXT:   static constexpr bool kHasInitialState = true;
// CHECK-NEXT:   static constexpr bool kHasFinalState = true;
// CHECK-NEXT:   static constexpr bool kNegEigval = true;

// The gated RMSNorm backward: scratch for its most blocks, whatever its rows.
// CHECK: return gdn::device::epilogueBackwardWorkspaceBytes<gdn_core_states_backward_k0_gated_rmsnorm_grad_config>(
// CHECK-NEXT: static_cast<int64_t>(gdn_core_states_backward_k0_gated_rmsnorm_grad_config::kBlocks) *
// CHECK-NEXT: gdn::device::EpilogueBackwardShape<gdn_core_states_backward_k0_gated_rmsnorm_grad_config>::kMinRowsPerBlock);
// CHECK: if (!gdn::checkTensor(operands[3], GDN_BF16, {64}))
// CHECK: if (!gdn::checkTensor(results[2], GDN_BF16, {64}))
// CHECK: for (const gdn_tensor_t *tensor : {&operands[0], &operands[1], &operands[2],
// CHECK-NEXT: &results[0], &results[1]})
// CHECK: args.dy = static_cast<const __nv_bfloat16 *>(operands[0].data);
// CHECK: args.dweight = static_cast<__nv_bfloat16 *>(results[2].data);
// CHECK: args.rows = operands[0].shape[0] * 2;
// CHECK-NEXT: return gdn::device::launchEpilogueBackward<Config>(args, scratch, stream) ==

// The prologue backward: parameters by the attributes' sizes, states per
// sequence, the optional gradients after the gates'.
// CHECK: return gdn::device::prologueBackwardWorkspaceBytes<gdn_core_states_backward_k3_prologue_grad_config>(packing->buffer_tokens);
// CHECK: if (!gdn::checkTensor(operands[0], GDN_BF16, {tokens, 256}))
// CHECK-NEXT: return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT: if (!gdn::checkTensor(operands[1], GDN_BF16, {256, 4}))
// CHECK-NEXT: return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT: if (!gdn::checkTensor(operands[2], GDN_BF16, {256}))
// CHECK-NEXT: return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT: if (!gdn::checkTensor(operands[3], GDN_BF16, {seqs, 256, 3}))
// CHECK: if (!gdn::checkTensor(operands[6], GDN_F32, {2}))
// CHECK: if (!gdn::checkTensor(operands[11], GDN_F32, {tokens, 2}))
// CHECK: if (!gdn::checkTensor(operands[13], GDN_BF16, {seqs, 256, 3}))
// CHECK: if (!gdn::checkTensor(results[1], GDN_BF16, {256, 4}))
// CHECK: if (!gdn::checkTensor(results[4], GDN_F32, {2}))
// CHECK: if (!gdn::checkTensor(results[6], GDN_BF16, {256}))
// CHECK-NEXT: return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT: if (!gdn::checkTensor(results[7], GDN_BF16, {seqs, 256, 3}))
// CHECK: {&operands[0], &operands[8], &operands[9],
// CHECK-NEXT: &operands[10], &results[0]})
// CHECK: gdn::device::PrologueBackwardArgs<Config> args = {};
// CHECK: args.bias = static_cast<const __nv_bfloat16 *>(operands[2].data);
// CHECK-NEXT: args.dbias = static_cast<__nv_bfloat16 *>(results[6].data);
// CHECK-NEXT: args.initialState = static_cast<const __nv_bfloat16 *>(operands[3].data);
// CHECK-NEXT: args.dinitialState = static_cast<__nv_bfloat16 *>(results[7].data);
// CHECK-NEXT: args.dfinalState = static_cast<const __nv_bfloat16 *>(operands[13].data);
// CHECK: args.dg = static_cast<const float *>(operands[11].data);
// CHECK: args.metadata = gdn::device::PackingWorkspace::carve(packing->workspace);
// CHECK-NEXT: return gdn::device::launchPrologueBackward<Config>(args, scratch, stream) ==

// CHECK: gdn_core_states_backward_arg_roles[] = {GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER, GDN_ROLE_PARAMETER, GDN_ROLE_PER_SEQUENCE, GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER, GDN_ROLE_PARAMETER, GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER, GDN_ROLE_CU_SEQLENS, GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_PER_SEQUENCE};
// CHECK: gdn_core_states_backward_result_roles[] = {GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER, GDN_ROLE_PARAMETER, GDN_ROLE_PER_SEQUENCE, GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER, GDN_ROLE_PARAMETER, GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER};
// CHECK: // scratch of gdn_core_states_backward_k0_gated_rmsnorm_grad
// CHECK-NEXT: {
// CHECK-NEXT: const gdn_packing_t counts = {nullptr, nullptr, static_cast<int32_t>(0), static_cast<int32_t>(args[{{[0-9]+}}].shape[0]), nullptr};
// CHECK: // scratch of gdn_core_states_backward_k3_prologue_grad
// CHECK: // p0: validated by its first consumer, gdn_core_states_backward_k1_prologue
// CHECK-NOT: buildPackingMetadata

// -----

func.func @width_five(%x: tensor<?x256xbf16>, %w: tensor<256x5xbf16>, %a: tensor<?x2xbf16>,
                      %p32: tensor<2xf32>, %dq: tensor<?x1x64xbf16>, %dv: tensor<?x2x64xbf16>,
                      %dg: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{conv_width = 5 exceeds the kernel's limit of 4}}
  %0:6 = gdn_kernel.prologue_grad %x, %w, %a, %a, %p32, %p32, %p cotangents(%dq, %dq, %dv, %dg, %dg)
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64,
       conv_width = 5 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64,
       allow_neg_eigval = false, threads = 128 : i64, vector_bytes = 8 : i64,
       rows_in_flight = 6 : i64, row_blocks = 8 : i64}
      : (tensor<?x256xbf16>, tensor<256x5xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>,
         tensor<2xf32>, !gdn.packing<seqs = ?, tokens = ?>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>,
         tensor<?x2x64xbf16>, tensor<?x2xf32>, tensor<?x2xf32>)
      -> (tensor<?x256xbf16>, tensor<256x5xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

func.func @vector_bytes(%x: tensor<?x256xbf16>, %w: tensor<256x4xbf16>, %a: tensor<?x2xbf16>, %b: tensor<?x2xbf16>,
    %p32: tensor<2xf32>, %dq: tensor<?x1x64xbf16>, %dv: tensor<?x2x64xbf16>, %dg: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{vector_bytes = 4 must be 8 or 16}}
  %0:6 = gdn_kernel.prologue_grad %x, %w, %a, %b, %p32, %p32, %p cotangents(%dq, %dq, %dv, %dg, %dg)
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 128 : i64, vector_bytes = 4 : i64, rows_in_flight = 6 : i64, row_blocks = 8 : i64}
      : (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>,
         !gdn.packing<seqs = ?, tokens = ?>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2xf32>, tensor<?x2xf32>)
      -> (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

func.func @gqa_grouping(%x: tensor<?x256xbf16>, %w: tensor<256x4xbf16>, %a: tensor<?x2xbf16>, %b: tensor<?x2xbf16>,
    %p32: tensor<2xf32>, %dq: tensor<?x1x64xbf16>, %dv: tensor<?x2x64xbf16>, %dg: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{value heads (2) must be a multiple of key heads (3)}}
  %0:6 = gdn_kernel.prologue_grad %x, %w, %a, %b, %p32, %p32, %p cotangents(%dq, %dq, %dv, %dg, %dg)
      {key_heads = 3 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 128 : i64, vector_bytes = 8 : i64, rows_in_flight = 6 : i64, row_blocks = 8 : i64}
      : (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>,
         !gdn.packing<seqs = ?, tokens = ?>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2xf32>, tensor<?x2xf32>)
      -> (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

func.func @mixed_gate_inputs(%x: tensor<?x256xbf16>, %w: tensor<256x4xbf16>, %a: tensor<?x2xbf16>, %b: tensor<?x2xf16>,
    %p32: tensor<2xf32>, %dq: tensor<?x1x64xbf16>, %dv: tensor<?x2x64xbf16>, %dg: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{a and b must have one element type, found 'bf16' and 'f16'}}
  %0:6 = gdn_kernel.prologue_grad %x, %w, %a, %b, %p32, %p32, %p cotangents(%dq, %dq, %dv, %dg, %dg)
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 128 : i64, vector_bytes = 8 : i64, rows_in_flight = 6 : i64, row_blocks = 8 : i64}
      : (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xf16>, tensor<2xf32>, tensor<2xf32>,
         !gdn.packing<seqs = ?, tokens = ?>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2xf32>, tensor<?x2xf32>)
      -> (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

func.func @narrow_cotangents(%x: tensor<?x256xbf16>, %w: tensor<256x4xbf16>, %a: tensor<?x2xbf16>, %b: tensor<?x2xbf16>,
    %p32: tensor<2xf32>, %dq: tensor<?x1x64xf32>, %dv: tensor<?x2x64xf32>, %dg: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{mixed_qkv ('bf16') must be at least as wide as the cotangents ('tensor<?x1x64xf32>')}}
  %0:6 = gdn_kernel.prologue_grad %x, %w, %a, %b, %p32, %p32, %p cotangents(%dq, %dq, %dv, %dg, %dg)
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 128 : i64, vector_bytes = 8 : i64, rows_in_flight = 6 : i64, row_blocks = 8 : i64}
      : (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>,
         !gdn.packing<seqs = ?, tokens = ?>, tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<?x2x64xf32>, tensor<?x2xf32>, tensor<?x2xf32>)
      -> (tensor<?x256xf32>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

func.func @head_lanes(%x: tensor<?x384xf32>, %w: tensor<384x4xf32>, %a: tensor<?x2xbf16>, %b: tensor<?x2xbf16>,
    %p32: tensor<2xf32>, %dq: tensor<?x1x128xf32>, %dv: tensor<?x2x64xf32>, %dg: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{a key head (128 x 'f32') must fill a power-of-two group of at most 32 lanes of 8 bytes}}
  %0:6 = gdn_kernel.prologue_grad %x, %w, %a, %b, %p32, %p32, %p cotangents(%dq, %dq, %dv, %dg, %dg)
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 128 : i64, head_dim_v = 64 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 128 : i64, vector_bytes = 8 : i64, rows_in_flight = 6 : i64, row_blocks = 8 : i64}
      : (tensor<?x384xf32>, tensor<384x4xf32>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>,
         !gdn.packing<seqs = ?, tokens = ?>, tensor<?x1x128xf32>, tensor<?x1x128xf32>, tensor<?x2x64xf32>, tensor<?x2xf32>, tensor<?x2xf32>)
      -> (tensor<?x384xf32>, tensor<384x4xf32>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

func.func @threads(%x: tensor<?x256xbf16>, %w: tensor<256x4xbf16>, %a: tensor<?x2xbf16>, %b: tensor<?x2xbf16>,
    %p32: tensor<2xf32>, %dq: tensor<?x1x64xbf16>, %dv: tensor<?x2x64xbf16>, %dg: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{threads = 100 must be a multiple of 32, at most 1024}}
  %0:6 = gdn_kernel.prologue_grad %x, %w, %a, %b, %p32, %p32, %p cotangents(%dq, %dq, %dv, %dg, %dg)
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 100 : i64, vector_bytes = 8 : i64, rows_in_flight = 6 : i64, row_blocks = 8 : i64}
      : (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>,
         !gdn.packing<seqs = ?, tokens = ?>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2xf32>, tensor<?x2xf32>)
      -> (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

func.func @rows_in_flight(%x: tensor<?x256xbf16>, %w: tensor<256x4xbf16>, %a: tensor<?x2xbf16>, %b: tensor<?x2xbf16>,
    %p32: tensor<2xf32>, %dq: tensor<?x1x64xbf16>, %dv: tensor<?x2x64xbf16>, %dg: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{rows_in_flight (9) must be at most 8}}
  %0:6 = gdn_kernel.prologue_grad %x, %w, %a, %b, %p32, %p32, %p cotangents(%dq, %dq, %dv, %dg, %dg)
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 128 : i64, vector_bytes = 8 : i64, rows_in_flight = 9 : i64, row_blocks = 8 : i64}
      : (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>,
         !gdn.packing<seqs = ?, tokens = ?>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2xf32>, tensor<?x2xf32>)
      -> (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

func.func @row_blocks(%x: tensor<?x256xbf16>, %w: tensor<256x4xbf16>, %a: tensor<?x2xbf16>, %b: tensor<?x2xbf16>,
    %p32: tensor<2xf32>, %dq: tensor<?x1x64xbf16>, %dv: tensor<?x2x64xbf16>, %dg: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{row_blocks (70000) must be at most 65535 (the grid's y limit)}}
  %0:6 = gdn_kernel.prologue_grad %x, %w, %a, %b, %p32, %p32, %p cotangents(%dq, %dq, %dv, %dg, %dg)
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 128 : i64, vector_bytes = 8 : i64, rows_in_flight = 6 : i64, row_blocks = 70000 : i64}
      : (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>,
         !gdn.packing<seqs = ?, tokens = ?>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2xf32>, tensor<?x2xf32>)
      -> (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

func.func @shared_memory(%x: tensor<?x256xbf16>, %w: tensor<256x4xbf16>, %a: tensor<?x2xbf16>, %b: tensor<?x2xbf16>,
    %p32: tensor<2xf32>, %dq: tensor<?x1x64xbf16>, %dv: tensor<?x2x64xbf16>, %dg: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{threads = 1024 with rows_in_flight = 8 needs 262152 bytes of shared memory, above 232448}}
  %0:6 = gdn_kernel.prologue_grad %x, %w, %a, %b, %p32, %p32, %p cotangents(%dq, %dq, %dv, %dg, %dg)
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 1024 : i64, vector_bytes = 16 : i64, rows_in_flight = 8 : i64, row_blocks = 8 : i64}
      : (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>,
         !gdn.packing<seqs = ?, tokens = ?>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2xf32>, tensor<?x2xf32>)
      -> (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

func.func @negative_eps(%x: tensor<?x256xbf16>, %w: tensor<256x4xbf16>, %a: tensor<?x2xbf16>, %b: tensor<?x2xbf16>,
    %p32: tensor<2xf32>, %dq: tensor<?x1x64xbf16>, %dv: tensor<?x2x64xbf16>, %dg: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{l2norm_eps must be >= 0}}
  %0:6 = gdn_kernel.prologue_grad %x, %w, %a, %b, %p32, %p32, %p cotangents(%dq, %dq, %dv, %dg, %dg)
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = -1.0 : f64, allow_neg_eigval = false, threads = 128 : i64, vector_bytes = 8 : i64, rows_in_flight = 6 : i64, row_blocks = 8 : i64}
      : (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>,
         !gdn.packing<seqs = ?, tokens = ?>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2xf32>, tensor<?x2xf32>)
      -> (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

func.func @gate_grad_shape(%x: tensor<?x256xbf16>, %w: tensor<256x4xbf16>, %a: tensor<?x2xbf16>, %b: tensor<?x2xbf16>,
    %p32: tensor<2xf32>, %dq: tensor<?x1x64xbf16>, %dv: tensor<?x2x64xbf16>, %dg: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{a_grad must have shape [?, 2], found 'tensor<?x3xbf16>'}}
  %0:6 = gdn_kernel.prologue_grad %x, %w, %a, %b, %p32, %p32, %p cotangents(%dq, %dq, %dv, %dg, %dg)
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 128 : i64, vector_bytes = 8 : i64, rows_in_flight = 6 : i64, row_blocks = 8 : i64}
      : (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>,
         !gdn.packing<seqs = ?, tokens = ?>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2xf32>, tensor<?x2xf32>)
      -> (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x3xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

func.func @weight_grad_shape(%x: tensor<?x256xbf16>, %w: tensor<256x4xbf16>, %a: tensor<?x2xbf16>, %b: tensor<?x2xbf16>,
    %p32: tensor<2xf32>, %dq: tensor<?x1x64xbf16>, %dv: tensor<?x2x64xbf16>, %dg: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{conv_weight_grad must have shape [256, 4], found 'tensor<256x3xbf16>'}}
  %0:6 = gdn_kernel.prologue_grad %x, %w, %a, %b, %p32, %p32, %p cotangents(%dq, %dq, %dv, %dg, %dg)
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 128 : i64, vector_bytes = 8 : i64, rows_in_flight = 6 : i64, row_blocks = 8 : i64}
      : (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>,
         !gdn.packing<seqs = ?, tokens = ?>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2xf32>, tensor<?x2xf32>)
      -> (tensor<?x256xbf16>, tensor<256x3xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

func.func @missing_bias_gradient(%x: tensor<?x256xbf16>, %w: tensor<256x4xbf16>, %bias: tensor<256xbf16>,
    %a: tensor<?x2xbf16>, %p32: tensor<2xf32>, %dq: tensor<?x1x64xbf16>, %dv: tensor<?x2x64xbf16>,
    %dg: tensor<?x2xf32>, %cu: tensor<?xi32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{returns 0 optional gradients but has 1 optional parameters (conv_bias, conv_initial_state): one gradient each, in that order}}
  %0:6 = gdn_kernel.prologue_grad %x, %w, %a, %a, %p32, %p32, %p bias(%bias) cotangents(%dq, %dq, %dv, %dg, %dg)
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64,
       conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64,
       allow_neg_eigval = false, threads = 128 : i64, vector_bytes = 8 : i64,
       rows_in_flight = 6 : i64, row_blocks = 8 : i64}
      : (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<256xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>,
         tensor<2xf32>, tensor<2xf32>, !gdn.packing<seqs = ?, tokens = ?>, tensor<?x1x64xbf16>,
         tensor<?x1x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2xf32>, tensor<?x2xf32>)
      -> (tensor<?x256xbf16>, tensor<256x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<2xf32>, tensor<2xf32>)
  return
}

// -----

func.func @norm_grad_rank(%dy: tensor<?x128xbf16>, %w: tensor<128xbf16>) {
  // expected-error @+1 {{x must be [T, HV, V], found 'tensor<?x128xbf16>'}}
  %0:3 = gdn_kernel.gated_rmsnorm_grad %dy, %dy, %dy, %w {eps = 1.0e-06 : f64, threads = 256 : i64, blocks = 528 : i64}
      : (tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<128xbf16>)
      -> (tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<128xbf16>)
  return
}

// -----

func.func @norm_grad_shape(%dy: tensor<?x2x128xbf16>, %w: tensor<128xbf16>) {
  // expected-error @+1 {{weight_grad must have shape [128], found 'tensor<64xbf16>'}}
  %0:3 = gdn_kernel.gated_rmsnorm_grad %dy, %dy, %dy, %w {eps = 1.0e-06 : f64, threads = 256 : i64, blocks = 528 : i64}
      : (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<128xbf16>)
      -> (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<64xbf16>)
  return
}

// -----

func.func @norm_grad_eps(%dy: tensor<?x2x128xbf16>, %w: tensor<128xbf16>) {
  // expected-error @+1 {{eps must be >= 0}}
  %0:3 = gdn_kernel.gated_rmsnorm_grad %dy, %dy, %dy, %w {eps = -1.0 : f64, threads = 256 : i64, blocks = 528 : i64}
      : (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<128xbf16>)
      -> (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<128xbf16>)
  return
}
