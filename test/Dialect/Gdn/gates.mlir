// Round trip of gdn.gates: allow_neg_eigval, input dtypes, fp32/f64 results, dynamic sizes and layouts.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s
// RUN: gdn-opt %s --mlir-print-op-generic | gdn-opt | FileCheck %s

// bf16 inputs, fp32 gates; allow_neg_eigval = false is the default and is not printed.
// CHECK-LABEL: func.func @bf16_inputs
// CHECK: %{{.*}}, %{{.*}} = gdn.gates %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8192x32xbf16>, tensor<8192x32xbf16>, tensor<32xf32>, tensor<32xf32>) -> (tensor<8192x32xf32>, tensor<8192x32xf32>)
// CHECK-NOT: allow_neg_eigval
func.func @bf16_inputs(%a: tensor<8192x32xbf16>, %b: tensor<8192x32xbf16>, %a_log: tensor<32xf32>, %dt_bias: tensor<32xf32>) {
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias {allow_neg_eigval = false}
      : (tensor<8192x32xbf16>, tensor<8192x32xbf16>, tensor<32xf32>, tensor<32xf32>) -> (tensor<8192x32xf32>, tensor<8192x32xf32>)
  return
}

// CHECK-LABEL: func.func @neg_eigval_dynamic
// CHECK: gdn.gates %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {allow_neg_eigval = true} : (tensor<?x?xf16>, tensor<?x?xf16>, tensor<?xbf16>, tensor<?xbf16>) -> (tensor<?x?xf32>, tensor<?x?xf32>)
func.func @neg_eigval_dynamic(%a: tensor<?x?xf16>, %b: tensor<?x?xf16>, %a_log: tensor<?xbf16>, %dt_bias: tensor<?xbf16>) {
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias {allow_neg_eigval = true}
      : (tensor<?x?xf16>, tensor<?x?xf16>, tensor<?xbf16>, tensor<?xbf16>) -> (tensor<?x?xf32>, tensor<?x?xf32>)
  return
}

// f64 reference program: f64 gates.
// CHECK-LABEL: func.func @f64_reference
// CHECK: gdn.gates %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<7x4xf64>, tensor<7x4xf64>, tensor<4xf64>, tensor<4xf64>) -> (tensor<7x4xf64>, tensor<7x4xf64>)
func.func @f64_reference(%a: tensor<7x4xf64>, %b: tensor<7x4xf64>, %a_log: tensor<4xf64>, %dt_bias: tensor<4xf64>) {
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<7x4xf64>, tensor<7x4xf64>, tensor<4xf64>, tensor<4xf64>) -> (tensor<7x4xf64>, tensor<7x4xf64>)
  return
}

// Token-sharded activations, replicated per-head parameters.
// CHECK-LABEL: func.func @sharded
// CHECK: gdn.gates %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x32xbf16, #gdn.seq<contiguous, ranks = 2>>, tensor<?x32xbf16, #gdn.seq<contiguous, ranks = 2>>, tensor<32xf32>, tensor<32xf32>) -> (tensor<?x32xf32, #gdn.seq<contiguous, ranks = 2>>, tensor<?x32xf32, #gdn.seq<contiguous, ranks = 2>>)
func.func @sharded(%a: tensor<?x32xbf16, #gdn.seq<contiguous, ranks = 2>>, %b: tensor<?x32xbf16, #gdn.seq<contiguous, ranks = 2>>,
                   %a_log: tensor<32xf32>, %dt_bias: tensor<32xf32>) {
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<?x32xbf16, #gdn.seq<contiguous, ranks = 2>>, tensor<?x32xbf16, #gdn.seq<contiguous, ranks = 2>>, tensor<32xf32>, tensor<32xf32>)
      -> (tensor<?x32xf32, #gdn.seq<contiguous, ranks = 2>>, tensor<?x32xf32, #gdn.seq<contiguous, ranks = 2>>)
  return
}

// Head-sharded activations: each rank holds all tokens of its heads.
// CHECK-LABEL: func.func @head_sharded
// CHECK: gdn.gates %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8192x8xbf16, #gdn.heads<ranks = 4>>, tensor<8192x8xbf16, #gdn.heads<ranks = 4>>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8192x8xf32, #gdn.heads<ranks = 4>>, tensor<8192x8xf32, #gdn.heads<ranks = 4>>)
func.func @head_sharded(%a: tensor<8192x8xbf16, #gdn.heads<ranks = 4>>, %b: tensor<8192x8xbf16, #gdn.heads<ranks = 4>>,
                        %a_log: tensor<8xf32>, %dt_bias: tensor<8xf32>) {
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<8192x8xbf16, #gdn.heads<ranks = 4>>, tensor<8192x8xbf16, #gdn.heads<ranks = 4>>, tensor<8xf32>, tensor<8xf32>)
      -> (tensor<8192x8xf32, #gdn.heads<ranks = 4>>, tensor<8192x8xf32, #gdn.heads<ranks = 4>>)
  return
}
