// Round trip of gdn.packing: run-time and constant offsets, with and without cu_padded, max_len.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s
// RUN: gdn-opt %s --mlir-print-op-generic | gdn-opt | FileCheck %s

// CHECK-LABEL: func.func @dynamic_offsets
// CHECK: gdn.packing %{{.*}} : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
func.func @dynamic_offsets(%cu: tensor<?xi32>) -> !gdn.packing<seqs = ?, tokens = ?> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  return %p : !gdn.packing<seqs = ?, tokens = ?>
}

// CHECK-LABEL: func.func @static_counts
// CHECK: gdn.packing %{{.*}} : tensor<5xi32> -> !gdn.packing<seqs = 4, tokens = 8192, max_len = 4096>
func.func @static_counts(%cu: tensor<5xi32>) -> !gdn.packing<seqs = 4, tokens = 8192, max_len = 4096> {
  %p = gdn.packing %cu : tensor<5xi32> -> !gdn.packing<seqs = 4, tokens = 8192, max_len = 4096>
  return %p : !gdn.packing<seqs = 4, tokens = 8192, max_len = 4096>
}

// Constant offsets that obey every rule; zero-length sequences are legal.
// CHECK-LABEL: func.func @constant_offsets
// CHECK: %[[CU:.*]] = arith.constant dense<[0, 3, 3, 7]> : tensor<4xi32>
// CHECK: gdn.packing %[[CU]] : tensor<4xi32> -> !gdn.packing<seqs = 3, tokens = 7, max_len = 4>
func.func @constant_offsets() -> !gdn.packing<seqs = 3, tokens = 7, max_len = 4> {
  %cu = arith.constant dense<[0, 3, 3, 7]> : tensor<4xi32>
  %p = gdn.packing %cu : tensor<4xi32> -> !gdn.packing<seqs = 3, tokens = 7, max_len = 4>
  return %p : !gdn.packing<seqs = 3, tokens = 7, max_len = 4>
}

// An empty pack: one offset, no sequence.
// CHECK-LABEL: func.func @empty_pack
// CHECK: gdn.packing %{{.*}} : tensor<1xi32> -> !gdn.packing<seqs = 0, tokens = 0>
func.func @empty_pack() -> !gdn.packing<seqs = 0, tokens = 0> {
  %cu = arith.constant dense<0> : tensor<1xi32>
  %p = gdn.packing %cu : tensor<1xi32> -> !gdn.packing<seqs = 0, tokens = 0>
  return %p : !gdn.packing<seqs = 0, tokens = 0>
}

// CHECK-LABEL: func.func @padded_dynamic
// CHECK: gdn.packing %{{.*}} padded %{{.*}} : tensor<?xi32>, tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
func.func @padded_dynamic(%cu: tensor<?xi32>, %cup: tensor<?xi32>) -> !gdn.packing<seqs = ?, tokens = ?, padded> {
  %p = gdn.packing %cu padded %cup : tensor<?xi32>, tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
  return %p : !gdn.packing<seqs = ?, tokens = ?, padded>
}

// Real lengths 3 and 4 in slots of 8; tokens is the buffer size.
// CHECK-LABEL: func.func @padded_constant
// CHECK-DAG: %[[CU:.*]] = arith.constant dense<[0, 3, 7]> : tensor<3xi32>
// CHECK-DAG: %[[CUP:.*]] = arith.constant dense<[0, 8, 16]> : tensor<3xi32>
// CHECK: gdn.packing %[[CU]] padded %[[CUP]] : tensor<3xi32>, tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 16, padded, max_len = 4>
func.func @padded_constant() -> !gdn.packing<seqs = 2, tokens = 16, padded, max_len = 4> {
  %cu = arith.constant dense<[0, 3, 7]> : tensor<3xi32>
  %cup = arith.constant dense<[0, 8, 16]> : tensor<3xi32>
  %p = gdn.packing %cu padded %cup : tensor<3xi32>, tensor<3xi32>
      -> !gdn.packing<seqs = 2, tokens = 16, padded, max_len = 4>
  return %p : !gdn.packing<seqs = 2, tokens = 16, padded, max_len = 4>
}

// A real length may fill its slot exactly.
// CHECK-LABEL: func.func @padded_full_slot
// CHECK: gdn.packing %{{.*}} padded %{{.*}} : tensor<3xi32>, tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 16, padded>
func.func @padded_full_slot() -> !gdn.packing<seqs = 2, tokens = 16, padded> {
  %cu = arith.constant dense<[0, 8, 12]> : tensor<3xi32>
  %cup = arith.constant dense<[0, 8, 16]> : tensor<3xi32>
  %p = gdn.packing %cu padded %cup : tensor<3xi32>, tensor<3xi32>
      -> !gdn.packing<seqs = 2, tokens = 16, padded>
  return %p : !gdn.packing<seqs = 2, tokens = 16, padded>
}

// The generic form spells the optional operand through its operand list.
// CHECK-LABEL: func.func @generic_form
// CHECK: gdn.packing %{{.*}} padded %{{.*}} : tensor<?xi32>, tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
func.func @generic_form(%cu: tensor<?xi32>, %cup: tensor<?xi32>) -> !gdn.packing<seqs = ?, tokens = ?, padded> {
  %p = "gdn.packing"(%cu, %cup) : (tensor<?xi32>, tensor<?xi32>) -> !gdn.packing<seqs = ?, tokens = ?, padded>
  return %p : !gdn.packing<seqs = ?, tokens = ?, padded>
}
