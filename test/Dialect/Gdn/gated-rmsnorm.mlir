// Round trip of gdn.gated_rmsnorm: default and explicit eps, dtypes, dynamic sizes and layouts.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s
// RUN: gdn-opt %s --mlir-print-op-generic | gdn-opt | FileCheck %s

// The default eps (1e-6) is not printed.
// CHECK-LABEL: func.func @default_eps
// CHECK: gdn.gated_rmsnorm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8192x32x128xbf16>, tensor<8192x32x128xbf16>, tensor<128xbf16>) -> tensor<8192x32x128xbf16>
// CHECK-NOT: eps
func.func @default_eps(%o: tensor<8192x32x128xbf16>, %z: tensor<8192x32x128xbf16>, %w: tensor<128xbf16>) -> tensor<8192x32x128xbf16> {
  %y = gdn.gated_rmsnorm %o, %z, %w {eps = 1.0e-06 : f64}
      : (tensor<8192x32x128xbf16>, tensor<8192x32x128xbf16>, tensor<128xbf16>) -> tensor<8192x32x128xbf16>
  return %y : tensor<8192x32x128xbf16>
}

// CHECK-LABEL: func.func @explicit_eps_dynamic
// CHECK: gdn.gated_rmsnorm %{{.*}}, %{{.*}}, %{{.*}} {eps = 1.000000e-05 : f64} : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?xf32>) -> tensor<?x?x?xf32>
func.func @explicit_eps_dynamic(%o: tensor<?x?x?xf32>, %z: tensor<?x?x?xf32>, %w: tensor<?xf32>) -> tensor<?x?x?xf32> {
  %y = gdn.gated_rmsnorm %o, %z, %w {eps = 1.0e-05 : f64}
      : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?xf32>) -> tensor<?x?x?xf32>
  return %y : tensor<?x?x?xf32>
}

// Mixed precisions are allowed: the op computes in fp32 anyway.
// CHECK-LABEL: func.func @mixed_precision
// CHECK: gdn.gated_rmsnorm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x32x128xbf16>, tensor<?x32x128xf16>, tensor<128xf32>) -> tensor<?x32x128xbf16>
func.func @mixed_precision(%o: tensor<?x32x128xbf16>, %z: tensor<?x32x128xf16>, %w: tensor<128xf32>) -> tensor<?x32x128xbf16> {
  %y = gdn.gated_rmsnorm %o, %z, %w
      : (tensor<?x32x128xbf16>, tensor<?x32x128xf16>, tensor<128xf32>) -> tensor<?x32x128xbf16>
  return %y : tensor<?x32x128xbf16>
}

// CHECK-LABEL: func.func @f64_reference
// CHECK: gdn.gated_rmsnorm %{{.*}}, %{{.*}}, %{{.*}} {eps = 0.000000e+00 : f64} : (tensor<7x4x8xf64>, tensor<7x4x8xf64>, tensor<8xf64>) -> tensor<7x4x8xf64>
func.func @f64_reference(%o: tensor<7x4x8xf64>, %z: tensor<7x4x8xf64>, %w: tensor<8xf64>) -> tensor<7x4x8xf64> {
  %y = gdn.gated_rmsnorm %o, %z, %w {eps = 0.0 : f64}
      : (tensor<7x4x8xf64>, tensor<7x4x8xf64>, tensor<8xf64>) -> tensor<7x4x8xf64>
  return %y : tensor<7x4x8xf64>
}

// CHECK-LABEL: func.func @layouts
// CHECK: gdn.gated_rmsnorm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x32x128xbf16, #gdn.seq<zigzag, ranks = 8>>, tensor<?x32x128xbf16, #gdn.seq<zigzag, ranks = 8>>, tensor<128xbf16>) -> tensor<?x32x128xbf16, #gdn.seq<zigzag, ranks = 8>>
// CHECK: gdn.gated_rmsnorm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>, tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>, tensor<128xbf16>) -> tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>
func.func @layouts(%o: tensor<?x32x128xbf16, #gdn.seq<zigzag, ranks = 8>>, %z: tensor<?x32x128xbf16, #gdn.seq<zigzag, ranks = 8>>,
                   %oh: tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>, %zh: tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>,
                   %w: tensor<128xbf16>) {
  %y = gdn.gated_rmsnorm %o, %z, %w
      : (tensor<?x32x128xbf16, #gdn.seq<zigzag, ranks = 8>>, tensor<?x32x128xbf16, #gdn.seq<zigzag, ranks = 8>>, tensor<128xbf16>)
      -> tensor<?x32x128xbf16, #gdn.seq<zigzag, ranks = 8>>
  %yh = gdn.gated_rmsnorm %oh, %zh, %w
      : (tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>, tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>, tensor<128xbf16>)
      -> tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>
  return
}
