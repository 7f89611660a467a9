// A kernel beside an op without a CUDA lowering (an f64 projection, which
// gdnrt_linear does not take): gdn-compile builds the kernel's library and
// warns that the function has no whole-function entry point.
func.func @norm_and_f64_projection(%o: tensor<?x4x32xbf16>, %z: tensor<?x4x32xbf16>,
                                   %w: tensor<32xbf16>, %x: tensor<?x8xf64>,
                                   %weight: tensor<4x8xf64>)
    -> (tensor<?x4x32xbf16>, tensor<?x4xf64>) {
  %y = gdn_kernel.gated_rmsnorm %o, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64}
      : (tensor<?x4x32xbf16>, tensor<?x4x32xbf16>, tensor<32xbf16>) -> tensor<?x4x32xbf16>
  %p = gdn.linear %x, %weight : (tensor<?x8xf64>, tensor<4x8xf64>) -> tensor<?x4xf64>
  return %y, %p : tensor<?x4x32xbf16>, tensor<?x4xf64>
}
