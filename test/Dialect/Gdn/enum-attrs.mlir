// Round trip of the enum attributes #gdn.act and #gdn.projections, with every case of each.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s
// RUN: gdn-opt %s --mlir-print-op-generic | gdn-opt | FileCheck %s

// CHECK-LABEL: func.func @activations
// CHECK-SAME: attributes {none = #gdn.act<none>, silu = #gdn.act<silu>}
func.func @activations() attributes {none = #gdn.act<none>, silu = #gdn.act<silu>} {
  return
}

// CHECK-LABEL: func.func @projections
// CHECK-SAME: attributes {a = #gdn.projections<qwen3_next>, b = #gdn.projections<qwen3_5>}
func.func @projections() attributes {a = #gdn.projections<qwen3_next>,
                                     b = #gdn.projections<qwen3_5>} {
  return
}
