// gdn.layer with initial_states(conv, delta) and both final states, float64,
// small dims (hidden 8, 2 key heads, 4 value heads, K = 4, V = 2, conv
// width 4): every gradient of the composite rule (x, the weights and both
// initial states, with the final states' cotangents flowing back) agrees
// with central finite differences, for both projection layouts; the
// expanded layer (gdn-expand-layer threads the states into the conv and
// the delta rule) computes the same three results and the same gradients.
// RUN: gdn-run %s --entry=qwen3_next --gradcheck --gradcheck-entries=24 --seqlens=3,0,1,65,11 | FileCheck %s --check-prefix=NEXT
// RUN: gdn-run %s --entry=qwen3_5 --gradcheck --gradcheck-entries=24 --seqlens=65,1,0,14 --seed=3 | FileCheck %s --check-prefix=QWEN35
// RUN: gdn-opt --gdn-expand-layer %s -o %t.mlir
// RUN: FileCheck %s --check-prefix=EXPAND < %t.mlir
// RUN: gdn-run --compare %s %t.mlir --entry=qwen3_next --seqlens=3,0,1,65,11 | FileCheck %s --check-prefix=SAME
// RUN: gdn-run --compare %s %t.mlir --gradients --entry=qwen3_5 --seqlens=65,1,14 --seed=3 | FileCheck %s --check-prefix=SAME-GRAD
// RUN: gdn-run --compare %s %t.mlir --entry=qwen3_5 --seqlens=40,24 --delta-rule=chunked | FileCheck %s --check-prefix=SAME

// NEXT:      gradient #0 (activation): {{.*}}  ok
// NEXT:      gradient #4 (conv weight): 24x4xf64  checked 24 of 96  max_rel_err = {{.*}}  ok
// NEXT:      gradient #9 (state): {{.*}}x24x3xf64  checked 24 of {{[0-9]+}}  max_rel_err = {{.*}}  ok
// NEXT-NEXT: gradient #10 (state): {{.*}}x4x4x2xf64  checked 24 of {{[0-9]+}}  max_rel_err = {{.*}}  ok
// NEXT-NOT:  FAIL
// QWEN35:    gradient #0 (activation): {{.*}}  ok
// QWEN35:    gradient #11 (state): {{.*}}x24x3xf64  checked 24 of {{[0-9]+}}  max_rel_err = {{.*}}  ok
// QWEN35-NEXT: gradient #12 (state): {{.*}}x4x4x2xf64  checked 24 of {{[0-9]+}}  max_rel_err = {{.*}}  ok
// QWEN35-NOT: FAIL

// EXPAND-LABEL: func.func @qwen3_next
// EXPAND:       %{{.*}}, %[[CONV:.*]] = gdn.causal_conv1d {{.*}} initial_state(%arg9)
// EXPAND:       %{{.*}}, %[[STATE:.*]] = gdn.delta_rule {{.*}} initial_state(%arg10)
// EXPAND:       return %{{.*}}, %[[CONV]], %[[STATE]]

// SAME:      result #0: {{.*}}rel_rms = {{0\.000e\+00|[0-9.]+e-1[3-9]}}  max_abs = {{.*}}  ok
// SAME-NEXT: result #1: {{.*}}rel_rms = {{0\.000e\+00|[0-9.]+e-1[3-9]}}  max_abs = {{.*}}  ok
// SAME-NEXT: result #2: {{.*}}rel_rms = {{0\.000e\+00|[0-9.]+e-1[3-9]}}  max_abs = {{.*}}  ok
// SAME-GRAD-NOT: FAIL
// SAME-GRAD: ok

func.func @qwen3_next(%x: tensor<?x8xf64>, %cu: tensor<?xi32>,
                      %w_qkvz: tensor<32x8xf64>, %w_ba: tensor<8x8xf64>,
                      %conv: tensor<24x4xf64>, %a_log: tensor<4xf64>,
                      %dt_bias: tensor<4xf64>, %norm: tensor<2xf64>,
                      %w_out: tensor<8x8xf64>, %conv0: tensor<?x24x3xf64>,
                      %s0: tensor<?x4x4x2xf64>)
    -> (tensor<?x8xf64>, tensor<?x24x3xf64>, tensor<?x4x4x2xf64>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %y, %conv_t, %s_t = gdn.layer %x, %p
      weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      initial_states(%conv0, %s0)
      {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 2 : i64,
       conv_width = 4 : i64}
      : (tensor<?x8xf64>, !gdn.packing<seqs = ?, tokens = ?>, tensor<32x8xf64>,
         tensor<8x8xf64>, tensor<24x4xf64>, tensor<4xf64>, tensor<4xf64>,
         tensor<2xf64>, tensor<8x8xf64>, tensor<?x24x3xf64>, tensor<?x4x4x2xf64>)
      -> (tensor<?x8xf64>, tensor<?x24x3xf64>, tensor<?x4x4x2xf64>)
  return %y, %conv_t, %s_t : tensor<?x8xf64>, tensor<?x24x3xf64>, tensor<?x4x4x2xf64>
}

func.func @qwen3_5(%x: tensor<?x8xf64>, %cu: tensor<?xi32>,
                   %w_qkv: tensor<24x8xf64>, %w_z: tensor<8x8xf64>,
                   %w_b: tensor<4x8xf64>, %w_a: tensor<4x8xf64>,
                   %conv: tensor<24x4xf64>, %a_log: tensor<4xf64>,
                   %dt_bias: tensor<4xf64>, %norm: tensor<2xf64>,
                   %w_out: tensor<8x8xf64>, %conv0: tensor<?x24x3xf64>,
                   %s0: tensor<?x4x4x2xf64>)
    -> (tensor<?x8xf64>, tensor<?x24x3xf64>, tensor<?x4x4x2xf64>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %y, %conv_t, %s_t = gdn.layer %x, %p
      weights(%w_qkv, %w_z, %w_b, %w_a, %conv, %a_log, %dt_bias, %norm, %w_out)
      initial_states(%conv0, %s0)
      {projections = #gdn.projections<qwen3_5>, key_heads = 2 : i64,
       value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 2 : i64,
       conv_width = 4 : i64}
      : (tensor<?x8xf64>, !gdn.packing<seqs = ?, tokens = ?>, tensor<24x8xf64>,
         tensor<8x8xf64>, tensor<4x8xf64>, tensor<4x8xf64>, tensor<24x4xf64>,
         tensor<4xf64>, tensor<4xf64>, tensor<2xf64>, tensor<8x8xf64>,
         tensor<?x24x3xf64>, tensor<?x4x4x2xf64>)
      -> (tensor<?x8xf64>, tensor<?x24x3xf64>, tensor<?x4x4x2xf64>)
  return %y, %conv_t, %s_t : tensor<?x8xf64>, tensor<?x24x3xf64>, tensor<?x4x4x2xf64>
}
