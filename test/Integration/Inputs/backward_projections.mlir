// GPU case: the backward's calls around the kernels, on Qwen3-Next's
// geometry at small sizes (hidden 32; 2 key heads of 4, 6 value heads of 2):
// out_proj's gradient with a per-head x (gdn.linear_grad on [T, 6, 2]), the
// conv-channel gradients merged back (gdn.merge_qkv, one copy per part), the
// projections' output gradients interleaved back per key-head group
// (gdn.merge_qkvz: six strided copies in one launch; v's parts do not tile
// the conv channels), both input projections' gradients
// (gdn.linear_grad on [T, 32]) and the sum of their x gradients, which runs
// as the second data GEMM accumulating onto the first (arith.addf, folded).
// bf16, checked against gdn-run; many tokens, so the weight gradients' token
// sums are long (where cuBLASLt splits K) and the harness's five runs must
// give the same bits.
func.func @backward_projections(%dy: tensor<?x32xbf16>, %o: tensor<?x6x2xbf16>,
                                %w_out: tensor<32x12xbf16>,
                                %q_grad: tensor<?x2x4xbf16>, %k_grad: tensor<?x2x4xbf16>,
                                %v_grad: tensor<?x6x2xbf16>,
                                %b_grad: tensor<?x6xbf16>, %a_grad: tensor<?x6xbf16>,
                                %x: tensor<?x32xbf16>, %w_qkvz: tensor<40x32xbf16>,
                                %w_ba: tensor<12x32xbf16>)
    -> (tensor<?x32xbf16>, tensor<40x32xbf16>, tensor<12x32xbf16>, tensor<32x12xbf16>,
        tensor<?x28xbf16>, tensor<?x40xbf16>, tensor<?x12xbf16>) {
  %z_grad, %w_out_grad = gdn.linear_grad %dy, %o, %w_out
      : (tensor<?x32xbf16>, tensor<?x6x2xbf16>, tensor<32x12xbf16>)
      -> (tensor<?x6x2xbf16>, tensor<32x12xbf16>)
  %mixed_grad = gdn.merge_qkv %q_grad, %k_grad, %v_grad
      : tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x6x2xbf16> -> tensor<?x28xbf16>
  %qkvz_grad, %ba_grad = gdn.merge_qkvz %mixed_grad, %z_grad, %b_grad, %a_grad
      {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x28xbf16>, tensor<?x6x2xbf16>, tensor<?x6xbf16>, tensor<?x6xbf16>)
      -> (tensor<?x40xbf16>, tensor<?x12xbf16>)
  %x_grad_ba, %w_ba_grad = gdn.linear_grad %ba_grad, %x, %w_ba
      : (tensor<?x12xbf16>, tensor<?x32xbf16>, tensor<12x32xbf16>)
      -> (tensor<?x32xbf16>, tensor<12x32xbf16>)
  %x_grad_qkvz, %w_qkvz_grad = gdn.linear_grad %qkvz_grad, %x, %w_qkvz
      : (tensor<?x40xbf16>, tensor<?x32xbf16>, tensor<40x32xbf16>)
      -> (tensor<?x32xbf16>, tensor<40x32xbf16>)
  %x_grad = arith.addf %x_grad_ba, %x_grad_qkvz : tensor<?x32xbf16>
  return %x_grad, %w_qkvz_grad, %w_ba_grad, %w_out_grad, %mixed_grad, %qkvz_grad, %ba_grad
      : tensor<?x32xbf16>, tensor<40x32xbf16>, tensor<12x32xbf16>, tensor<32x12xbf16>,
        tensor<?x28xbf16>, tensor<?x40xbf16>, tensor<?x12xbf16>
}
