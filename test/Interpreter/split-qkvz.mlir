// Known answer for Qwen3-Next's interleaving: 2 key heads (K = 1), 4 value
// heads (V = 1), so each group is [q | k | v v | z z] and [b b | a a].
// RUN: gdn-run %s --print-values | FileCheck %s

func.func @main() -> (tensor<1x8xf64>, tensor<1x4x1xf64>, tensor<1x4xf64>, tensor<1x4xf64>) {
  %qkvz = arith.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0,
                                 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]]> : tensor<1x12xf64>
  %ba = arith.constant dense<[[21.0, 22.0, 23.0, 24.0, 31.0, 32.0, 33.0, 34.0]]> : tensor<1x8xf64>
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 1 : i64}
      : (tensor<1x12xf64>, tensor<1x8xf64>)
      -> (tensor<1x8xf64>, tensor<1x4x1xf64>, tensor<1x4xf64>, tensor<1x4xf64>)
  return %mixed, %z, %b, %a : tensor<1x8xf64>, tensor<1x4x1xf64>, tensor<1x4xf64>, tensor<1x4xf64>
}

// [q0 q1 | k0 k1 | v0 v1 v2 v3]
// CHECK:      result #0: 1x8xf64
// CHECK-NEXT:   1 11 2 12 3 4 13 14
// CHECK:      result #1: 1x4x1xf64
// CHECK-NEXT:   5 6 15 16
// CHECK:      result #2: 1x4xf64
// CHECK-NEXT:   21 22 31 32
// CHECK:      result #3: 1x4xf64
// CHECK-NEXT:   23 24 33 34
