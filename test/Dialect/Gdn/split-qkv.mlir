// Round trip of gdn.split_qkv: the Qwen shapes, GQA, K != V, dynamic tokens and channels, f64 and layouts.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s
// RUN: gdn-opt %s --mlir-print-op-generic | gdn-opt | FileCheck %s

// 16 key heads, 32 value heads, K = V = 128: 2*16*128 + 32*128 = 8192 channels.
// CHECK-LABEL: func.func @qwen
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = gdn.split_qkv %{{.*}} : tensor<8192x8192xbf16> -> tensor<8192x16x128xbf16>, tensor<8192x16x128xbf16>, tensor<8192x32x128xbf16>
func.func @qwen(%c: tensor<8192x8192xbf16>) {
  %q, %k, %v = gdn.split_qkv %c : tensor<8192x8192xbf16>
      -> tensor<8192x16x128xbf16>, tensor<8192x16x128xbf16>, tensor<8192x32x128xbf16>
  return
}

// H = HV, K != V, dynamic tokens: 2*2*4 + 2*8 = 32 channels.
// CHECK-LABEL: func.func @no_grouping
// CHECK: gdn.split_qkv %{{.*}} : tensor<?x32xf32> -> tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x8xf32>
func.func @no_grouping(%c: tensor<?x32xf32>) {
  %q, %k, %v = gdn.split_qkv %c : tensor<?x32xf32> -> tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x8xf32>
  return
}

// Dynamic channels, and dynamic k sizes, are checked at run time.
// CHECK-LABEL: func.func @dynamic_channels_f64
// CHECK: gdn.split_qkv %{{.*}} : tensor<?x?xf64> -> tensor<?x2x4xf64>, tensor<?x?x?xf64>, tensor<?x4x8xf64>
func.func @dynamic_channels_f64(%c: tensor<?x?xf64>) {
  %q, %k, %v = gdn.split_qkv %c : tensor<?x?xf64> -> tensor<?x2x4xf64>, tensor<?x?x?xf64>, tensor<?x4x8xf64>
  return
}

// CHECK-LABEL: func.func @sharded
// CHECK: gdn.split_qkv %{{.*}} : tensor<?x48xbf16, #gdn.seq<contiguous, ranks = 2>> -> tensor<?x2x4xbf16, #gdn.seq<contiguous, ranks = 2>>, tensor<?x2x4xbf16, #gdn.seq<contiguous, ranks = 2>>, tensor<?x4x8xbf16, #gdn.seq<contiguous, ranks = 2>>
func.func @sharded(%c: tensor<?x48xbf16, #gdn.seq<contiguous, ranks = 2>>) {
  %q, %k, %v = gdn.split_qkv %c : tensor<?x48xbf16, #gdn.seq<contiguous, ranks = 2>>
      -> tensor<?x2x4xbf16, #gdn.seq<contiguous, ranks = 2>>, tensor<?x2x4xbf16, #gdn.seq<contiguous, ranks = 2>>,
         tensor<?x4x8xbf16, #gdn.seq<contiguous, ranks = 2>>
  return
}
