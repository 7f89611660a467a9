// gdn-generate-backward adds @f_forward (@f's results, then the saved
// values) and @f_backward (@f's arguments, the saved values and one
// cotangent per float result -> one gradient per float argument), leaves
// @f alone, and writes the backward as gradient ops in reverse order:
// cotangents of a value used twice add up, an argument nothing depends on
// gets zeros, forward values are recomputed before their first use unless
// saved. The numbers are checked in test/Interpreter/Gradients.
// RUN: gdn-opt --gdn-generate-backward %s | FileCheck %s
// RUN: gdn-opt --gdn-generate-backward %S/Inputs/cp_core.mlir | FileCheck %s --check-prefix=CORE
// RUN: gdn-opt --gdn-expand-layer --gdn-generate-backward="save=inputs functions=qwen3_next" %S/Inputs/cp_layer.mlir | FileCheck %s --check-prefix=INPUTS
// RUN: gdn-opt --gdn-expand-layer --gdn-generate-backward="save=activations functions=qwen3_next" %S/Inputs/cp_layer.mlir | FileCheck %s --check-prefix=ACTIVATIONS
// RUN: gdn-opt --gdn-expand-layer --gdn-generate-backward="save=none functions=qwen3_next" %S/Inputs/cp_layer.mlir | FileCheck %s --check-prefix=NONE
// RUN: gdn-opt --gdn-expand-layer --gdn-generate-backward="save=operands functions=qwen3_next" %S/Inputs/cp_layer.mlir | FileCheck %s --check-prefix=OPERANDS
// RUN: gdn-opt --gdn-expand-layer --gdn-generate-backward="save=inputs report-memory=true" %S/../../examples/qwen3_next_80b_a3b_layer.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=MEMORY

// CHECK-LABEL: func.func @shared(
// CHECK-NOT:   gdn.linear_grad
// CHECK-LABEL: func.func @shared_forward(
// CHECK-SAME:    -> (tensor<4x3xf64>, tensor<4x3xf64>) attributes {gdn.forward_of = @shared, gdn.save = "inputs"}
// CHECK-LABEL: func.func @shared_backward(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<4x6xf64>, %[[W:[a-z0-9]+]]: tensor<3x6xf64>, %{{[a-z0-9]+}}: tensor<2xf64>, %{{[a-z0-9]+}}: tensor<2xi32>, %[[DY:[a-z0-9]+]]: tensor<4x3xf64>, %[[DZ:[a-z0-9]+]]: tensor<4x3xf64>)
// CHECK-SAME:    -> (tensor<4x6xf64>, tensor<3x6xf64>, tensor<2xf64>) attributes {gdn.backward_of = @shared, gdn.save = "inputs"}
// CHECK:         %[[DX1:[a-z_0-9]+]], %[[DW1:[a-z_0-9]+]] = gdn.linear_grad %[[DZ]], %[[X]], %[[W]]
// CHECK:         %[[DX2:[a-z_0-9]+]], %[[DW2:[a-z_0-9]+]] = gdn.linear_grad %[[DY]], %[[X]], %[[W]]
// CHECK-DAG:     %[[DX:.*]] = arith.addf %[[DX1]], %[[DX2]] : tensor<4x6xf64>
// CHECK-DAG:     %[[DW:.*]] = arith.addf %[[DW1]], %[[DW2]] : tensor<3x6xf64>
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f64
// CHECK:         %[[DU:.*]] = tensor.splat %[[ZERO]] : tensor<2xf64>
// CHECK:         return %[[DX]], %[[DW]], %[[DU]]
func.func @shared(%x: tensor<4x6xf64>, %w: tensor<3x6xf64>, %unused: tensor<2xf64>,
                  %cu: tensor<2xi32>) -> (tensor<4x3xf64>, tensor<4x3xf64>) {
  %y = gdn.linear %x, %w : (tensor<4x6xf64>, tensor<3x6xf64>) -> tensor<4x3xf64>
  %z = gdn.linear %x, %w : (tensor<4x6xf64>, tensor<3x6xf64>) -> tensor<4x3xf64>
  return %y, %z : tensor<4x3xf64>, tensor<4x3xf64>
}

// The GDN core: the cheap prologue (conv, split, L2 norms, gates) is
// recomputed in the backward from the arguments; the delta rule's output
// is read by no gradient op, so nothing is saved. The packing is recomputed,
// and every sequence-aware gradient op takes it.
// CORE-LABEL: func.func @core_forward(
// CORE-SAME:    -> (tensor<?x16x2xf64>, tensor<?x16x2x2xf64>, tensor<?x64x3xf64>)
// CORE-LABEL: func.func @core_backward(
// CORE-SAME:    %[[DO:arg11]]: tensor<?x16x2xf64>, %[[DS:arg12]]: tensor<?x16x2x2xf64>, %[[DH:arg13]]: tensor<?x64x3xf64>)
// CORE-SAME:    -> (tensor<?x64xf64>, tensor<64x4xf64>, tensor<64xf64>, tensor<?x64x3xf64>, tensor<?x16xf64>, tensor<?x16xf64>, tensor<16xf64>, tensor<16xf64>, tensor<?x16x2x2xf64>)
// CORE:         %[[P:.*]] = gdn.packing %arg9 padded %arg10
// CORE:         %[[Y:.*]], %{{.*}} = gdn.causal_conv1d %arg0, %arg1, %[[P]]
// CORE:         %[[Q:.*]], %[[K:.*]], %[[V:.*]] = gdn.split_qkv %[[Y]]
// CORE:         %[[QN:.*]] = gdn.l2norm %[[Q]]
// CORE:         %[[KN:.*]] = gdn.l2norm %[[K]]
// CORE:         %[[G:.*]], %[[BETA:.*]] = gdn.gates
// CORE:         %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]], %[[DG:.*]], %[[DBETA:.*]], %[[DS0:.*]] = gdn.delta_rule_grad %[[DO]], %[[QN]], %[[KN]], %[[V]], %[[G]], %[[BETA]], %[[P]] initial_state(%arg8) final_state_grad(%[[DS]])
// CORE:         gdn.gates_grad %[[DG]], %[[DBETA]], %arg4, %arg5, %arg6, %arg7 {allow_neg_eigval = true}
// CORE:         %[[DKX:.*]] = gdn.l2norm_grad %[[DK]], %[[K]]
// CORE:         %[[DQX:.*]] = gdn.l2norm_grad %[[DQ]], %[[Q]]
// CORE:         %[[DC:.*]] = gdn.merge_qkv %[[DQX]], %[[DKX]], %[[DV]]
// CORE:         gdn.causal_conv1d_grad %[[DC]], %arg0, %arg1, %[[P]] bias(%arg2) initial_state(%arg3) final_state_grad(%[[DH]]) {activation = #gdn.act<silu>, width = 4 : i64}
// CORE-NOT:     gdn_comm
// CORE:         return

// save=inputs keeps the projections' outputs (split: the split's results
// in their place, the same bytes) and the delta rule's output;
// save=activations every value a gradient op reads; save=none nothing.
// INPUTS-LABEL: func.func @qwen3_next_forward(
// INPUTS:         return %{{.*}}, %o, %z, %mixed_qkv, %a, %b : tensor<?x8xf64>, tensor<?x8x2xf64>, tensor<?x8x2xf64>, tensor<?x32xf64>, tensor<?x8xf64>, tensor<?x8xf64>
// INPUTS-LABEL: func.func @qwen3_next_backward(
// INPUTS-SAME:    %{{.*}}: tensor<8x16xf64>, %{{.*}}: tensor<?x8x2xf64>, %{{.*}}: tensor<?x8x2xf64>, %{{.*}}: tensor<?x32xf64>, %{{.*}}: tensor<?x8xf64>, %{{.*}}: tensor<?x8xf64>, %{{.*}}: tensor<?x8xf64>)
// INPUTS-NOT:     gdn.split_qkvz
// INPUTS:         gdn.gated_rmsnorm
// INPUTS:         gdn.linear_grad
// INPUTS:         gdn.gated_rmsnorm_grad
// INPUTS-NOT:     gdn.delta_rule {{.*}}:
// INPUTS:         gdn.delta_rule_grad
// INPUTS:         gdn.merge_qkvz
// INPUTS:         gdn.linear_grad
// INPUTS:         gdn.linear_grad
// ACTIVATIONS-LABEL: func.func @qwen3_next_forward(
// The result, then 13 saved values: the normed output, o, z, the normed q
// and k, v, g, beta, a, b, k and q before their norms, the conv input.
// ACTIVATIONS:         return {{.*}} : tensor<?x8xf64>, tensor<?x8x2xf64>, tensor<?x8x2xf64>, tensor<?x8x2xf64>, tensor<?x4x2xf64>, tensor<?x4x2xf64>, tensor<?x8x2xf64>, tensor<?x8xf64>, tensor<?x8xf64>, tensor<?x8xf64>, tensor<?x8xf64>, tensor<?x4x2xf64>, tensor<?x4x2xf64>, tensor<?x32xf64>{{$}}
// ACTIVATIONS-LABEL: func.func @qwen3_next_backward(
// ACTIVATIONS-NOT:     gdn.causal_conv1d {{.*}}:
// ACTIVATIONS-NOT:     gdn.l2norm {{.*}}:
// ACTIVATIONS:         return
// save=operands keeps what inputs keeps and what the expensive ops read:
// the normed output (out_proj), q and k after their norms and v, g and beta
// (the delta rule); the backward recomputes only the conv and split the
// norms' VJPs read, and no norm, gates or delta rule.
// OPERANDS-LABEL: func.func @qwen3_next_forward(
// OPERANDS:         return %{{.*}}, %{{.*}}, %o, %z, %{{.*}}, %{{.*}}, %v, %g, %beta, %a, %b, %mixed_qkv : tensor<?x8xf64>, tensor<?x8x2xf64>, tensor<?x8x2xf64>, tensor<?x8x2xf64>, tensor<?x4x2xf64>, tensor<?x4x2xf64>, tensor<?x8x2xf64>, tensor<?x8xf64>, tensor<?x8xf64>, tensor<?x8xf64>, tensor<?x8xf64>, tensor<?x32xf64>{{$}}
// OPERANDS-LABEL: func.func @qwen3_next_backward(
// OPERANDS-NOT:     gdn.gated_rmsnorm {{.*}}:
// OPERANDS-NOT:     gdn.l2norm {{.*}}:
// OPERANDS-NOT:     gdn.gates {{.*}}:
// OPERANDS:         gdn.delta_rule_grad
// OPERANDS:         gdn.causal_conv1d
// OPERANDS-NEXT:    gdn.split_qkv
// OPERANDS-NOT:     gdn.l2norm {{.*}}:
// OPERANDS-NOT:     gdn.gates {{.*}}:
// OPERANDS:         return
// NONE-LABEL: func.func @qwen3_next_forward(
// NONE:         return %{{[a-z_0-9]+}} : tensor<?x8xf64>
// NONE-LABEL: func.func @qwen3_next_backward(
// NONE:         gdn.linear
// NONE:         gdn.delta_rule
// NONE:         gdn.linear_grad

// MEMORY: remark: save=inputs: @qwen3_next_gdn_layer_forward saves 5 value(s), 32896 bytes per token and 0 bytes besides: tensor<8192x32x128xbf16>, tensor<8192x32x128xbf16>, tensor<8192x8192xbf16>, tensor<8192x32xbf16>, tensor<8192x32xbf16>
