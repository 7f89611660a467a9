// Misuse of --gradients and --gradcheck stops with a message.
// RUN: rm -rf %t && mkdir -p %t
//
// Finite differences through f32 storage would measure rounding.
// RUN: not gdn-run %s --entry=f32 --gradcheck 2>&1 | FileCheck %s --check-prefix=F32
// F32: gdn-run: error: the gradient check needs a float64 program, but @f32 has argument #0 of type tensor<3x2xf32>; finite differences through f32 or bf16 storage measure rounding, not derivatives
// RUN: not gdn-run %s --entry=f32_inside --gradcheck 2>&1 | FileCheck %s --check-prefix=INSIDE
// INSIDE: gdn-run: error: the gradient check needs a float64 program, but @f32_inside has a result of 'gdn.linear' at loc({{.*}}gradients-errors.mlir":{{[0-9]+}}:{{[0-9]+}}) of type tensor<3x2xf32>
//
// RUN: not gdn-run %s %s --compare --gradcheck --entry=f64 2>&1 | FileCheck %s --check-prefix=COMPARE
// COMPARE: gdn-run: error: --gradcheck checks one program; compare the gradients of two with --gradients --compare
// RUN: not gdn-run %s --entry=f64 --check-gradients=%t 2>&1 | FileCheck %s --check-prefix=NEEDS
// NEEDS: gdn-run: error: --check-gradients needs --gradcheck
// RUN: not gdn-run %s --entry=f64 --cotangents=%t 2>&1 | FileCheck %s --check-prefix=COTANGENTS
// COTANGENTS: gdn-run: error: --cotangents needs --gradients or --gradcheck
//
// Files of the wrong shape, or missing.
// RUN: %make_npy %t/cotangent0.npy '<f8' 2,2 1 2 3 4
// RUN: not gdn-run %s --entry=f64 --gradients --cotangents=%t 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: gdn-run: error: {{.*}}cotangent0.npy has shape 2x2xf64 but result #0 of @f64 has shape 3x2xf64
// RUN: not gdn-run %s --entry=f64 --gradcheck --check-gradients=%t 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: gdn-run: error: {{.*}}grad0.npy

func.func @f32(%x: tensor<3x2xf32>, %w: tensor<2x2xf32>) -> tensor<3x2xf32> {
  %y = gdn.linear %x, %w : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

func.func @f32_inside(%x: tensor<3x2xf64>, %w: tensor<2x2xf64>) -> tensor<3x2xf64> {
  %y = gdn.linear %x, %w : (tensor<3x2xf64>, tensor<2x2xf64>) -> tensor<3x2xf32>
  %z = gdn.linear %y, %w : (tensor<3x2xf32>, tensor<2x2xf64>) -> tensor<3x2xf64>
  return %z : tensor<3x2xf64>
}

func.func @f64(%x: tensor<3x2xf64>, %w: tensor<2x2xf64>) -> tensor<3x2xf64> {
  %y = gdn.linear %x, %w : (tensor<3x2xf64>, tensor<2x2xf64>) -> tensor<3x2xf64>
  return %y : tensor<3x2xf64>
}
