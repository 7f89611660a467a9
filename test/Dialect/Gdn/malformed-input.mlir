// Malformed programs give a located error (file:line:col) and a non-zero exit, never a crash.
// RUN: not gdn-opt %s -split-input-file 2>&1 | FileCheck %s
// RUN: not gdn-opt %s -split-input-file 2>&1 | FileCheck %s --check-prefix=NOCRASH
// NOCRASH-NOT: PLEASE submit a bug report
// NOCRASH-NOT: Stack dump

// A wrong operand type: a raw cu_seqlens tensor where a packing is expected.
func.func @wrong_type(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>, %cu: tensor<3xi32>) {
  // CHECK: {{.*}}malformed-input.mlir:[[@LINE+1]]:8: error: 'gdn.causal_conv1d' op operand #2 must be packed-sequence metadata
  %y = gdn.causal_conv1d %x, %w, %cu {width = 4 : i64}
      : (tensor<?x8xbf16>, tensor<8x4xbf16>, tensor<3xi32>) -> tensor<?x8xbf16>
  return
}

// -----

// A type that does not match the value's declared type.
func.func @mismatched_type(%q: tensor<?x16x128xbf16>) {
  // CHECK: {{.*}}malformed-input.mlir:[[@LINE+1]]:19: error: use of value '%q' expects different type than prior uses: 'tensor<?x16x128xf32>' vs 'tensor<?x16x128xbf16>'
  %0 = gdn.l2norm %q : tensor<?x16x128xf32>
  return
}

// -----

// Decreasing constant cu_seqlens: the message names the index and value.
func.func @decreasing_cu_seqlens() {
  %cu = arith.constant dense<[0, 5, 3, 7]> : tensor<4xi32>
  // CHECK: {{.*}}malformed-input.mlir:[[@LINE+1]]:8: error: 'gdn.packing' op cu_seqlens must be non-decreasing, but cu_seqlens[2] = 3 < cu_seqlens[1] = 5
  %p = gdn.packing %cu : tensor<4xi32> -> !gdn.packing<seqs = 3, tokens = 7>
  return
}

// -----

// Value heads not a multiple of key heads.
func.func @gqa(%q: tensor<?x16x128xbf16>, %v: tensor<?x30x128xbf16>, %g: tensor<?x30xf32>,
               %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // CHECK: {{.*}}malformed-input.mlir:[[@LINE+1]]:13: error: 'gdn.delta_rule' op value heads (30) must be a multiple of key heads (16)
  %o, %ht = gdn.delta_rule %q, %q, %v, %g, %g, %p
      : (tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x30x128xbf16>, tensor<?x30xf32>, tensor<?x30xf32>,
         !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x30x128xbf16>, tensor<?x30x128x128xf32>)
  return
}

// -----

// A layout mismatch between the operands of a gdn op.
func.func @layout(%x: tensor<1024x64xbf16, #gdn.seq<zigzag, ranks = 4>>, %w: tensor<32x64xbf16>) {
  // CHECK: {{.*}}malformed-input.mlir:[[@LINE+1]]:8: error: 'gdn.linear' op x and y must share one sequence layout, but found #gdn.seq<zigzag, ranks = 4> and natural; insert gdn.convert_layout to change a layout
  %y = gdn.linear %x, %w : (tensor<1024x64xbf16, #gdn.seq<zigzag, ranks = 4>>, tensor<32x64xbf16>) -> tensor<1024x32xbf16>
  return
}

// -----

// A layout mismatch through a builtin op.
func.func @layout_addf(%a: tensor<1024x64xbf16, #gdn.seq<zigzag, ranks = 4>>, %b: tensor<1024x64xbf16>) {
  // CHECK: {{.*}}malformed-input.mlir:[[@LINE+1]]:8: error: 'arith.addf' op requires the same encoding for all operands and results
  %s = "arith.addf"(%a, %b) : (tensor<1024x64xbf16, #gdn.seq<zigzag, ranks = 4>>, tensor<1024x64xbf16>)
      -> tensor<1024x64xbf16, #gdn.seq<zigzag, ranks = 4>>
  return
}

// -----

// Garbage inside a gdn type.
// CHECK: {{.*}}malformed-input.mlir:[[@LINE+1]]:45: error: expected 'seqs'
func.func @garbage_in_type(%p: !gdn.packing<what = 3>) {
  return
}

// -----

// An op cut off in the middle.
func.func @truncated_op(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>) {
  // CHECK: {{.*}}malformed-input.mlir:[[@LINE+1]]:63: error: expected ')'
  %y = gdn.linear %x, %w : (tensor<?x8xbf16>, tensor<8x4xbf16>
  return
}

// -----

// An op the dialect does not have.
func.func @unknown_op(%x: tensor<?x8xbf16>) {
  // CHECK: {{.*}}malformed-input.mlir:[[@LINE+1]]:8: error: custom op 'gdn.attention' is unknown
  %y = gdn.attention %x : tensor<?x8xbf16>
  return
}

// -----

// Degenerate shapes that once crashed the verifier (division by zero key heads).
func.func @zero_key_heads(%c: tensor<?x32xbf16>) {
  // CHECK: {{.*}}malformed-input.mlir:[[@LINE+1]]:16: error: 'gdn.split_qkv' op q dimension 1 (key heads) must be >= 1, found 0
  %q, %k, %v = gdn.split_qkv %c : tensor<?x32xbf16> -> tensor<?x0x4xbf16>, tensor<?x0x4xbf16>, tensor<?x4x8xbf16>
  return
}

// -----

// A rank-0 tensor has no token dimension to redistribute (once an out-of-bounds read).
func.func @scalar_convert_layout(%x: tensor<f32>, %p: !gdn.packing<seqs = 1, tokens = 1>) {
  // CHECK: {{.*}}malformed-input.mlir:[[@LINE+1]]:8: error: 'gdn.convert_layout' op x must be a [T, ...] tensor of rank >= 1, found 'tensor<f32>'
  %y = gdn.convert_layout %x, %p : (tensor<f32>, !gdn.packing<seqs = 1, tokens = 1>) -> tensor<f32>
  return
}
