// gdn-translate --gdn-to-cuda on fused gated RMSNorms: the banner, the Config struct (dtypes, V, threads, eps), the kernel entry without a packing (checks, rows, launch) and whole-function entry points that need no workspace.
// RUN: gdn-opt %s --gdn-fuse | gdn-translate --gdn-to-cuda | FileCheck %s
// RUN: gdn-opt %s --gdn-fuse="threads=512" | gdn-translate --gdn-to-cuda | FileCheck %s --check-prefix=THREADS

// The Qwen3-Next epilogue: 32 value heads of 128 bf16, dynamic tokens.
// CHECK-LABEL: // @epilogue_gqa16x32: 1 kernel(s)
// CHECK-NOT: No whole-function entry point
// CHECK: // Kernel gdn_epilogue_gqa16x32_k0_gated_rmsnorm: gdn_kernel.gated_rmsnorm at loc(
// CHECK-NEXT: //   from gdn.gated_rmsnorm; x bf16, z bf16, weight bf16, y bf16
// CHECK-NEXT: //   rows of V = 128, eps 1.000000e-06, 256 threads per block, 16-byte lanes
// CHECK-NEXT: struct gdn_epilogue_gqa16x32_k0_gated_rmsnorm_config {
// CHECK-NEXT:   using Input = __nv_bfloat16;
// CHECK-NEXT:   using Gate = __nv_bfloat16;
// CHECK-NEXT:   using Weight = __nv_bfloat16;
// CHECK-NEXT:   using Output = __nv_bfloat16;
// CHECK-NEXT:   static constexpr int kHeadDimV = 128;
// CHECK-NEXT:   static constexpr int kThreads = 256;
// CHECK-NEXT:   static constexpr float kEps = 1.000000e-06f;
// CHECK-NEXT: };
// No packing parameter: tokens are the rows of x.
// CHECK: static int gdn_epilogue_gqa16x32_k0_gated_rmsnorm_validate(const gdn_tensor_t *operands, const gdn_tensor_t *results) {
// CHECK-NEXT:   if (!operands || !results)
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   const int64_t tokens = operands[0].shape[0];
// CHECK-NEXT:   if (!gdn::checkTensor(operands[0], GDN_BF16, {tokens, 32, 128}))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   if (!gdn::checkTensor(operands[1], GDN_BF16, {tokens, 32, 128}))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   if (!gdn::checkTensor(operands[2], GDN_BF16, {128}))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   if (!gdn::checkTensor(results[0], GDN_BF16, {tokens, 32, 128}))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   if (!gdn::isVectorAligned(operands[0]) ||
// CHECK-NEXT:       !gdn::isVectorAligned(operands[1]) ||
// CHECK-NEXT:       !gdn::isVectorAligned(results[0]))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   return GDN_SUCCESS;
// CHECK-NEXT: }
// CHECK: extern "C" int gdn_epilogue_gqa16x32_k0_gated_rmsnorm(const gdn_tensor_t *operands, const gdn_tensor_t *results, cudaStream_t stream) {
// CHECK-NEXT:   using Config = gdn_epilogue_gqa16x32_k0_gated_rmsnorm_config;
// CHECK-NEXT:   if (int error = gdn_epilogue_gqa16x32_k0_gated_rmsnorm_validate(operands, results))
// CHECK-NEXT:     return error;
// CHECK-NEXT:   const int64_t tokens = operands[0].shape[0];
// CHECK-NEXT:   gdn::device::EpilogueArgs<Config> args;
// CHECK-NEXT:   args.x = static_cast<const __nv_bfloat16 *>(operands[0].data);
// CHECK-NEXT:   args.z = static_cast<const __nv_bfloat16 *>(operands[1].data);
// CHECK-NEXT:   args.weight = static_cast<const __nv_bfloat16 *>(operands[2].data);
// CHECK-NEXT:   args.y = static_cast<__nv_bfloat16 *>(results[0].data);
// CHECK-NEXT:   args.rows = tokens * 32;
// CHECK-NEXT:   if (args.rows == 0)
// CHECK-NEXT:     return GDN_SUCCESS;
// CHECK-NEXT:   constexpr int64_t kRowsPerBlock = Config::kThreads / (Config::kHeadDimV * sizeof(typename Config::Input) / 16);
// CHECK-NEXT:   int64_t blocks = (args.rows + kRowsPerBlock - 1) / kRowsPerBlock;
// CHECK-NEXT:   if (blocks > 65535 * 8)
// CHECK-NEXT:     blocks = 65535 * 8;
// CHECK-NEXT:   gdn::device::gatedRMSNormKernel<Config>
// CHECK-NEXT:       <<<static_cast<unsigned>(blocks), Config::kThreads, 0, stream>>>(args);
// CHECK-NEXT:   return cudaGetLastError() == cudaSuccess ? GDN_SUCCESS : GDN_ERROR_CUDA;
// CHECK-NEXT: }
// CHECK: //===--- @epilogue_gqa16x32: whole-function entry points ---===//
// CHECK: static const gdn_role_t gdn_epilogue_gqa16x32_arg_roles[] = {GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER};
// CHECK: static const gdn_role_t gdn_epilogue_gqa16x32_result_roles[] = {GDN_ROLE_TOKENS};
// CHECK-NEXT: extern "C" const gdn_signature_t gdn_epilogue_gqa16x32_signature = {"epilogue_gqa16x32", 3, 1,
// Nothing to lay out: no packing, no temporaries.
// CHECK: static size_t gdn_epilogue_gqa16x32_layout(const gdn_tensor_t *args, size_t *offsets) {
// CHECK-NEXT:   size_t bytes = 0;
// CHECK-NEXT:   offsets[0] = bytes;
// CHECK-NEXT:   return bytes;
// CHECK: static int gdn_epilogue_gqa16x32_check_args(const gdn_tensor_t *args) {
// CHECK:   if (!gdn::checkTensor(args[0], GDN_BF16, {gdn::kAnySize, 32, 128}))
// CHECK:   if (!gdn::checkTensor(args[2], GDN_BF16, {128}))
// CHECK: extern "C" size_t gdn_epilogue_gqa16x32_workspace_bytes(const gdn_tensor_t *args) {
// CHECK-NEXT:   size_t offsets[1];
// CHECK: extern "C" int gdn_epilogue_gqa16x32_result_shapes(const gdn_tensor_t *args, gdn_tensor_t *results) {
// CHECK:   results[0].shape[0] = args[0].shape[0];
// CHECK-NEXT:   results[0].shape[1] = 32;
// CHECK-NEXT:   results[0].shape[2] = 128;
// CHECK: extern "C" int gdn_epilogue_gqa16x32(const gdn_tensor_t *args, gdn_tensor_t *results, void *workspace,
// CHECK-NOT: gdn_packing_t
// CHECK-NOT: char *base
// CHECK:   if (!gdn::checkTensor(results[0], GDN_BF16, {args[0].shape[0], 32, 128}))
// CHECK:     const gdn_tensor_t operands[] = {args[0], args[1], args[2]};
// CHECK-NEXT:     const gdn_tensor_t outputs[] = {results[0]};
// CHECK-NEXT:     if (int error = gdn_epilogue_gqa16x32_k0_gated_rmsnorm_validate(operands, outputs))
// CHECK:     const gdn_tensor_t operands[] = {args[0], args[1], args[2]};
// CHECK-NEXT:     const gdn_tensor_t outputs[] = {results[0]};
// CHECK-NEXT:     if (int error = gdn_epilogue_gqa16x32_k0_gated_rmsnorm(operands, outputs, stream))
// Without a packing there is no device status to read: _check only
// synchronizes.
// CHECK: extern "C" int gdn_epilogue_gqa16x32_check(const gdn_tensor_t *args, const void *workspace,
// CHECK-NOT: describePackingStatus
// CHECK:   if (cudaStreamSynchronize(stream) != cudaSuccess)
// CHECK-NEXT:     return GDN_ERROR_CUDA;
// CHECK-NEXT:   return GDN_SUCCESS;
// THREADS-LABEL: // @epilogue_gqa16x32: 1 kernel(s)
// THREADS: //   rows of V = 128, eps 1.000000e-06, 512 threads per block, 16-byte lanes
// THREADS: static constexpr int kThreads = 512;
func.func @epilogue_gqa16x32(%o: tensor<?x32x128xbf16>, %z: tensor<?x32x128xbf16>,
                             %w: tensor<128xbf16>) -> tensor<?x32x128xbf16> {
  %y = gdn.gated_rmsnorm %o, %z, %w {eps = 1.0e-06 : f64}
      : (tensor<?x32x128xbf16>, tensor<?x32x128xbf16>, tensor<128xbf16>) -> tensor<?x32x128xbf16>
  return %y : tensor<?x32x128xbf16>
}

// Static tokens and one dtype per role: x bf16, z f16, weight f32.
// CHECK-LABEL: // @mixed_dtypes: 1 kernel(s)
// CHECK: //   from gdn.gated_rmsnorm; x bf16, z f16, weight f32, y bf16
// CHECK-NEXT: //   rows of V = 32, eps 1.000000e-05, 256 threads per block, 16-byte lanes
// CHECK-NEXT: struct gdn_mixed_dtypes_k0_gated_rmsnorm_config {
// CHECK-NEXT:   using Input = __nv_bfloat16;
// CHECK-NEXT:   using Gate = __half;
// CHECK-NEXT:   using Weight = float;
// CHECK-NEXT:   using Output = __nv_bfloat16;
// CHECK-NEXT:   static constexpr int kHeadDimV = 32;
// CHECK-NEXT:   static constexpr int kThreads = 256;
// CHECK-NEXT:   static constexpr float kEps = 1.000000e-05f;
// CHECK:   if (!gdn::checkTensor(operands[1], GDN_F16, {tokens, 4, 32}))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   if (!gdn::checkTensor(operands[2], GDN_F32, {32}))
// CHECK:   args.z = static_cast<const __half *>(operands[1].data);
// CHECK-NEXT:   args.weight = static_cast<const float *>(operands[2].data);
// CHECK:   args.rows = tokens * 4;
// Static sizes are checked by the whole-function entry point.
// CHECK:   if (!gdn::checkTensor(args[0], GDN_BF16, {8192, 4, 32}))
// CHECK:   results[0].shape[0] = 8192;
func.func @mixed_dtypes(%o: tensor<8192x4x32xbf16>, %z: tensor<8192x4x32xf16>, %w: tensor<32xf32>)
    -> tensor<8192x4x32xbf16> {
  %y = gdn.gated_rmsnorm %o, %z, %w {eps = 1.0e-05 : f64}
      : (tensor<8192x4x32xbf16>, tensor<8192x4x32xf16>, tensor<32xf32>) -> tensor<8192x4x32xbf16>
  return %y : tensor<8192x4x32xbf16>
}
