// gdn-translate --gdn-to-cuda folds the gated RMSNorm's recomputation into
// its backward (NormRecomputation.h): when the recomputed y feeds only
// out_proj's gdn.linear_grad, whose x gradient feeds only the norm's
// backward on the same operands, the recomputation does not run, the
// projection's gradient runs in halves (gdnrt_linear_data_grad, then the
// norm backward writing y as well, then gdnrt_linear_weight_grad on that y).
// Any other use keeps the three ops as they are.
// RUN: gdn-translate --gdn-to-cuda %s | FileCheck %s

// CHECK-LABEL: // @out_proj_backward: 2 kernel(s)
// CHECK: struct gdn_out_proj_backward_k1_gated_rmsnorm_grad_config {
// CHECK:   using Output = __nv_bfloat16; // also writes y of the gdn_kernel.gated_rmsnorm at
// CHECK: static int gdn_out_proj_backward_k1_gated_rmsnorm_grad_validate(
// CHECK:   // results[3]: y of the recomputed norm, which this kernel writes
// CHECK-NEXT:   if (!gdn::checkTensor(results[3], GDN_BF16, {tokens, 4, 64}))
// CHECK-NEXT:     return GDN_ERROR_INVALID_ARGUMENT;
// CHECK-NEXT:   for (const gdn_tensor_t *tensor : {&operands[0], &operands[1], &operands[2],
// CHECK-NEXT:                                      &results[0], &results[1], &results[3]})
// CHECK:   args.dweight = static_cast<__nv_bfloat16 *>(results[2].data);
// CHECK-NEXT:   args.y = static_cast<__nv_bfloat16 *>(results[3].data);
// CHECK: extern "C" int gdn_out_proj_backward(
// CHECK-NOT: gdn_out_proj_backward_k0_gated_rmsnorm_validate(
// CHECK:     const gdn_tensor_t outputs[] = {results[0], results[1], results[2], temp0};
// CHECK-NEXT:     if (int error = gdn_out_proj_backward_k1_gated_rmsnorm_grad_validate(
// CHECK:   // gdn_out_proj_backward_k0_gated_rmsnorm does not run: the norm backward below writes its output
// CHECK-NOT: gdn_out_proj_backward_k0_gated_rmsnorm(operands
// CHECK:   if (int error = gdnrt_linear_data_grad(context, &args[0], &args[4], &temp1))
// CHECK:     const gdn_tensor_t operands[] = {temp1, args[1], args[2], args[3]};
// CHECK-NEXT:     const gdn_tensor_t outputs[] = {results[0], results[1], results[2], temp0};
// CHECK-NEXT:     if (int error = gdn_out_proj_backward_k1_gated_rmsnorm_grad(operands, outputs, scratch0, stream))
// CHECK:   if (int error = gdnrt_linear_weight_grad(context, &args[0], &temp0, &results[3]))
// CHECK-NOT: gdnrt_linear_grad(
// CHECK: return GDN_SUCCESS;
func.func @out_proj_backward(%dy: tensor<?x256xbf16>, %o: tensor<?x4x64xbf16>, %z: tensor<?x4x64xf32>,
                             %w: tensor<64xbf16>, %wo: tensor<256x256xbf16>)
    -> (tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<64xbf16>, tensor<256x256xbf16>) {
  %y = gdn_kernel.gated_rmsnorm %o, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64}
      : (tensor<?x4x64xbf16>, tensor<?x4x64xf32>, tensor<64xbf16>) -> tensor<?x4x64xbf16>
  %dn, %dwo = gdn.linear_grad %dy, %y, %wo
      : (tensor<?x256xbf16>, tensor<?x4x64xbf16>, tensor<256x256xbf16>)
      -> (tensor<?x4x64xbf16>, tensor<256x256xbf16>)
  %do, %dz, %dw = gdn_kernel.gated_rmsnorm_grad %dn, %o, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64, blocks = 528 : i64}
      : (tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4x64xf32>, tensor<64xbf16>)
      -> (tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<64xbf16>)
  return %do, %dz, %dw, %dwo : tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<64xbf16>, tensor<256x256xbf16>
}

// y is also returned: the recomputation runs, the projection's gradient is
// one call.
// CHECK-LABEL: // @output_returned: 2 kernel(s)
// CHECK-NOT: also writes y
// CHECK: extern "C" int gdn_output_returned(
// CHECK:     if (int error = gdn_output_returned_k0_gated_rmsnorm(operands, outputs, stream))
// CHECK:   if (int error = gdnrt_linear_grad(context,
// CHECK:     const gdn_tensor_t outputs[] = {results[0], results[1], results[2]};
// CHECK-NEXT:     if (int error = gdn_output_returned_k1_gated_rmsnorm_grad(operands, outputs, scratch0, stream))
// CHECK-NOT: gdnrt_linear_weight_grad
// CHECK: return GDN_SUCCESS;
func.func @output_returned(%dy: tensor<?x256xbf16>, %o: tensor<?x4x64xbf16>, %z: tensor<?x4x64xf32>,
                           %w: tensor<64xbf16>, %wo: tensor<256x256xbf16>)
    -> (tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<64xbf16>, tensor<256x256xbf16>, tensor<?x4x64xbf16>) {
  %y = gdn_kernel.gated_rmsnorm %o, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64}
      : (tensor<?x4x64xbf16>, tensor<?x4x64xf32>, tensor<64xbf16>) -> tensor<?x4x64xbf16>
  %dn, %dwo = gdn.linear_grad %dy, %y, %wo
      : (tensor<?x256xbf16>, tensor<?x4x64xbf16>, tensor<256x256xbf16>)
      -> (tensor<?x4x64xbf16>, tensor<256x256xbf16>)
  %do, %dz, %dw = gdn_kernel.gated_rmsnorm_grad %dn, %o, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64, blocks = 528 : i64}
      : (tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4x64xf32>, tensor<64xbf16>)
      -> (tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<64xbf16>)
  return %do, %dz, %dw, %dwo, %y : tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<64xbf16>, tensor<256x256xbf16>, tensor<?x4x64xbf16>
}

// The backward normalises another tensor than the recomputation did: no
// fold.
// CHECK-LABEL: // @other_operands: 2 kernel(s)
// CHECK-NOT: also writes y
// CHECK: extern "C" int gdn_other_operands(
// CHECK:     if (int error = gdn_other_operands_k0_gated_rmsnorm(operands, outputs, stream))
// CHECK:   if (int error = gdnrt_linear_grad(context,
// CHECK-NOT: gdnrt_linear_weight_grad
// CHECK: return GDN_SUCCESS;
func.func @other_operands(%dy: tensor<?x256xbf16>, %o: tensor<?x4x64xbf16>, %z: tensor<?x4x64xf32>,
                          %z2: tensor<?x4x64xf32>, %w: tensor<64xbf16>, %wo: tensor<256x256xbf16>)
    -> (tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<64xbf16>, tensor<256x256xbf16>) {
  %y = gdn_kernel.gated_rmsnorm %o, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64}
      : (tensor<?x4x64xbf16>, tensor<?x4x64xf32>, tensor<64xbf16>) -> tensor<?x4x64xbf16>
  %dn, %dwo = gdn.linear_grad %dy, %y, %wo
      : (tensor<?x256xbf16>, tensor<?x4x64xbf16>, tensor<256x256xbf16>)
      -> (tensor<?x4x64xbf16>, tensor<256x256xbf16>)
  %do, %dz, %dw = gdn_kernel.gated_rmsnorm_grad %dn, %o, %z2, %w {eps = 1.0e-06 : f64, threads = 256 : i64, blocks = 528 : i64}
      : (tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4x64xf32>, tensor<64xbf16>)
      -> (tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<64xbf16>)
  return %do, %dz, %dw, %dwo : tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<64xbf16>, tensor<256x256xbf16>
}

// The weight gradient is read before the norm's backward: its GEMM cannot
// move after it, so nothing folds.
// CHECK-LABEL: // @weight_gradient_read_first: 2 kernel(s)
// CHECK-NOT: also writes y
// CHECK: extern "C" int gdn_weight_gradient_read_first(
// CHECK:   if (int error = gdnrt_linear_grad(context,
// CHECK-NOT: gdnrt_linear_weight_grad
// CHECK: return GDN_SUCCESS;
func.func @weight_gradient_read_first(%dy: tensor<?x256xbf16>, %o: tensor<?x4x64xbf16>, %z: tensor<?x4x64xf32>,
                                      %w: tensor<64xbf16>, %wo: tensor<256x256xbf16>)
    -> (tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<64xbf16>, tensor<256x256xbf16>) {
  %y = gdn_kernel.gated_rmsnorm %o, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64}
      : (tensor<?x4x64xbf16>, tensor<?x4x64xf32>, tensor<64xbf16>) -> tensor<?x4x64xbf16>
  %dn, %dwo = gdn.linear_grad %dy, %y, %wo
      : (tensor<?x256xbf16>, tensor<?x4x64xbf16>, tensor<256x256xbf16>)
      -> (tensor<?x4x64xbf16>, tensor<256x256xbf16>)
  %twice = arith.addf %dwo, %dwo : tensor<256x256xbf16>
  %do, %dz, %dw = gdn_kernel.gated_rmsnorm_grad %dn, %o, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64, blocks = 528 : i64}
      : (tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4x64xf32>, tensor<64xbf16>)
      -> (tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<64xbf16>)
  return %do, %dz, %dw, %twice : tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<64xbf16>, tensor<256x256xbf16>
}
