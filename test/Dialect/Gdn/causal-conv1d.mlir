// Round trip of gdn.causal_conv1d: optional bias, initial and final state, activation, dtypes and layouts.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s
// RUN: gdn-opt %s --mlir-print-op-generic | gdn-opt | FileCheck %s

!P = !gdn.packing<seqs = 4, tokens = 8192>
!Pd = !gdn.packing<seqs = ?, tokens = ?>

// No optional operand or result; the default activation (none) is not printed.
// CHECK-LABEL: func.func @minimal
// CHECK: gdn.causal_conv1d %{{.*}}, %{{.*}}, %{{.*}} {width = 4 : i64} : (tensor<8192x8192xbf16>, tensor<8192x4xbf16>, !gdn.packing<seqs = 4, tokens = 8192>) -> tensor<8192x8192xbf16>
// CHECK-NOT: activation
func.func @minimal(%x: tensor<8192x8192xbf16>, %w: tensor<8192x4xbf16>, %p: !P) -> tensor<8192x8192xbf16> {
  %y = gdn.causal_conv1d %x, %w, %p {width = 4 : i64, activation = #gdn.act<none>}
      : (tensor<8192x8192xbf16>, tensor<8192x4xbf16>, !P) -> tensor<8192x8192xbf16>
  return %y : tensor<8192x8192xbf16>
}

// CHECK-LABEL: func.func @silu_dynamic
// CHECK: gdn.causal_conv1d %{{.*}}, %{{.*}}, %{{.*}} {activation = #gdn.act<silu>, width = 4 : i64} : (tensor<?x8192xbf16>, tensor<8192x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x8192xbf16>
func.func @silu_dynamic(%x: tensor<?x8192xbf16>, %w: tensor<8192x4xbf16>, %p: !Pd) -> tensor<?x8192xbf16> {
  %y = gdn.causal_conv1d %x, %w, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x8192xbf16>, tensor<8192x4xbf16>, !Pd) -> tensor<?x8192xbf16>
  return %y : tensor<?x8192xbf16>
}

// y's element type is its own: an f32 projection output (gdn-expand-layer's
// f32-projections) convolved into bf16.
// CHECK-LABEL: func.func @f32_to_bf16
// CHECK: gdn.causal_conv1d %{{.*}}, %{{.*}}, %{{.*}} {activation = #gdn.act<silu>, width = 4 : i64} : (tensor<?x64xf32>, tensor<64x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x64xbf16>
func.func @f32_to_bf16(%x: tensor<?x64xf32>, %w: tensor<64x4xbf16>, %p: !Pd) -> tensor<?x64xbf16> {
  %y = gdn.causal_conv1d %x, %w, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x64xf32>, tensor<64x4xbf16>, !Pd) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// Dynamic channels everywhere.
// CHECK-LABEL: func.func @dynamic_channels
// CHECK: gdn.causal_conv1d %{{.*}}, %{{.*}}, %{{.*}} {width = 3 : i64} : (tensor<?x?xf32>, tensor<?x3xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x?xf32>
func.func @dynamic_channels(%x: tensor<?x?xf32>, %w: tensor<?x3xf32>, %p: !Pd) -> tensor<?x?xf32> {
  %y = gdn.causal_conv1d %x, %w, %p {width = 3 : i64}
      : (tensor<?x?xf32>, tensor<?x3xf32>, !Pd) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// CHECK-LABEL: func.func @bias_only
// CHECK: gdn.causal_conv1d %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}}) {width = 4 : i64} : (tensor<?x64xf16>, tensor<64x4xf16>, !gdn.packing<seqs = ?, tokens = ?>, tensor<64xf16>) -> tensor<?x64xf16>
func.func @bias_only(%x: tensor<?x64xf16>, %w: tensor<64x4xf16>, %p: !Pd, %b: tensor<64xf16>) -> tensor<?x64xf16> {
  %y = gdn.causal_conv1d %x, %w, %p bias(%b) {width = 4 : i64}
      : (tensor<?x64xf16>, tensor<64x4xf16>, !Pd, tensor<64xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// CHECK-LABEL: func.func @initial_state_only
// CHECK: gdn.causal_conv1d %{{.*}}, %{{.*}}, %{{.*}} initial_state(%{{.*}}) {width = 4 : i64} : (tensor<8192x64xbf16>, tensor<64x4xbf16>, !gdn.packing<seqs = 4, tokens = 8192>, tensor<4x64x3xbf16>) -> tensor<8192x64xbf16>
func.func @initial_state_only(%x: tensor<8192x64xbf16>, %w: tensor<64x4xbf16>, %p: !P, %h0: tensor<4x64x3xbf16>) -> tensor<8192x64xbf16> {
  %y = gdn.causal_conv1d %x, %w, %p initial_state(%h0) {width = 4 : i64}
      : (tensor<8192x64xbf16>, tensor<64x4xbf16>, !P, tensor<4x64x3xbf16>) -> tensor<8192x64xbf16>
  return %y : tensor<8192x64xbf16>
}

// CHECK-LABEL: func.func @final_state_only
// CHECK: %{{.*}}, %{{.*}} = gdn.causal_conv1d %{{.*}}, %{{.*}}, %{{.*}} {width = 4 : i64} : (tensor<8192x64xbf16>, tensor<64x4xbf16>, !gdn.packing<seqs = 4, tokens = 8192>) -> (tensor<8192x64xbf16>, tensor<4x64x3xbf16>)
func.func @final_state_only(%x: tensor<8192x64xbf16>, %w: tensor<64x4xbf16>, %p: !P) -> tensor<4x64x3xbf16> {
  %y, %ht = gdn.causal_conv1d %x, %w, %p {width = 4 : i64}
      : (tensor<8192x64xbf16>, tensor<64x4xbf16>, !P) -> (tensor<8192x64xbf16>, tensor<4x64x3xbf16>)
  return %ht : tensor<4x64x3xbf16>
}

// Every optional operand and result at once.
// CHECK-LABEL: func.func @everything
// CHECK: %{{.*}}, %{{.*}} = gdn.causal_conv1d %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}}) initial_state(%{{.*}}) {activation = #gdn.act<silu>, width = 4 : i64} : (tensor<?x64xbf16>, tensor<64x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>, tensor<64xbf16>, tensor<?x64x3xbf16>) -> (tensor<?x64xbf16>, tensor<?x64x3xbf16>)
func.func @everything(%x: tensor<?x64xbf16>, %w: tensor<64x4xbf16>, %p: !Pd, %b: tensor<64xbf16>, %h0: tensor<?x64x3xbf16>) -> tensor<?x64x3xbf16> {
  %y, %ht = gdn.causal_conv1d %x, %w, %p bias(%b) initial_state(%h0) {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x64xbf16>, tensor<64x4xbf16>, !Pd, tensor<64xbf16>, tensor<?x64x3xbf16>) -> (tensor<?x64xbf16>, tensor<?x64x3xbf16>)
  return %ht : tensor<?x64x3xbf16>
}

// Width 1 has an empty conv state; f64 is accepted for reference programs.
// CHECK-LABEL: func.func @width_one_f64
// CHECK: gdn.causal_conv1d %{{.*}}, %{{.*}}, %{{.*}} initial_state(%{{.*}}) {width = 1 : i64} : (tensor<7x8xf64>, tensor<8x1xf64>, !gdn.packing<seqs = 2, tokens = 7>, tensor<2x8x0xf64>) -> (tensor<7x8xf64>, tensor<2x8x0xf64>)
func.func @width_one_f64(%x: tensor<7x8xf64>, %w: tensor<8x1xf64>, %p: !gdn.packing<seqs = 2, tokens = 7>, %h0: tensor<2x8x0xf64>) -> tensor<7x8xf64> {
  %y, %ht = gdn.causal_conv1d %x, %w, %p initial_state(%h0) {width = 1 : i64}
      : (tensor<7x8xf64>, tensor<8x1xf64>, !gdn.packing<seqs = 2, tokens = 7>, tensor<2x8x0xf64>) -> (tensor<7x8xf64>, tensor<2x8x0xf64>)
  return %y : tensor<7x8xf64>
}

// Activations in a sharded layout; weights and states stay unsharded.
// CHECK-LABEL: func.func @sharded_activations
// CHECK: gdn.causal_conv1d %{{.*}}, %{{.*}}, %{{.*}} {activation = #gdn.act<silu>, width = 4 : i64} : (tensor<?x64xbf16, #gdn.seq<zigzag, ranks = 4>>, tensor<64x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>) -> (tensor<?x64xbf16, #gdn.seq<zigzag, ranks = 4>>, tensor<?x64x3xbf16>)
func.func @sharded_activations(%x: tensor<?x64xbf16, #gdn.seq<zigzag, ranks = 4>>, %w: tensor<64x4xbf16>, %p: !Pd) -> tensor<?x64xbf16, #gdn.seq<zigzag, ranks = 4>> {
  %y, %ht = gdn.causal_conv1d %x, %w, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<?x64xbf16, #gdn.seq<zigzag, ranks = 4>>, tensor<64x4xbf16>, !Pd)
      -> (tensor<?x64xbf16, #gdn.seq<zigzag, ranks = 4>>, tensor<?x64x3xbf16>)
  return %y : tensor<?x64xbf16, #gdn.seq<zigzag, ranks = 4>>
}

// #gdn.seq<natural> is the same layout as no encoding.
// CHECK-LABEL: func.func @natural_equals_plain
// CHECK: gdn.causal_conv1d %{{.*}}, %{{.*}}, %{{.*}} {width = 4 : i64} : (tensor<?x64xbf16, #gdn.seq<natural>>, tensor<64x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x64xbf16>
func.func @natural_equals_plain(%x: tensor<?x64xbf16, #gdn.seq<natural>>, %w: tensor<64x4xbf16>, %p: !Pd) -> tensor<?x64xbf16> {
  %y = gdn.causal_conv1d %x, %w, %p {width = 4 : i64}
      : (tensor<?x64xbf16, #gdn.seq<natural>>, tensor<64x4xbf16>, !Pd) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
