// A GatedDeltaNet layer of Qwen3.5 in its default text configuration (hidden
// 4096, 16 key heads and 32 value heads of dim 128, conv width 4), with the
// separate projections in_proj_qkv / in_proj_z / in_proj_b / in_proj_a. The
// pack is dynamic: any number of sequences and tokens, with alignment padding
// between them (as Megatron and verl produce for TP/CP divisibility).
//
//   gdn-opt --gdn-pipeline examples/qwen3_5_layer.mlir

func.func @qwen3_5_gdn_layer(
    %x: tensor<?x4096xbf16>, %cu_seqlens: tensor<?xi32>, %cu_padded: tensor<?xi32>,
    %in_proj_qkv: tensor<8192x4096xbf16>, %in_proj_z: tensor<4096x4096xbf16>,
    %in_proj_b: tensor<32x4096xbf16>, %in_proj_a: tensor<32x4096xbf16>,
    %conv: tensor<8192x4xbf16>, %a_log: tensor<32xf32>, %dt_bias: tensor<32xf32>,
    %norm: tensor<128xbf16>, %out_proj: tensor<4096x4096xbf16>)
    -> tensor<?x4096xbf16> {
  %packing = gdn.packing %cu_seqlens padded %cu_padded
      : tensor<?xi32>, tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
  %y = gdn.layer %x, %packing
      weights(%in_proj_qkv, %in_proj_z, %in_proj_b, %in_proj_a, %conv, %a_log,
              %dt_bias, %norm, %out_proj)
      {projections = #gdn.projections<qwen3_5>, key_heads = 16 : i64,
       value_heads = 32 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64,
       conv_width = 4 : i64, norm_eps = 1.0e-06 : f64}
      : (tensor<?x4096xbf16>, !gdn.packing<seqs = ?, tokens = ?, padded>,
         tensor<8192x4096xbf16>, tensor<4096x4096xbf16>, tensor<32x4096xbf16>,
         tensor<32x4096xbf16>, tensor<8192x4xbf16>, tensor<32xf32>, tensor<32xf32>,
         tensor<128xbf16>, tensor<4096x4096xbf16>)
      -> tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}
