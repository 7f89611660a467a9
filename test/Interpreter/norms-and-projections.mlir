// Known answers for the per-token ops: l2norm (eps inside the root), gated
// RMSNorm (weight * x / rms * silu(z)), a projection into per-head shape, and
// bf16 storage rounding of a result.
// RUN: gdn-run %s --entry=l2norm --print-values | FileCheck %s --check-prefix=L2
// RUN: gdn-run %s --entry=rmsnorm --print-values | FileCheck %s --check-prefix=RMS
// RUN: gdn-run %s --entry=linear --print-values | FileCheck %s --check-prefix=LIN
// RUN: gdn-run %s --entry=bf16_storage --print-values | FileCheck %s --check-prefix=BF16

func.func @l2norm() -> tensor<1x1x2xf64> {
  %x = arith.constant dense<[[[3.0, 4.0]]]> : tensor<1x1x2xf64>
  %y = gdn.l2norm %x {eps = 0.0 : f64} : tensor<1x1x2xf64>
  return %y : tensor<1x1x2xf64>
}
// L2:      result #0: 1x1x2xf64
// L2-NEXT:   0.6 0.8

func.func @rmsnorm() -> tensor<1x1x2xf64> {
  // rms([3, 4]) = sqrt(12.5); silu(z) chosen as 0 and ~z for large z.
  %x = arith.constant dense<[[[3.0, 4.0]]]> : tensor<1x1x2xf64>
  %z = arith.constant dense<[[[0.0, 800.0]]]> : tensor<1x1x2xf64>
  %w = arith.constant dense<[2.0, 0.5]> : tensor<2xf64>
  %y = gdn.gated_rmsnorm %x, %z, %w {eps = 0.0 : f64}
      : (tensor<1x1x2xf64>, tensor<1x1x2xf64>, tensor<2xf64>) -> tensor<1x1x2xf64>
  return %y : tensor<1x1x2xf64>
}
// 0.5 * 4 / sqrt(12.5) * 800 = 452.5483399593904
// RMS:      result #0: 1x1x2xf64
// RMS-NEXT:   0 452.5483

func.func @linear() -> tensor<2x2x1xf64> {
  %x = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf64>
  %w = arith.constant dense<[[1.0, 0.0], [1.0, 1.0]]> : tensor<2x2xf64>
  %y = gdn.linear %x, %w : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2x1xf64>
  return %y : tensor<2x2x1xf64>
}
// LIN:      result #0: 2x2x1xf64
// LIN-NEXT:   1 3 3 7

func.func @bf16_storage() -> tensor<1x1x2xbf16> {
  // 1/3 and 257 are not bf16 values: they round to 0.333984375 and 256 (ties
  // to even).
  %w = arith.constant dense<[[0.33333333333333331, 0.0], [257.0, 0.0]]> : tensor<2x2xf64>
  %xf = arith.constant dense<[[1.0, 0.0]]> : tensor<1x2xf64>
  %yb = gdn.linear %xf, %w : (tensor<1x2xf64>, tensor<2x2xf64>) -> tensor<1x1x2xbf16>
  return %yb : tensor<1x1x2xbf16>
}
// BF16:      result #0: 1x1x2xbf16
// BF16-NEXT:   0.333984375 256
