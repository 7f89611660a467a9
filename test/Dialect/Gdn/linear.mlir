// Round trip of gdn.linear: flat and per-head inputs and outputs, dynamic sizes, f64 and layouts.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s
// RUN: gdn-opt %s --mlir-print-op-generic | gdn-opt | FileCheck %s

// CHECK-LABEL: func.func @flat
// CHECK: gdn.linear %{{.*}}, %{{.*}} : (tensor<8192x2048xbf16>, tensor<12288x2048xbf16>) -> tensor<8192x12288xbf16>
func.func @flat(%x: tensor<8192x2048xbf16>, %w: tensor<12288x2048xbf16>) -> tensor<8192x12288xbf16> {
  %y = gdn.linear %x, %w : (tensor<8192x2048xbf16>, tensor<12288x2048xbf16>) -> tensor<8192x12288xbf16>
  return %y : tensor<8192x12288xbf16>
}

// A projection straight into heads: Out = 32 * 128.
// CHECK-LABEL: func.func @into_heads
// CHECK: gdn.linear %{{.*}}, %{{.*}} : (tensor<?x2048xbf16>, tensor<4096x2048xbf16>) -> tensor<?x32x128xbf16>
func.func @into_heads(%x: tensor<?x2048xbf16>, %w: tensor<4096x2048xbf16>) -> tensor<?x32x128xbf16> {
  %y = gdn.linear %x, %w : (tensor<?x2048xbf16>, tensor<4096x2048xbf16>) -> tensor<?x32x128xbf16>
  return %y : tensor<?x32x128xbf16>
}

// The output projection reads heads: In = 32 * 128.
// CHECK-LABEL: func.func @from_heads
// CHECK: gdn.linear %{{.*}}, %{{.*}} : (tensor<?x32x128xbf16>, tensor<2048x4096xbf16>) -> tensor<?x2048xbf16>
func.func @from_heads(%x: tensor<?x32x128xbf16>, %w: tensor<2048x4096xbf16>) -> tensor<?x2048xbf16> {
  %y = gdn.linear %x, %w : (tensor<?x32x128xbf16>, tensor<2048x4096xbf16>) -> tensor<?x2048xbf16>
  return %y : tensor<?x2048xbf16>
}

// Dynamic feature sizes are checked at run time.
// CHECK-LABEL: func.func @dynamic_features
// CHECK: gdn.linear %{{.*}}, %{{.*}} : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?x128xf32>
func.func @dynamic_features(%x: tensor<?x?xf32>, %w: tensor<?x?xf32>) -> tensor<?x?x128xf32> {
  %y = gdn.linear %x, %w : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?x128xf32>
  return %y : tensor<?x?x128xf32>
}

// CHECK-LABEL: func.func @f64_reference
// CHECK: gdn.linear %{{.*}}, %{{.*}} : (tensor<7x16xf64>, tensor<4x16xf64>) -> tensor<7x4xf64>
func.func @f64_reference(%x: tensor<7x16xf64>, %w: tensor<4x16xf64>) -> tensor<7x4xf64> {
  %y = gdn.linear %x, %w : (tensor<7x16xf64>, tensor<4x16xf64>) -> tensor<7x4xf64>
  return %y : tensor<7x4xf64>
}

// A token shard stays a token shard; the weight is replicated.
// CHECK-LABEL: func.func @sharded
// CHECK: gdn.linear %{{.*}}, %{{.*}} : (tensor<2048x2048xbf16, #gdn.seq<contiguous, ranks = 4>>, tensor<64x2048xbf16>) -> tensor<2048x64xbf16, #gdn.seq<contiguous, ranks = 4>>
func.func @sharded(%x: tensor<2048x2048xbf16, #gdn.seq<contiguous, ranks = 4>>, %w: tensor<64x2048xbf16>)
    -> tensor<2048x64xbf16, #gdn.seq<contiguous, ranks = 4>> {
  %y = gdn.linear %x, %w : (tensor<2048x2048xbf16, #gdn.seq<contiguous, ranks = 4>>, tensor<64x2048xbf16>)
      -> tensor<2048x64xbf16, #gdn.seq<contiguous, ranks = 4>>
  return %y : tensor<2048x64xbf16, #gdn.seq<contiguous, ranks = 4>>
}
