// A small program for gdn-compile: the gated RMSNorm (a kernel) and the
// output projection (gdnrt_linear) of a GDN layer, on 4 heads of 64.
func.func @norm_proj(%o: tensor<?x4x64xbf16>, %z: tensor<?x4x64xbf16>, %w: tensor<64xbf16>,
                     %out_proj: tensor<128x256xbf16>) -> tensor<?x128xbf16> {
  %y = gdn.gated_rmsnorm %o, %z, %w
      : (tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<64xbf16>) -> tensor<?x4x64xbf16>
  %p = gdn.linear %y, %out_proj : (tensor<?x4x64xbf16>, tensor<128x256xbf16>) -> tensor<?x128xbf16>
  return %p : tensor<?x128xbf16>
}
