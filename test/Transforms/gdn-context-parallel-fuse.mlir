// gdn-context-parallel composes with gdn-fuse: the head-sharded core of each
// rank still becomes one gdn_kernel.prologue (with H/P heads) and the gated
// RMSNorm one epilogue kernel on the token shard, and the fused distributed
// layer equals the P = 1 layer (f32; the interpreter runs kernel ops too).
// RUN: gdn-opt --gdn-expand-layer --gdn-context-parallel="ranks=4" --gdn-fuse %s -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: gdn-run --compare %s %t.mlir --seqlens=0,1,63,64,65,7 --rtol=1e-6 | FileCheck %s --check-prefix=SAME

// CHECK: gdn_kernel.prologue {{.*}} -> (tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<?x2xf32>)
// CHECK: gdn_kernel.gated_rmsnorm {{.*}} -> tensor<?x8x4xf32, #gdn.seq<contiguous, ranks = 4>>
// SAME: result #0: {{.*}} ok

// hidden 8, 4 key heads and 8 value heads, K = V = 4 (16-byte f32 heads).
func.func @layer(%x: tensor<?x8xf32>, %cu: tensor<?xi32>,
                 %w_qkvz: tensor<96x8xf32>, %w_ba: tensor<16x8xf32>,
                 %conv: tensor<64x4xf32>, %a_log: tensor<8xf32>,
                 %dt_bias: tensor<8xf32>, %norm: tensor<4xf32>,
                 %w_out: tensor<8x32xf32>) -> tensor<?x8xf32> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %y = gdn.layer %x, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 4 : i64,
       value_heads = 8 : i64, head_dim_k = 4 : i64, head_dim_v = 4 : i64,
       conv_width = 4 : i64}
      : (tensor<?x8xf32>, !gdn.packing<seqs = ?, tokens = ?>, tensor<96x8xf32>,
         tensor<16x8xf32>, tensor<64x4xf32>, tensor<8xf32>, tensor<8xf32>,
         tensor<4xf32>, tensor<8x32xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
