// Kernel-level IR of two kernels in one function: the prologue's v (a
// workspace temporary, like q, k, g and beta, which are not returned) feeds
// the gated RMSNorm. Small GQA config, f16, dynamic padded pack.
func.func @prologue_then_rmsnorm(%mixed: tensor<?x384xf16>, %conv: tensor<384x4xf16>,
    %a: tensor<?x4xf16>, %b: tensor<?x4xf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
    %z: tensor<?x4x32xf16>, %norm: tensor<32xf32>, %cu: tensor<?xi32>, %cu_padded: tensor<?xi32>)
    -> tensor<?x4x32xf16> {
  %p = gdn.packing %cu padded %cu_padded
      : tensor<?xi32>, tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %conv, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64,
       head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>,
       l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false,
       threads = 64 : i64, tokens_per_block = 32 : i64, rows_in_flight = 1 : i64}
      : (tensor<?x384xf16>, tensor<384x4xf16>, tensor<?x4xf16>, tensor<?x4xf16>,
         tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?, padded>)
      -> (tensor<?x2x64xf16>, tensor<?x2x64xf16>, tensor<?x4x32xf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  %y = gdn_kernel.gated_rmsnorm %v, %z, %norm {eps = 1.0e-05 : f64, threads = 128 : i64}
      : (tensor<?x4x32xf16>, tensor<?x4x32xf16>, tensor<32xf32>) -> tensor<?x4x32xf16>
  return %y : tensor<?x4x32xf16>
}
