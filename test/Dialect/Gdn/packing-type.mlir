// Round trip of the !gdn.packing type: static and dynamic counts, the padded and max_len flags.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s
// RUN: gdn-opt %s --mlir-print-op-generic | gdn-opt | FileCheck %s

// CHECK-LABEL: func.func @static_counts
// CHECK-SAME: !gdn.packing<seqs = 8, tokens = 530>
func.func @static_counts(%p: !gdn.packing<seqs = 8, tokens = 530>) {
  return
}

// CHECK-LABEL: func.func @dynamic_counts
// CHECK-SAME: !gdn.packing<seqs = ?, tokens = ?>
func.func @dynamic_counts(%p: !gdn.packing<seqs = ?, tokens = ?>) {
  return
}

// CHECK-LABEL: func.func @mixed_counts
// CHECK-SAME: !gdn.packing<seqs = 4, tokens = ?>
// CHECK-SAME: !gdn.packing<seqs = ?, tokens = 8192>
func.func @mixed_counts(%a: !gdn.packing<seqs = 4, tokens = ?>,
                        %b: !gdn.packing<seqs = ?, tokens = 8192>) {
  return
}

// An empty pack (no sequences, no tokens) is a valid packing.
// CHECK-LABEL: func.func @empty
// CHECK-SAME: !gdn.packing<seqs = 0, tokens = 0>
func.func @empty(%p: !gdn.packing<seqs = 0, tokens = 0>) {
  return
}

// The largest token count int32 offsets can address.
// CHECK-LABEL: func.func @int32_limit
// CHECK-SAME: !gdn.packing<seqs = 1, tokens = 2147483647>
func.func @int32_limit(%p: !gdn.packing<seqs = 1, tokens = 2147483647>) {
  return
}

// CHECK-LABEL: func.func @padded
// CHECK-SAME: !gdn.packing<seqs = 2, tokens = 16, padded>
func.func @padded(%p: !gdn.packing<seqs = 2, tokens = 16, padded>) {
  return
}

// CHECK-LABEL: func.func @max_len
// CHECK-SAME: !gdn.packing<seqs = 4, tokens = 8192, max_len = 4096>
func.func @max_len(%p: !gdn.packing<seqs = 4, tokens = 8192, max_len = 4096>) {
  return
}

// The flags may be written in either order; they print padded first.
// CHECK-LABEL: func.func @both_flags
// CHECK-SAME: !gdn.packing<seqs = ?, tokens = ?, padded, max_len = 4096>
// CHECK-SAME: !gdn.packing<seqs = ?, tokens = ?, padded, max_len = 4096>
func.func @both_flags(%a: !gdn.packing<seqs = ?, tokens = ?, padded, max_len = 4096>,
                      %b: !gdn.packing<seqs = ?, tokens = ?, max_len = 4096, padded>) {
  return
}

// A packing can be passed and returned like any value.
// CHECK-LABEL: func.func @as_result
// CHECK-SAME: (%{{.*}}: !gdn.packing<seqs = 2, tokens = 7>) -> !gdn.packing<seqs = 2, tokens = 7>
// CHECK: return %{{.*}} : !gdn.packing<seqs = 2, tokens = 7>
func.func @as_result(%p: !gdn.packing<seqs = 2, tokens = 7>) -> !gdn.packing<seqs = 2, tokens = 7> {
  return %p : !gdn.packing<seqs = 2, tokens = 7>
}
