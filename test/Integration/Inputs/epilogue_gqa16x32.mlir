// GPU case: the gated RMSNorm epilogue over 32 value heads of 128 (bf16).
func.func @epilogue_gqa16x32(%o: tensor<?x32x128xbf16>, %z: tensor<?x32x128xbf16>,
                             %w: tensor<128xbf16>) -> tensor<?x32x128xbf16> {
  %y = gdn.gated_rmsnorm %o, %z, %w {eps = 1.0e-06 : f64}
      : (tensor<?x32x128xbf16>, tensor<?x32x128xbf16>, tensor<128xbf16>) -> tensor<?x32x128xbf16>
  return %y : tensor<?x32x128xbf16>
}
