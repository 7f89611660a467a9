// The gradients of the per-row ops agree with central finite differences:
// the L2 norm of q and k (eps inside the root), the gates with both beta
// forms (sigmoid and 2 * sigmoid) and every parameter (A_log, dt_bias), and
// the gated RMSNorm with its weight.
// RUN: gdn-run %s --entry=l2norm --gradcheck | FileCheck %s --check-prefix=L2
// RUN: gdn-run %s --entry=gates --gradcheck | FileCheck %s --check-prefix=GATES
// RUN: gdn-run %s --entry=gates_neg --gradcheck --seed=5 | FileCheck %s --check-prefix=GATES
// RUN: gdn-run %s --entry=rmsnorm --gradcheck | FileCheck %s --check-prefix=RMS
// Softplus is the identity above 20 (slope 1), log1p(exp(u)) below; the
// steps stay on one side of the threshold.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %make_npy %t/arg0.npy '<f8' 2,4 25 -30 0 18.5 60 -5 3 19.9
// RUN: %make_npy %t/arg1.npy '<f8' 2,4 -40 40 0 1 -3 3 0.5 -0.5
// RUN: gdn-run %s --entry=gates_extreme --inputs=%t --gradcheck | FileCheck %s --check-prefix=EXTREME

// L2:      gradient #0 (activation): 6x2x3xf64  checked 36 of 36  max_rel_err = {{.*}}  ok
// L2-NEXT: gradient #1 (activation): 6x3xf64  checked 18 of 18  max_rel_err = {{.*}}  ok
func.func @l2norm(%q: tensor<6x2x3xf64>, %small: tensor<6x3xf64>)
    -> (tensor<6x2x3xf64>, tensor<6x3xf64>) {
  %qn = gdn.l2norm %q : tensor<6x2x3xf64>
  // A large eps makes its place (inside the root) matter.
  %sn = gdn.l2norm %small {eps = 0.5 : f64} : tensor<6x3xf64>
  return %qn, %sn : tensor<6x2x3xf64>, tensor<6x3xf64>
}

// GATES:      gradient #0 (activation): 7x4xf64  checked 28 of 28  max_rel_err = {{.*}}  ok
// GATES-NEXT: gradient #1 (activation): 7x4xf64  checked 28 of 28  max_rel_err = {{.*}}  ok
// GATES-NEXT: gradient #2 (A_log): 4xf64  checked 4 of 4  max_rel_err = {{.*}}  ok
// GATES-NEXT: gradient #3 (dt_bias): 4xf64  checked 4 of 4  max_rel_err = {{.*}}  ok
func.func @gates(%a: tensor<7x4xf64>, %b: tensor<7x4xf64>, %a_log: tensor<4xf64>,
                 %dt_bias: tensor<4xf64>) -> (tensor<7x4xf64>, tensor<7x4xf64>) {
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<7x4xf64>, tensor<7x4xf64>, tensor<4xf64>, tensor<4xf64>)
      -> (tensor<7x4xf64>, tensor<7x4xf64>)
  return %g, %beta : tensor<7x4xf64>, tensor<7x4xf64>
}

func.func @gates_neg(%a: tensor<7x4xf64>, %b: tensor<7x4xf64>, %a_log: tensor<4xf64>,
                     %dt_bias: tensor<4xf64>) -> (tensor<7x4xf64>, tensor<7x4xf64>) {
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias {allow_neg_eigval = true}
      : (tensor<7x4xf64>, tensor<7x4xf64>, tensor<4xf64>, tensor<4xf64>)
      -> (tensor<7x4xf64>, tensor<7x4xf64>)
  return %g, %beta : tensor<7x4xf64>, tensor<7x4xf64>
}

// EXTREME:      gradient #0 (activation): 2x4xf64  checked 8 of 8  max_rel_err = {{.*}}  ok
// EXTREME-NEXT: gradient #1 (activation): 2x4xf64  checked 8 of 8  max_rel_err = {{.*}}  ok
// EXTREME-NEXT: gradient #2 (A_log): 4xf64  checked 4 of 4  max_rel_err = {{.*}}  ok
// EXTREME-NEXT: gradient #3 (dt_bias): 4xf64  checked 4 of 4  max_rel_err = {{.*}}  ok
func.func @gates_extreme(%a: tensor<2x4xf64>, %b: tensor<2x4xf64>, %a_log: tensor<4xf64>,
                         %dt_bias: tensor<4xf64>) -> (tensor<2x4xf64>, tensor<2x4xf64>) {
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<2x4xf64>, tensor<2x4xf64>, tensor<4xf64>, tensor<4xf64>)
      -> (tensor<2x4xf64>, tensor<2x4xf64>)
  return %g, %beta : tensor<2x4xf64>, tensor<2x4xf64>
}

// RMS:      gradient #0 (activation): 5x3x4xf64  checked 60 of 60  max_rel_err = {{.*}}  ok
// RMS-NEXT: gradient #1 (activation): 5x3x4xf64  checked 60 of 60  max_rel_err = {{.*}}  ok
// RMS-NEXT: gradient #2 (norm weight): 4xf64  checked 4 of 4  max_rel_err = {{.*}}  ok
func.func @rmsnorm(%x: tensor<5x3x4xf64>, %z: tensor<5x3x4xf64>, %w: tensor<4xf64>)
    -> tensor<5x3x4xf64> {
  %y = gdn.gated_rmsnorm %x, %z, %w {eps = 1.0e-02 : f64}
      : (tensor<5x3x4xf64>, tensor<5x3x4xf64>, tensor<4xf64>) -> tensor<5x3x4xf64>
  return %y : tensor<5x3x4xf64>
}
