// Known answers, and the files --gradients reads and writes. For
// y = W x (x: 1x2, W: 3x2) and the cotangent c of y, the gradients are
// dL/dx = W^T c and dL/dW = c x^T.
// RUN: rm -rf %t && mkdir -p %t/in %t/cot
// RUN: %make_npy %t/in/arg0.npy '<f8' 1,2 1 2
// RUN: %make_npy %t/in/arg1.npy '<f8' 3,2 1 0 0 1 1 1
// RUN: %make_npy %t/cot/cotangent0.npy '<f8' 1,3 1 10 100
// RUN: gdn-run %s --entry=linear --inputs=%t/in --cotangents=%t/cot --gradients --print-values --outputs=%t/out | FileCheck %s
// CHECK:      result #0: 1x3xf64
// CHECK-NEXT:   1 2 3
// CHECK:      gradient #0: 1x2xf64
// CHECK-NEXT:   101 110
// CHECK:      gradient #1: 3x2xf64
// CHECK-NEXT:   1 2 10 20 100 200
//
// --outputs writes resultN.npy and gradN.npy (float64); --save-inputs
// writes the cotangents it drew next to the inputs, and giving them back
// reproduces the gradients exactly.
// RUN: %python -c "import sys; d = open(sys.argv[1], 'rb').read(); print(d[:6] == b'\x93NUMPY', b\"'<f8'\" in d[:128], len(d) - d.index(b'\n') - 1)" %t/out/grad1.npy | FileCheck %s --check-prefix=NPY
// NPY: True True 48
// RUN: gdn-run %s --entry=pair --gradients --seed=4 --save-inputs=%t/saved --outputs=%t/first > %t/first.txt
// RUN: gdn-run %s --entry=pair --gradients --inputs=%t/saved --cotangents=%t/saved --outputs=%t/second > %t/second.txt
// RUN: diff %t/first.txt %t/second.txt
// RUN: cmp %t/first/grad0.npy %t/second/grad0.npy
// RUN: cmp %t/first/grad1.npy %t/second/grad1.npy
// RUN: ls %t/saved | FileCheck %s --check-prefix=SAVED
// SAVED: arg0.npy
// SAVED: arg1.npy
// SAVED: cotangent0.npy
// SAVED: cotangent1.npy
//
// A delta rule with one token from the state S0: o = scale S1^T q with
// S1 = e^g (I - beta k k^T) S0 + beta k v^T. With q = k = e_1, beta = 1,
// g = 0 and S0 = 0, o = scale v, so dL/dv = scale c = c / sqrt(2) and
// dL/dq = scale S1 c = scale e_1 (v . c) (here v . c = 1*1 + 1*2 = 3).
// RUN: %make_npy %t/in/arg0.npy '<f8' 1,1,2 1 0
// RUN: %make_npy %t/in/arg1.npy '<f8' 1,1,2 1 0
// RUN: %make_npy %t/in/arg2.npy '<f8' 1,1,2 1 1
// RUN: %make_npy %t/in/arg3.npy '<f8' 1,1 0
// RUN: %make_npy %t/in/arg4.npy '<f8' 1,1 1
// RUN: %make_npy %t/in/arg5.npy '<i4' 2 0 1
// RUN: %make_npy %t/cot/cotangent0.npy '<f8' 1,1,2 1 2
// RUN: gdn-run %s --entry=delta --inputs=%t/in --cotangents=%t/cot --gradients --print-values | FileCheck %s --check-prefix=DELTA
// DELTA:      gradient #0: 1x1x2xf64
// DELTA-NEXT:   2.121320344 0
// DELTA:      gradient #2: 1x1x2xf64
// DELTA-NEXT:   0.7071067812 1.414213562
// DELTA:      gradient #5: none (tensor<2xi32> is not differentiable)

func.func @linear(%x: tensor<1x2xf64>, %w: tensor<3x2xf64>) -> tensor<1x3xf64> {
  %y = gdn.linear %x, %w : (tensor<1x2xf64>, tensor<3x2xf64>) -> tensor<1x3xf64>
  return %y : tensor<1x3xf64>
}

func.func @pair(%x: tensor<4x2xf64>, %w: tensor<3x2xf64>) -> (tensor<4x3xf64>, tensor<4x2xf64>) {
  %y = gdn.linear %x, %w : (tensor<4x2xf64>, tensor<3x2xf64>) -> tensor<4x3xf64>
  %n = gdn.l2norm %x : tensor<4x2xf64>
  return %y, %n : tensor<4x3xf64>, tensor<4x2xf64>
}

func.func @delta(%q: tensor<1x1x2xf64>, %k: tensor<1x1x2xf64>, %v: tensor<1x1x2xf64>,
                 %g: tensor<1x1xf64>, %beta: tensor<1x1xf64>, %cu: tensor<2xi32>)
    -> tensor<1x1x2xf64> {
  %p = gdn.packing %cu : tensor<2xi32> -> !gdn.packing<seqs = 1, tokens = 1>
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<1x1x2xf64>, tensor<1x1x2xf64>, tensor<1x1x2xf64>, tensor<1x1xf64>,
         tensor<1x1xf64>, !gdn.packing<seqs = 1, tokens = 1>)
      -> (tensor<1x1x2xf64>, tensor<1x1x2x2xf64>)
  return %o : tensor<1x1x2xf64>
}
