// Round trip of gdn.delta_rule: initial state present and absent, scale and chunk_size, GQA, dynamic sizes, f64, layouts.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s
// RUN: gdn-opt %s --mlir-print-op-generic | gdn-opt | FileCheck %s

!P = !gdn.packing<seqs = 4, tokens = 8192>
!Pd = !gdn.packing<seqs = ?, tokens = ?>

// H = HV, no initial state; the default chunk_size (64) is not printed.
// CHECK-LABEL: func.func @minimal
// CHECK: %[[O:.*]], %{{.*}} = gdn.delta_rule %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8192x16x128xbf16>, tensor<8192x16x128xbf16>, tensor<8192x16x128xbf16>, tensor<8192x16xf32>, tensor<8192x16xf32>, !gdn.packing<seqs = 4, tokens = 8192>) -> (tensor<8192x16x128xbf16>, tensor<4x16x128x128xf32>)
// CHECK-NOT: chunk_size
// CHECK: return %[[O]]
func.func @minimal(%q: tensor<8192x16x128xbf16>, %k: tensor<8192x16x128xbf16>, %v: tensor<8192x16x128xbf16>,
                   %g: tensor<8192x16xf32>, %beta: tensor<8192x16xf32>, %p: !P) -> tensor<8192x16x128xbf16> {
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p {chunk_size = 64 : i64}
      : (tensor<8192x16x128xbf16>, tensor<8192x16x128xbf16>, tensor<8192x16x128xbf16>,
         tensor<8192x16xf32>, tensor<8192x16xf32>, !P)
      -> (tensor<8192x16x128xbf16>, tensor<4x16x128x128xf32>)
  return %o : tensor<8192x16x128xbf16>
}

// GQA: 32 value heads read 16 key heads; K and V differ.
// CHECK-LABEL: func.func @gqa
// CHECK: gdn.delta_rule %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x64xbf16>, tensor<?x32xf32>, tensor<?x32xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> (tensor<?x32x64xbf16>, tensor<?x32x128x64xf32>)
func.func @gqa(%q: tensor<?x16x128xbf16>, %k: tensor<?x16x128xbf16>, %v: tensor<?x32x64xbf16>,
               %g: tensor<?x32xf32>, %beta: tensor<?x32xf32>, %p: !Pd) -> tensor<?x32x64xbf16> {
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x64xbf16>,
         tensor<?x32xf32>, tensor<?x32xf32>, !Pd)
      -> (tensor<?x32x64xbf16>, tensor<?x32x128x64xf32>)
  return %o : tensor<?x32x64xbf16>
}

// CHECK-LABEL: func.func @initial_state_scale_chunk
// CHECK: gdn.delta_rule %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} initial_state(%{{.*}}) {chunk_size = 128 : i64, scale = 1.250000e-01 : f64} : (tensor<8192x16x128xbf16>, tensor<8192x16x128xbf16>, tensor<8192x32x128xbf16>, tensor<8192x32xf32>, tensor<8192x32xf32>, !gdn.packing<seqs = 4, tokens = 8192>, tensor<4x32x128x128xf32>) -> (tensor<8192x32x128xbf16>, tensor<4x32x128x128xf32>)
func.func @initial_state_scale_chunk(%q: tensor<8192x16x128xbf16>, %k: tensor<8192x16x128xbf16>, %v: tensor<8192x32x128xbf16>,
                                     %g: tensor<8192x32xf32>, %beta: tensor<8192x32xf32>, %p: !P,
                                     %h0: tensor<4x32x128x128xf32>) -> tensor<4x32x128x128xf32> {
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p initial_state(%h0) {scale = 0.125 : f64, chunk_size = 128 : i64}
      : (tensor<8192x16x128xbf16>, tensor<8192x16x128xbf16>, tensor<8192x32x128xbf16>,
         tensor<8192x32xf32>, tensor<8192x32xf32>, !P, tensor<4x32x128x128xf32>)
      -> (tensor<8192x32x128xbf16>, tensor<4x32x128x128xf32>)
  return %ht : tensor<4x32x128x128xf32>
}

// Every size dynamic: the default scale needs K, so scale is given.
// CHECK-LABEL: func.func @all_dynamic
// CHECK: gdn.delta_rule %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} initial_state(%{{.*}}) {scale = 0.0883883{{[0-9]*}} : f64} : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, !gdn.packing<seqs = ?, tokens = ?>, tensor<?x?x?x?xf32>) -> (tensor<?x?x?xf32>, tensor<?x?x?x?xf32>)
func.func @all_dynamic(%q: tensor<?x?x?xf32>, %k: tensor<?x?x?xf32>, %v: tensor<?x?x?xf32>,
                       %g: tensor<?x?xf32>, %beta: tensor<?x?xf32>, %p: !Pd, %h0: tensor<?x?x?x?xf32>) {
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p initial_state(%h0) {scale = 0.08838834764831845 : f64}
      : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, !Pd, tensor<?x?x?x?xf32>)
      -> (tensor<?x?x?xf32>, tensor<?x?x?x?xf32>)
  return
}

// A float64 reference program: f64 activations, gates and states.
// CHECK-LABEL: func.func @f64_reference
// CHECK: gdn.delta_rule %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} initial_state(%{{.*}}) : (tensor<7x2x4xf64>, tensor<7x2x4xf64>, tensor<7x4x8xf64>, tensor<7x4xf64>, tensor<7x4xf64>, !gdn.packing<seqs = 2, tokens = 7>, tensor<2x4x4x8xf64>) -> (tensor<7x4x8xf64>, tensor<2x4x4x8xf64>)
func.func @f64_reference(%q: tensor<7x2x4xf64>, %k: tensor<7x2x4xf64>, %v: tensor<7x4x8xf64>,
                         %g: tensor<7x4xf64>, %beta: tensor<7x4xf64>, %p: !gdn.packing<seqs = 2, tokens = 7>,
                         %h0: tensor<2x4x4x8xf64>) {
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p initial_state(%h0)
      : (tensor<7x2x4xf64>, tensor<7x2x4xf64>, tensor<7x4x8xf64>, tensor<7x4xf64>, tensor<7x4xf64>,
         !gdn.packing<seqs = 2, tokens = 7>, tensor<2x4x4x8xf64>)
      -> (tensor<7x4x8xf64>, tensor<2x4x4x8xf64>)
  return
}

// Headwise context parallelism: all tokens, a quarter of the heads; the
// states are per sequence and carry no token layout.
// CHECK-LABEL: func.func @head_sharded
// CHECK: gdn.delta_rule %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8192x4x128xbf16, #gdn.heads<ranks = 4>>, tensor<8192x4x128xbf16, #gdn.heads<ranks = 4>>, tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>, tensor<8192x8xf32, #gdn.heads<ranks = 4>>, tensor<8192x8xf32, #gdn.heads<ranks = 4>>, !gdn.packing<seqs = 4, tokens = 8192>) -> (tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>, tensor<4x8x128x128xf32>)
func.func @head_sharded(%q: tensor<8192x4x128xbf16, #gdn.heads<ranks = 4>>, %k: tensor<8192x4x128xbf16, #gdn.heads<ranks = 4>>,
                        %v: tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>, %g: tensor<8192x8xf32, #gdn.heads<ranks = 4>>,
                        %beta: tensor<8192x8xf32, #gdn.heads<ranks = 4>>, %p: !P) {
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<8192x4x128xbf16, #gdn.heads<ranks = 4>>, tensor<8192x4x128xbf16, #gdn.heads<ranks = 4>>,
         tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>, tensor<8192x8xf32, #gdn.heads<ranks = 4>>,
         tensor<8192x8xf32, #gdn.heads<ranks = 4>>, !P)
      -> (tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>, tensor<4x8x128x128xf32>)
  return
}

// A zigzag token shard with a run-time packing.
// CHECK-LABEL: func.func @zigzag_shard
// CHECK: gdn.delta_rule {{.*}} : (tensor<?x16x128xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x16x128xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x16x128xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x16xf32, #gdn.seq<zigzag, ranks = 2>>, tensor<?x16xf32, #gdn.seq<zigzag, ranks = 2>>, !gdn.packing<seqs = ?, tokens = ?>) -> (tensor<?x16x128xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x16x128x128xf32>)
func.func @zigzag_shard(%q: tensor<?x16x128xbf16, #gdn.seq<zigzag, ranks = 2>>, %k: tensor<?x16x128xbf16, #gdn.seq<zigzag, ranks = 2>>,
                        %v: tensor<?x16x128xbf16, #gdn.seq<zigzag, ranks = 2>>, %g: tensor<?x16xf32, #gdn.seq<zigzag, ranks = 2>>,
                        %beta: tensor<?x16xf32, #gdn.seq<zigzag, ranks = 2>>, %p: !Pd) {
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x16x128xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x16x128xbf16, #gdn.seq<zigzag, ranks = 2>>,
         tensor<?x16x128xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x16xf32, #gdn.seq<zigzag, ranks = 2>>,
         tensor<?x16xf32, #gdn.seq<zigzag, ranks = 2>>, !Pd)
      -> (tensor<?x16x128xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x16x128x128xf32>)
  return
}
