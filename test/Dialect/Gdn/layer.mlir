// Round trip of gdn.layer in both projection layouts: optional attributes present and absent, dynamic tokens, f64 and layouts.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s
// RUN: gdn-opt %s --mlir-print-op-generic | gdn-opt | FileCheck %s

// Small config: H = 2, K = 4, HV = 4, V = 8, hidden 16, width 4, C = 48 conv channels.
!P = !gdn.packing<seqs = 2, tokens = 32>
!Pd = !gdn.packing<seqs = ?, tokens = ?, padded>

// Qwen3-Next: 7 weights. Only the required attributes; defaults are not printed.
// CHECK-LABEL: func.func @qwen3_next
// CHECK: gdn.layer %{{.*}}, %{{.*}} weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {conv_width = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, key_heads = 2 : i64, projections = #gdn.projections<qwen3_next>, value_heads = 4 : i64} : (tensor<32x16xbf16>, !gdn.packing<seqs = 2, tokens = 32>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<32x16xbf16>
// CHECK-NOT: norm_eps
// CHECK-NOT: chunk_size
// CHECK-NOT: allow_neg_eigval
func.func @qwen3_next(%x: tensor<32x16xbf16>, %p: !P, %qkvz: tensor<80x16xbf16>, %ba: tensor<8x16xbf16>,
                      %conv: tensor<48x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
                      %norm: tensor<8xbf16>, %out: tensor<16x32xbf16>) -> tensor<32x16xbf16> {
  %y = gdn.layer %x, %p weights(%qkvz, %ba, %conv, %a_log, %dt_bias, %norm, %out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64,
       head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64,
       norm_eps = 1.0e-06 : f64, chunk_size = 64 : i64, allow_neg_eigval = false}
      : (tensor<32x16xbf16>, !P, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>,
         tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<32x16xbf16>
  return %y : tensor<32x16xbf16>
}

// Qwen3.5: 9 weights, every optional attribute set, a dynamic padded pack.
// CHECK-LABEL: func.func @qwen3_5
// CHECK: gdn.layer %{{.*}}, %{{.*}} weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {allow_neg_eigval = true, chunk_size = 32 : i64, conv_width = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, key_heads = 2 : i64, norm_eps = 1.000000e-05 : f64, projections = #gdn.projections<qwen3_5>, scale = 5.000000e-01 : f64, value_heads = 4 : i64} : (tensor<?x16xbf16>, !gdn.packing<seqs = ?, tokens = ?, padded>, tensor<48x16xbf16>, tensor<32x16xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
func.func @qwen3_5(%x: tensor<?x16xbf16>, %p: !Pd, %qkv: tensor<48x16xbf16>, %z: tensor<32x16xbf16>,
                   %b: tensor<4x16xbf16>, %a: tensor<4x16xbf16>, %conv: tensor<48x4xbf16>,
                   %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %norm: tensor<8xbf16>,
                   %out: tensor<16x32xbf16>) -> tensor<?x16xbf16> {
  %y = gdn.layer %x, %p weights(%qkv, %z, %b, %a, %conv, %a_log, %dt_bias, %norm, %out)
      {projections = #gdn.projections<qwen3_5>, key_heads = 2 : i64, value_heads = 4 : i64,
       head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64,
       norm_eps = 1.0e-05 : f64, scale = 0.5 : f64, chunk_size = 32 : i64, allow_neg_eigval = true}
      : (tensor<?x16xbf16>, !Pd, tensor<48x16xbf16>, tensor<32x16xbf16>, tensor<4x16xbf16>,
         tensor<4x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>,
         tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return %y : tensor<?x16xbf16>
}

// H = HV (no grouping) in a float64 reference program.
// CHECK-LABEL: func.func @f64_no_grouping
// CHECK: gdn.layer {{.*}} {conv_width = 2 : i64, head_dim_k = 4 : i64, head_dim_v = 4 : i64, key_heads = 2 : i64, projections = #gdn.projections<qwen3_next>, value_heads = 2 : i64} : (tensor<7x8xf64>, !gdn.packing<seqs = 2, tokens = 7>, tensor<32x8xf64>, tensor<4x8xf64>, tensor<24x2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<4xf64>, tensor<8x8xf64>) -> tensor<7x8xf64>
func.func @f64_no_grouping(%x: tensor<7x8xf64>, %p: !gdn.packing<seqs = 2, tokens = 7>, %qkvz: tensor<32x8xf64>,
                           %ba: tensor<4x8xf64>, %conv: tensor<24x2xf64>, %a_log: tensor<2xf64>,
                           %dt_bias: tensor<2xf64>, %norm: tensor<4xf64>, %out: tensor<8x8xf64>) -> tensor<7x8xf64> {
  %y = gdn.layer %x, %p weights(%qkvz, %ba, %conv, %a_log, %dt_bias, %norm, %out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 2 : i64,
       head_dim_k = 4 : i64, head_dim_v = 4 : i64, conv_width = 2 : i64}
      : (tensor<7x8xf64>, !gdn.packing<seqs = 2, tokens = 7>, tensor<32x8xf64>, tensor<4x8xf64>,
         tensor<24x2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<4xf64>, tensor<8x8xf64>) -> tensor<7x8xf64>
  return %y : tensor<7x8xf64>
}

// A whole layer on a zigzag token shard; the weights are replicated.
// CHECK-LABEL: func.func @zigzag_shard
// CHECK: gdn.layer {{.*}} : (tensor<?x16xbf16, #gdn.seq<zigzag, ranks = 2>>, !gdn.packing<seqs = ?, tokens = ?, padded>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16, #gdn.seq<zigzag, ranks = 2>>
func.func @zigzag_shard(%x: tensor<?x16xbf16, #gdn.seq<zigzag, ranks = 2>>, %p: !Pd, %qkvz: tensor<80x16xbf16>,
                        %ba: tensor<8x16xbf16>, %conv: tensor<48x4xbf16>, %a_log: tensor<4xf32>,
                        %dt_bias: tensor<4xf32>, %norm: tensor<8xbf16>, %out: tensor<16x32xbf16>) {
  %y = gdn.layer %x, %p weights(%qkvz, %ba, %conv, %a_log, %dt_bias, %norm, %out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64,
       head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16, #gdn.seq<zigzag, ranks = 2>>, !Pd, tensor<80x16xbf16>, tensor<8x16xbf16>,
         tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>)
      -> tensor<?x16xbf16, #gdn.seq<zigzag, ranks = 2>>
  return
}

// States: initial_states(conv, delta) in, both final states out after y.
// CHECK-LABEL: func.func @with_states
// CHECK: %{{.*}}, %{{.*}}:2 = gdn.layer %{{.*}}, %{{.*}} weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) initial_states(%{{.*}}, %{{.*}}) {{{.*}}} : ({{.*}}, tensor<2x48x3xbf16>, tensor<2x4x4x8xf32>) -> (tensor<32x16xbf16>, tensor<2x48x3xbf16>, tensor<2x4x4x8xf32>)
func.func @with_states(%x: tensor<32x16xbf16>, %p: !P, %qkvz: tensor<80x16xbf16>, %ba: tensor<8x16xbf16>,
                       %conv: tensor<48x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>,
                       %norm: tensor<8xbf16>, %out: tensor<16x32xbf16>, %c0: tensor<2x48x3xbf16>,
                       %s0: tensor<2x4x4x8xf32>)
    -> (tensor<32x16xbf16>, tensor<2x48x3xbf16>, tensor<2x4x4x8xf32>) {
  %y, %c, %s = gdn.layer %x, %p weights(%qkvz, %ba, %conv, %a_log, %dt_bias, %norm, %out)
      initial_states(%c0, %s0)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64,
       head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<32x16xbf16>, !P, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>,
         tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>, tensor<2x48x3xbf16>,
         tensor<2x4x4x8xf32>) -> (tensor<32x16xbf16>, tensor<2x48x3xbf16>, tensor<2x4x4x8xf32>)
  return %y, %c, %s : tensor<32x16xbf16>, tensor<2x48x3xbf16>, tensor<2x4x4x8xf32>
}
