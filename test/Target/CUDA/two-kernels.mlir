// A function of two kernels: results no one returns live in workspace temporaries laid out after the packing metadata, and the second kernel reads the first one's output from there.
// RUN: gdn-translate --gdn-to-cuda %S/Inputs/prologue_then_rmsnorm.mlir | FileCheck %s

// CHECK-LABEL: // @prologue_then_rmsnorm: 2 kernel(s)
// CHECK-NOT: No whole-function entry point
// CHECK: struct gdn_prologue_then_rmsnorm_k0_prologue_config {
// CHECK:   static constexpr int kThreads = 64;
// CHECK-NEXT:   static constexpr int kVectorBytes = 16;
// CHECK-NEXT:   static constexpr int kTokensPerBlock = 32;
// CHECK-NEXT:   static constexpr int kRowsInFlight = 1;
// CHECK: struct gdn_prologue_then_rmsnorm_k1_gated_rmsnorm_config {
// CHECK-NEXT:   using Input = __half;
// CHECK-NEXT:   using Gate = __half;
// CHECK-NEXT:   using Weight = float;
// CHECK-NEXT:   using Output = __half;
// CHECK-NEXT:   static constexpr int kHeadDimV = 32;
// CHECK-NEXT:   static constexpr int kThreads = 128;
// CHECK: extern "C" int gdn_prologue_then_rmsnorm_k0_prologue(
// CHECK: extern "C" int gdn_prologue_then_rmsnorm_k1_gated_rmsnorm(

// z is token-indexed because the RMSNorm reads it per token.
// CHECK: static const gdn_role_t gdn_prologue_then_rmsnorm_arg_roles[] = {GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER, GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER, GDN_ROLE_PARAMETER, GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER, GDN_ROLE_CU_SEQLENS, GDN_ROLE_CU_PADDED};

// Workspace: the packing's status record, then q, k, v, g, beta (T = mixed's rows).
// CHECK: static size_t gdn_prologue_then_rmsnorm_layout(const gdn_tensor_t *args, size_t *offsets) {
// CHECK-NEXT:   size_t bytes = 0;
// CHECK-NEXT:   offsets[0] = bytes; // packing p0
// CHECK-NEXT:   bytes += gdn::alignWorkspace(gdn::device::PackingWorkspace::bytes());
// CHECK-NEXT:   offsets[1] = bytes; // temp0
// CHECK-NEXT:   bytes += gdn::alignWorkspace(sizeof(__half) * static_cast<size_t>(args[0].shape[0]) * static_cast<size_t>(2) * static_cast<size_t>(64));
// CHECK-NEXT:   offsets[2] = bytes; // temp1
// CHECK-NEXT:   bytes += gdn::alignWorkspace(sizeof(__half) * static_cast<size_t>(args[0].shape[0]) * static_cast<size_t>(2) * static_cast<size_t>(64));
// CHECK-NEXT:   offsets[3] = bytes; // temp2
// CHECK-NEXT:   bytes += gdn::alignWorkspace(sizeof(__half) * static_cast<size_t>(args[0].shape[0]) * static_cast<size_t>(4) * static_cast<size_t>(32));
// CHECK-NEXT:   offsets[4] = bytes; // temp3
// CHECK-NEXT:   bytes += gdn::alignWorkspace(sizeof(float) * static_cast<size_t>(args[0].shape[0]) * static_cast<size_t>(4));
// CHECK-NEXT:   offsets[5] = bytes; // temp4
// CHECK-NEXT:   bytes += gdn::alignWorkspace(sizeof(float) * static_cast<size_t>(args[0].shape[0]) * static_cast<size_t>(4));
// CHECK-NEXT:   offsets[6] = bytes;
// CHECK-NEXT:   return bytes;
// CHECK: extern "C" size_t gdn_prologue_then_rmsnorm_workspace_bytes(const gdn_tensor_t *args) {
// CHECK-NEXT:   size_t offsets[7];

// The result's token count is mixed_qkv's, through the prologue's v.
// CHECK: extern "C" int gdn_prologue_then_rmsnorm_result_shapes(
// CHECK:   results[0].shape[0] = args[0].shape[0];
// CHECK-NEXT:   results[0].shape[1] = 4;
// CHECK-NEXT:   results[0].shape[2] = 32;

// CHECK: extern "C" int gdn_prologue_then_rmsnorm(const gdn_tensor_t *args,
// CHECK:   char *base = static_cast<char *>(workspace);
// CHECK-NEXT:   gdn_packing_t p0 = {static_cast<const int32_t *>(args[8].data), static_cast<const int32_t *>(args[9].data), static_cast<int32_t>(args[8].shape[0] - 1), static_cast<int32_t>(args[0].shape[0]), base + offsets[0]};
// CHECK:   gdn_tensor_t temp0 = {base + offsets[1], {args[0].shape[0], 2, 64}, 3, GDN_F16};
// CHECK-NEXT:   gdn_tensor_t temp1 = {base + offsets[2], {args[0].shape[0], 2, 64}, 3, GDN_F16};
// CHECK-NEXT:   gdn_tensor_t temp2 = {base + offsets[3], {args[0].shape[0], 4, 32}, 3, GDN_F16};
// CHECK-NEXT:   gdn_tensor_t temp3 = {base + offsets[4], {args[0].shape[0], 4}, 2, GDN_F32};
// CHECK-NEXT:   gdn_tensor_t temp4 = {base + offsets[5], {args[0].shape[0], 4}, 2, GDN_F32};
// CHECK-NEXT:   if (!gdn::checkTensor(results[0], GDN_F16, {args[0].shape[0], 4, 32}))
// Both kernels are validated before anything is launched: a bad z (k1's
// operand) cannot leave the prologue's launch behind.
// CHECK:     const gdn_tensor_t operands[] = {args[0], args[1], args[2], args[3], args[4], args[5]};
// CHECK-NEXT:     const gdn_tensor_t outputs[] = {temp0, temp1, temp2, temp3, temp4};
// CHECK-NEXT:     if (int error = gdn_prologue_then_rmsnorm_k0_prologue_validate(operands, outputs, &p0))
// CHECK:     if (int error = gdn_prologue_then_rmsnorm_k1_gated_rmsnorm_validate(operands, outputs))
// The prologue is the packing's first consumer: it validates the offsets and
// writes the status record itself, so no metadata kernel runs before it.
// CHECK:   // p0: validated by its first consumer, gdn_prologue_then_rmsnorm_k0_prologue
// CHECK-NOT: buildPackingMetadata
// CHECK:     const gdn_tensor_t operands[] = {args[0], args[1], args[2], args[3], args[4], args[5]};
// CHECK-NEXT:     const gdn_tensor_t outputs[] = {temp0, temp1, temp2, temp3, temp4};
// CHECK-NEXT:     if (int error = gdn_prologue_then_rmsnorm_k0_prologue(operands, outputs, &p0, stream))
// CHECK-NEXT:       return error;
// CHECK-NEXT:   }
// CHECK-NEXT:   {
// CHECK-NEXT:     const gdn_tensor_t operands[] = {temp2, args[6], args[7]};
// CHECK-NEXT:     const gdn_tensor_t outputs[] = {results[0]};
// CHECK-NEXT:     if (int error = gdn_prologue_then_rmsnorm_k1_gated_rmsnorm(operands, outputs, stream))
// CHECK-NEXT:       return error;
// CHECK-NEXT:   }
// CHECK-NEXT:   return GDN_SUCCESS;
// CHECK: extern "C" int gdn_prologue_then_rmsnorm_check(
// CHECK:   if (int error = gdn::device::describePackingStatus(
// CHECK-NEXT:           reinterpret_cast<const gdn_status_t *>(static_cast<const char *>(workspace) + offsets[0]),
