// gdn-translate --gdn-to-cuda reads a block of leading rows in place of its
// source (SliceViews.h): a view at an offset into the source's buffer, with
// no workspace and no copy. A slice that is returned (results live in the
// caller's buffers) or whose rows do not start on a 256-byte boundary (the
// alignment of workspace pieces, which kernels rely on) is copied.
// RUN: gdn-translate --gdn-to-cuda %s | FileCheck %s

// Rows of an argument, rows of those rows, and rows of a result: views;
// the workspace holds the projection's output only.
// CHECK-LABEL: extern "C" int gdn_weight_rows(
// CHECK: gdn_tensor_t temp0 = {base + offsets[0], {args[0].shape[0], 32}, 2, GDN_BF16};
// CHECK-NEXT: gdn_tensor_t view0 = {static_cast<char *>(args[1].data) + 65536, {64, 256}, 2, GDN_BF16};
// CHECK-NEXT: gdn_tensor_t view1 = {static_cast<char *>(view0.data) + 16384, {32, 256}, 2, GDN_BF16};
// CHECK-NEXT: gdn_tensor_t view2 = {static_cast<char *>(results[0].data) + 0, {2, 256}, 2, GDN_BF16};
// CHECK-NOT: cudaMemcpyAsync
// CHECK: // view0: rows of args[1], read in place
// CHECK-NEXT: // tensor.extract_slice at
// CHECK-NEXT: // view1: rows of view0, read in place
// CHECK-NEXT: // gdn.linear at
// CHECK-NEXT: if (int error = gdnrt_linear(context, &args[0], &view1, &temp0))
// CHECK: if (int error = gdnrt_linear(context, &temp0, &args[3], &results[0]))
// CHECK: // view2: rows of results[0], read in place
// CHECK-NEXT: // gdn.linear at
// CHECK-NEXT: if (int error = gdnrt_linear(context, &view2, &args[2], &results[1]))
// CHECK-NOT: cudaMemcpyAsync
// CHECK: return GDN_SUCCESS;
func.func @weight_rows(%x: tensor<?x256xbf16>, %w: tensor<192x256xbf16>, %w2: tensor<32x256xbf16>,
                       %w3: tensor<256x32xbf16>)
    -> (tensor<?x256xbf16>, tensor<2x32xbf16>, tensor<?x32xbf16>) {
  %bottom = tensor.extract_slice %w[128, 0] [64, 256] [1, 1] : tensor<192x256xbf16> to tensor<64x256xbf16>
  %inner = tensor.extract_slice %bottom[32, 0] [32, 256] [1, 1] : tensor<64x256xbf16> to tensor<32x256xbf16>
  %h = gdn.linear %x, %inner : (tensor<?x256xbf16>, tensor<32x256xbf16>) -> tensor<?x32xbf16>
  %y = gdn.linear %x, %w2 : (tensor<?x256xbf16>, tensor<32x256xbf16>) -> tensor<?x32xbf16>
  %x2 = gdn.linear %h, %w3 : (tensor<?x32xbf16>, tensor<256x32xbf16>) -> tensor<?x256xbf16>
  %first = tensor.extract_slice %x2[0, 0] [2, 256] [1, 1] : tensor<?x256xbf16> to tensor<2x256xbf16>
  %z = gdn.linear %first, %w2 : (tensor<2x256xbf16>, tensor<32x256xbf16>) -> tensor<2x32xbf16>
  return %x2, %z, %y : tensor<?x256xbf16>, tensor<2x32xbf16>, tensor<?x32xbf16>
}

// Returned, and at 128 bytes into its source: copies.
// CHECK-LABEL: extern "C" int gdn_copied_rows(
// CHECK-NOT: gdn_tensor_t view
// CHECK: // tensor.extract_slice at
// CHECK-NEXT: cudaMemcpyAsync(results[0].data, static_cast<const char *>(args[0].data) + 0, 256, cudaMemcpyDeviceToDevice, stream)
// CHECK: // tensor.extract_slice at
// CHECK-NEXT: cudaMemcpyAsync(temp0.data, static_cast<const char *>(args[0].data) + 128, 256, cudaMemcpyDeviceToDevice, stream)
// CHECK: return GDN_SUCCESS;
func.func @copied_rows(%w: tensor<4x64xbf16>, %x: tensor<?x64xbf16>)
    -> (tensor<2x64xbf16>, tensor<?x2xbf16>) {
  %returned = tensor.extract_slice %w[0, 0] [2, 64] [1, 1] : tensor<4x64xbf16> to tensor<2x64xbf16>
  %odd = tensor.extract_slice %w[1, 0] [2, 64] [1, 1] : tensor<4x64xbf16> to tensor<2x64xbf16>
  %y = gdn.linear %x, %odd : (tensor<?x64xbf16>, tensor<2x64xbf16>) -> tensor<?x2xbf16>
  return %returned, %y : tensor<2x64xbf16>, tensor<?x2xbf16>
}
