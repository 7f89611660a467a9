// Round trip of gdn.l2norm: default and explicit eps, ranks, dtypes and layouts.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s
// RUN: gdn-opt %s --mlir-print-op-generic | gdn-opt | FileCheck %s

// The default eps (1e-6) is not printed.
// CHECK-LABEL: func.func @default_eps
// CHECK: gdn.l2norm %{{.*}} : tensor<?x16x128xbf16>
// CHECK-NOT: eps
func.func @default_eps(%q: tensor<?x16x128xbf16>) -> tensor<?x16x128xbf16> {
  %0 = gdn.l2norm %q : tensor<?x16x128xbf16>
  %1 = gdn.l2norm %0 {eps = 1.0e-06 : f64} : tensor<?x16x128xbf16>
  return %1 : tensor<?x16x128xbf16>
}

// CHECK-LABEL: func.func @explicit_eps
// CHECK: gdn.l2norm %{{.*}} {eps = 1.000000e-05 : f64} : tensor<8192x16x128xf32>
func.func @explicit_eps(%q: tensor<8192x16x128xf32>) -> tensor<8192x16x128xf32> {
  %0 = gdn.l2norm %q {eps = 1.0e-05 : f64} : tensor<8192x16x128xf32>
  return %0 : tensor<8192x16x128xf32>
}

// eps = 0 is allowed (a zero vector then gives NaN, as the formula says).
// CHECK-LABEL: func.func @zero_eps_rank1_f64
// CHECK: gdn.l2norm %{{.*}} {eps = 0.000000e+00 : f64} : tensor<128xf64>
func.func @zero_eps_rank1_f64(%q: tensor<128xf64>) -> tensor<128xf64> {
  %0 = gdn.l2norm %q {eps = 0.0 : f64} : tensor<128xf64>
  return %0 : tensor<128xf64>
}

// CHECK-LABEL: func.func @dynamic_f16
// CHECK: gdn.l2norm %{{.*}} : tensor<?x?x?xf16>
func.func @dynamic_f16(%q: tensor<?x?x?xf16>) -> tensor<?x?x?xf16> {
  %0 = gdn.l2norm %q : tensor<?x?x?xf16>
  return %0 : tensor<?x?x?xf16>
}

// CHECK-LABEL: func.func @layouts
// CHECK: gdn.l2norm %{{.*}} : tensor<?x16x128xbf16, #gdn.seq<zigzag, ranks = 4>>
// CHECK: gdn.l2norm %{{.*}} : tensor<8192x4x128xbf16, #gdn.heads<ranks = 4>>
func.func @layouts(%a: tensor<?x16x128xbf16, #gdn.seq<zigzag, ranks = 4>>,
                   %b: tensor<8192x4x128xbf16, #gdn.heads<ranks = 4>>) {
  %0 = gdn.l2norm %a : tensor<?x16x128xbf16, #gdn.seq<zigzag, ranks = 4>>
  %1 = gdn.l2norm %b : tensor<8192x4x128xbf16, #gdn.heads<ranks = 4>>
  return
}
