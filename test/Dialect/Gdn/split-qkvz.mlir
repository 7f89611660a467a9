// Round trip of gdn.split_qkvz: the Qwen3-Next shapes, r = 1 and r = 2, dynamic tokens, f64 and layouts.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s
// RUN: gdn-opt %s --mlir-print-op-generic | gdn-opt | FileCheck %s

// Qwen3-Next-80B-A3B: 16 key heads, 32 value heads, K = V = 128.
// CHECK-LABEL: func.func @qwen3_next
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = gdn.split_qkvz %{{.*}}, %{{.*}} {head_dim_k = 128 : i64, key_heads = 16 : i64} : (tensor<8192x12288xbf16>, tensor<8192x64xbf16>) -> (tensor<8192x8192xbf16>, tensor<8192x32x128xbf16>, tensor<8192x32xbf16>, tensor<8192x32xbf16>)
func.func @qwen3_next(%qkvz: tensor<8192x12288xbf16>, %ba: tensor<8192x64xbf16>) {
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 16 : i64, head_dim_k = 128 : i64}
      : (tensor<8192x12288xbf16>, tensor<8192x64xbf16>)
      -> (tensor<8192x8192xbf16>, tensor<8192x32x128xbf16>, tensor<8192x32xbf16>, tensor<8192x32xbf16>)
  return
}

// One value head per key head (r = 1), K != V, dynamic tokens.
// CHECK-LABEL: func.func @no_grouping
// CHECK: gdn.split_qkvz %{{.*}}, %{{.*}} {head_dim_k = 4 : i64, key_heads = 2 : i64} : (tensor<?x80xf32>, tensor<?x4xf32>) -> (tensor<?x48xf32>, tensor<?x2x16xf32>, tensor<?x2xf32>, tensor<?x2xf32>)
func.func @no_grouping(%qkvz: tensor<?x80xf32>, %ba: tensor<?x4xf32>) {
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xf32>, tensor<?x4xf32>)
      -> (tensor<?x48xf32>, tensor<?x2x16xf32>, tensor<?x2xf32>, tensor<?x2xf32>)
  return
}

// Dynamic feature sizes of the operands pass; z fixes the interleaving.
// CHECK-LABEL: func.func @dynamic_features
// CHECK: gdn.split_qkvz %{{.*}}, %{{.*}} {head_dim_k = 4 : i64, key_heads = 2 : i64} : (tensor<?x?xf64>, tensor<?x?xf64>) -> (tensor<?x?xf64>, tensor<?x4x8xf64>, tensor<?x?xf64>, tensor<?x?xf64>)
func.func @dynamic_features(%qkvz: tensor<?x?xf64>, %ba: tensor<?x?xf64>) {
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x?xf64>, tensor<?x?xf64>)
      -> (tensor<?x?xf64>, tensor<?x4x8xf64>, tensor<?x?xf64>, tensor<?x?xf64>)
  return
}

// CHECK-LABEL: func.func @sharded
// CHECK: gdn.split_qkvz %{{.*}}, %{{.*}} {head_dim_k = 4 : i64, key_heads = 2 : i64} : (tensor<?x80xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x8xbf16, #gdn.seq<zigzag, ranks = 2>>) -> (tensor<?x48xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x4x8xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x4xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x4xbf16, #gdn.seq<zigzag, ranks = 2>>)
func.func @sharded(%qkvz: tensor<?x80xbf16, #gdn.seq<zigzag, ranks = 2>>, %ba: tensor<?x8xbf16, #gdn.seq<zigzag, ranks = 2>>) {
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x8xbf16, #gdn.seq<zigzag, ranks = 2>>)
      -> (tensor<?x48xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x4x8xbf16, #gdn.seq<zigzag, ranks = 2>>,
          tensor<?x4xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x4xbf16, #gdn.seq<zigzag, ranks = 2>>)
  return
}
