// The check can fail. --check-gradients makes --gradcheck judge gradients
// from elsewhere (another implementation; here, another program) against
// the finite differences of this program. Gradients of a mutant, a copy of
// the program with one attribute changed by sed, are wrong for it exactly
// where the mutation matters, and the check says so.
// RUN: rm -rf %t && mkdir -p %t
//
// Its own gradients, written to .npy and read back, pass.
// RUN: gdn-run %s --entry=gates --gradients --outputs=%t/own | FileCheck %s --check-prefix=OWN
// RUN: gdn-run %s --entry=gates --gradcheck --check-gradients=%t/own | FileCheck %s --check-prefix=PASS
// OWN: gradient #3: 4xf64
// PASS: gradient check of @gates (1 rank(s), gradients from {{.*}}own)
// PASS-COUNT-4: {{  ok$}}
//
// beta = 2 sigmoid(b) in the program, sigmoid(b) in the mutant: the mutant's
// gradient of b is half the right one; those of a, A_log and dt_bias (which
// only feed g) are right.
// RUN: sed 's/allow_neg_eigval = true/allow_neg_eigval = false/' %s > %t/mutant.mlir
// RUN: gdn-run %t/mutant.mlir --entry=gates --gradients --outputs=%t/mutant > /dev/null
// RUN: not gdn-run %s --entry=gates --gradcheck --check-gradients=%t/mutant > %t/out 2> %t/err
// RUN: FileCheck %s --check-prefix=HALF < %t/out
// RUN: FileCheck %s --check-prefix=HALF-ERROR < %t/err
// HALF:      gradient #0 (activation): 6x4xf64  checked 24 of 24  max_rel_err = {{.*}}  ok
// HALF-NEXT: gradient #1 (activation): 6x4xf64  checked 24 of 24  max_rel_err = 5.00e-01  FAIL
// HALF-NEXT: gradient #2 (A_log): 4xf64  checked 4 of 4  max_rel_err = {{.*}}  ok
// HALF-NEXT: gradient #3 (dt_bias): 4xf64  checked 4 of 4  max_rel_err = {{.*}}  ok
// HALF-ERROR: gdn-run: error: gradient check failed: argument #1 (activation) entry [{{[0-9]+}}, {{[0-9]+}}]: the gradient is {{.*}} but finite differences give {{.*}} (relative error 5.000000e-01 > 1.000000e-06)
//
// A small error is caught too: the delta rule's output is linear in its
// scale, so scaling by 1.00002 scales every gradient by 1.00002, a relative
// error of 2e-5.
// RUN: sed 's/scale = 5.0e-01/scale = 5.0001e-01/' %s > %t/scaled.mlir
// RUN: gdn-run %t/scaled.mlir --entry=delta --gradients --outputs=%t/scaled --seqlens=4,0,9 > /dev/null
// RUN: not gdn-run %s --entry=delta --gradcheck --check-gradients=%t/scaled --seqlens=4,0,9 | FileCheck %s --check-prefix=SCALED
// SCALED-COUNT-5: max_rel_err = 2.00e-05  FAIL
//
// Comparing the two programs' gradients directly fails too.
// RUN: not gdn-run --compare %s %t/mutant.mlir --entry=gates --gradients | FileCheck %s --check-prefix=COMPARE
// COMPARE: gradient #0: 6x4xf64  rel_rms = 0.000e+00  max_abs = 0.000e+00  ok
// COMPARE: gradient #1: 6x4xf64  rel_rms = 1.000e+00  max_abs = {{.*}}  FAIL

func.func @gates(%a: tensor<6x4xf64>, %b: tensor<6x4xf64>, %a_log: tensor<4xf64>,
                 %dt_bias: tensor<4xf64>) -> (tensor<6x4xf64>, tensor<6x4xf64>) {
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias {allow_neg_eigval = true}
      : (tensor<6x4xf64>, tensor<6x4xf64>, tensor<4xf64>, tensor<4xf64>)
      -> (tensor<6x4xf64>, tensor<6x4xf64>)
  return %g, %beta : tensor<6x4xf64>, tensor<6x4xf64>
}

func.func @delta(%q: tensor<?x1x2xf64>, %k: tensor<?x1x2xf64>, %v: tensor<?x1x3xf64>,
                 %g: tensor<?x1xf64>, %beta: tensor<?x1xf64>, %cu: tensor<?xi32>)
    -> tensor<?x1x3xf64> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta, %p {scale = 5.0e-01 : f64}
      : (tensor<?x1x2xf64>, tensor<?x1x2xf64>, tensor<?x1x3xf64>, tensor<?x1xf64>,
         tensor<?x1xf64>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x1x3xf64>, tensor<?x1x2x3xf64>)
  return %o : tensor<?x1x3xf64>
}
