// Which cotangents gdn-generate-backward stores narrower than their primals:
// an f32 gdn.linear output of bf16 operands gets a bf16 cotangent only when
// every use (through the ops that only move it) has a gradient op that can
// return one; an f32 output that reaches an L2 norm keeps an f32 cotangent
// (its gradient op takes one type), and the IR still verifies.
// RUN: gdn-opt %s --gdn-generate-backward | FileCheck %s

// CHECK-LABEL: func.func @to_conv_backward
// CHECK: gdn.causal_conv1d_grad {{.*}} : (tensor<?x8xbf16>, tensor<?x8xf32>, tensor<8x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>) -> (tensor<?x8xbf16>, tensor<8x4xbf16>)
// CHECK: gdn.linear_grad {{.*}} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<8x8xbf16>) -> (tensor<?x8xbf16>, tensor<8x8xbf16>)
func.func @to_conv(%x: tensor<?x8xbf16>, %w: tensor<8x8xbf16>, %c: tensor<8x4xbf16>,
                   %p: !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x8xbf16> {
  %y = gdn.linear %x, %w : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xf32>
  %z = gdn.causal_conv1d %y, %c, %p {width = 4 : i64}
      : (tensor<?x8xf32>, tensor<8x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x8xbf16>
  return %z : tensor<?x8xbf16>
}

// CHECK-LABEL: func.func @to_l2norm_backward
// CHECK: gdn.l2norm_grad {{.*}} : tensor<?x2x4xf32>
// CHECK: gdn.linear_grad {{.*}} : (tensor<?x2x4xf32>, tensor<?x8xbf16>, tensor<8x8xbf16>) -> (tensor<?x8xbf16>, tensor<8x8xbf16>)
func.func @to_l2norm(%x: tensor<?x8xbf16>, %w: tensor<8x8xbf16>) -> tensor<?x2x4xf32> {
  %y = gdn.linear %x, %w : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x2x4xf32>
  %n = gdn.l2norm %y : tensor<?x2x4xf32>
  return %n : tensor<?x2x4xf32>
}

// One use that cannot take a narrow cotangent is enough to keep f32.
// CHECK-LABEL: func.func @both_backward
// CHECK: gdn.causal_conv1d_grad {{.*}} -> (tensor<?x8xf32>, tensor<8x4xbf16>)
// CHECK: gdn.linear_grad {{.*}} : (tensor<?x8xf32>, tensor<?x8xbf16>, tensor<8x8xbf16>)
func.func @both(%x: tensor<?x8xbf16>, %w: tensor<8x8xbf16>, %c: tensor<8x4xbf16>,
                %p: !gdn.packing<seqs = ?, tokens = ?>) -> (tensor<?x8xbf16>, tensor<?x2x4xf32>) {
  %y = gdn.linear %x, %w : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xf32>
  %z = gdn.causal_conv1d %y, %c, %p {width = 4 : i64}
      : (tensor<?x8xf32>, tensor<8x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x8xbf16>
  %c0 = arith.constant 0 : index
  %t = tensor.dim %y, %c0 : tensor<?x8xf32>
  %r = tensor.expand_shape %y [[0], [1, 2]] output_shape [%t, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
  %n = gdn.l2norm %r : tensor<?x2x4xf32>
  return %z, %n : tensor<?x8xbf16>, tensor<?x2x4xf32>
}
