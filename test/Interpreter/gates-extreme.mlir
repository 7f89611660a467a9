// Known answers for the gates at extreme inputs, stored in f32:
//   a + dt_bias = 30 is above the softplus threshold (softplus = x): g = -30;
//   A_log = 10, a + dt_bias = 0: g = -e^10 ln 2 = -15267.583 (f32);
//   a + dt_bias = -30: g = -log1p(e^-30) = -9.3576229e-14;
//   A_log = 2.5, a + dt_bias = 1.5: g = -e^2.5 softplus(1.5) = -20.727457;
//   beta = sigmoid(b): 0.5, 1 (b = 100), sigmoid(1) = 0.7310586, 0 (b = -800).
// RUN: gdn-run %s --entry=plain --print-values | FileCheck %s
// RUN: gdn-run %s --entry=negative_eigenvalues --print-values | FileCheck %s --check-prefix=NEG

func.func @plain() -> (tensor<1x4xf32>, tensor<1x4xf32>) {
  %a = arith.constant dense<[[29.0, 0.0, -31.0, 0.5]]> : tensor<1x4xf64>
  %b = arith.constant dense<[[0.0, 100.0, 1.0, -800.0]]> : tensor<1x4xf64>
  %a_log = arith.constant dense<[0.0, 10.0, 0.0, 2.5]> : tensor<4xf64>
  %dt_bias = arith.constant dense<[1.0, 0.0, 1.0, 1.0]> : tensor<4xf64>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<1x4xf64>, tensor<1x4xf64>, tensor<4xf64>, tensor<4xf64>)
      -> (tensor<1x4xf32>, tensor<1x4xf32>)
  return %g, %beta : tensor<1x4xf32>, tensor<1x4xf32>
}

// CHECK:      result #0: 1x4xf32
// CHECK-NEXT:   -30 -15267.58301 -9.357622912e-14 -20.72745705
// CHECK:      result #1: 1x4xf32
// CHECK-NEXT:   0.5 1 0.7310585976 0

func.func @negative_eigenvalues() -> tensor<1x2xf32> {
  %a = arith.constant dense<[[0.0, 0.0]]> : tensor<1x2xf64>
  %b = arith.constant dense<[[0.0, 1.0]]> : tensor<1x2xf64>
  %a_log = arith.constant dense<0.0> : tensor<2xf64>
  %dt_bias = arith.constant dense<0.0> : tensor<2xf64>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias {allow_neg_eigval = true}
      : (tensor<1x2xf64>, tensor<1x2xf64>, tensor<2xf64>, tensor<2xf64>)
      -> (tensor<1x2xf32>, tensor<1x2xf32>)
  return %beta : tensor<1x2xf32>
}

// 2 * sigmoid(b): 1 and 1.4621172 (f32).
// NEG:      result #0: 1x2xf32
// NEG-NEXT:   1 1.462117195
