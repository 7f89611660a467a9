// Every error of gdn.layer: attributes, ranks, hidden, GQA, the weight list per projection layout, tokens, dtype, chunk_size, scale, norm_eps and layouts.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

// Config unless a case says otherwise: H = 2, K = 4, HV = 4, V = 8, hidden 16, width 4, C = 48.
func.func @projections_missing(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{requires attribute 'projections'}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @key_heads_zero(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{attribute 'key_heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 0 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @value_heads_negative(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{attribute 'value_heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = -4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @conv_width_zero(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{attribute 'conv_width' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 0 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

// Quantised weights are not a gdn.layer operand type.
func.func @integer_weight(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xi8>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{operand #2 must be variadic of ranked tensor of bfloat16 type or 16-bit float or 32-bit float or 64-bit float values, but got 'tensor<80x16xi8>'}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xi8>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @x_rank(%x: tensor<?x2x8xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{x must be a rank-2 tensor [T, hidden], found 'tensor<?x2x8xbf16>'}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x2x8xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @y_rank(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{y must be a rank-2 tensor [T, hidden], found 'tensor<?x2x8xbf16>'}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x2x8xbf16>
  return
}

// -----

// The weight shapes depend on hidden, so it must be static.
func.func @dynamic_hidden(%x: tensor<?x?xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{x must have a static hidden size, found 'tensor<?x?xbf16>'}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x?xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x?xbf16>
  return
}

// -----

func.func @gqa_not_multiple(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{value heads (3) must be a multiple of key heads (2)}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 3 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

// Qwen3.5 weights under the Qwen3-Next layout: the count names every role.
func.func @qwen3_next_weight_count(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<48x16xbf16>, %w1: tensor<32x16xbf16>, %w2: tensor<4x16xbf16>, %w3: tensor<4x16xbf16>, %w4: tensor<48x4xbf16>, %w5: tensor<4xf32>, %w6: tensor<4xf32>, %w7: tensor<8xbf16>, %w8: tensor<16x32xbf16>) {
  // expected-error @+1 {{with projections = qwen3_next takes 7 weights (in_proj_qkvz, in_proj_ba, conv, A_log, dt_bias, norm, out_proj), found 9}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6, %w7, %w8) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<48x16xbf16>, tensor<32x16xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @qwen3_5_weight_count(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{with projections = qwen3_5 takes 9 weights (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, conv, A_log, dt_bias, norm, out_proj), found 7}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_5>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

// Weights are in PyTorch [out, in] layout; a transposed one is named by its role.
func.func @in_proj_qkvz_transposed(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<16x80xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{weight #0 (in_proj_qkvz) must have shape [80, 16], found 'tensor<16x80xbf16>'}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<16x80xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @in_proj_ba_shape(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<4x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{weight #1 (in_proj_ba) must have shape [8, 16], found 'tensor<4x16xbf16>'}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<4x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @conv_width(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x3xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{weight #2 (conv) must have shape [48, 4], found 'tensor<48x3xbf16>'}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x3xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

// A_log is per value head, not per key head.
func.func @a_log_shape(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<2xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{weight #3 (A_log) must have shape [4], found 'tensor<2xf32>'}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<2xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @dt_bias_shape(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<1x4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{weight #4 (dt_bias) must have shape [4], found 'tensor<1x4xf32>'}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<1x4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

// The norm weight is [V], shared by heads.
func.func @norm_shape(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<32xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{weight #5 (norm) must have shape [8], found 'tensor<32xbf16>'}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<32xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @out_proj_transposed(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<32x16xbf16>) {
  // expected-error @+1 {{weight #6 (out_proj) must have shape [16, 32], found 'tensor<32x16xbf16>'}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<32x16xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

// Weight shapes follow from the attributes and must be static.
func.func @dynamic_weight(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<?x32xbf16>) {
  // expected-error @+1 {{weight #6 (out_proj) must have shape [16, 32], found 'tensor<?x32xbf16>'}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<?x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @in_proj_z_shape(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<48x16xbf16>, %w1: tensor<48x16xbf16>, %w2: tensor<4x16xbf16>, %w3: tensor<4x16xbf16>, %w4: tensor<48x4xbf16>, %w5: tensor<4xf32>, %w6: tensor<4xf32>, %w7: tensor<8xbf16>, %w8: tensor<16x32xbf16>) {
  // expected-error @+1 {{weight #1 (in_proj_z) must have shape [32, 16], found 'tensor<48x16xbf16>'}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6, %w7, %w8) {projections = #gdn.projections<qwen3_5>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<48x16xbf16>, tensor<48x16xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @in_proj_a_shape(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<48x16xbf16>, %w1: tensor<32x16xbf16>, %w2: tensor<4x16xbf16>, %w3: tensor<2x16xbf16>, %w4: tensor<48x4xbf16>, %w5: tensor<4xf32>, %w6: tensor<4xf32>, %w7: tensor<8xbf16>, %w8: tensor<16x32xbf16>) {
  // expected-error @+1 {{weight #3 (in_proj_a) must have shape [4, 16], found 'tensor<2x16xbf16>'}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6, %w7, %w8) {projections = #gdn.projections<qwen3_5>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<48x16xbf16>, tensor<32x16xbf16>, tensor<4x16xbf16>, tensor<2x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @weight_token_sharded(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16, #gdn.seq<contiguous, ranks = 2>>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{weight #5 (norm) is not a token-indexed activation and must not carry a sequence layout, found #gdn.seq<contiguous, ranks = 2>}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16, #gdn.seq<contiguous, ranks = 2>>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @y_hidden(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{y dimension 1 (hidden) must be 16, found 32}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

func.func @y_tokens(%x: tensor<8x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{y has 9 tokens but x has 8; all activations of one op must cover the same tokens}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<8x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<9x16xbf16>
  return
}

// -----

func.func @packing_tokens(%x: tensor<8x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = 16>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{x has 8 tokens but the packing describes 16}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<8x16xbf16>, !gdn.packing<seqs = 2, tokens = 16>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<8x16xbf16>
  return
}

// -----

func.func @y_element_type(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{y element type ('f32') must match x ('bf16')}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xf32>
  return
}

// -----

func.func @chunk_size(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{chunk_size must be a positive power of two, found 100}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64, chunk_size = 100 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @scale(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{scale must be > 0, found -5.000000e-01}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64, scale = -5.0e-01 : f64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @norm_eps_negative(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{norm_eps must be >= 0, found -1.000000e-06}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64, norm_eps = -1.0e-06 : f64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @norm_eps_nan(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{norm_eps must be >= 0, found nan}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64, norm_eps = 0x7FF8000000000000 : f64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

func.func @layout_mismatch(%x: tensor<?x16xbf16, #gdn.seq<zigzag, ranks = 2>>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>) {
  // expected-error @+1 {{x and y must share one sequence layout, but found #gdn.seq<zigzag, ranks = 2> and natural; insert gdn.convert_layout to change a layout}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16, #gdn.seq<zigzag, ranks = 2>>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> tensor<?x16xbf16>
  return
}

// -----

// Initial states need the final states back.
func.func @states_without_finals(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>, %c0: tensor<2x48x3xbf16>, %s0: tensor<2x4x4x8xf32>, %s64: tensor<2x4x4x8xf64>, %c3: tensor<3x48x3xbf16>) {
  // expected-error @+1 {{has initial states but no final states: give both (a sequence continued across calls needs its states in and out)}}
  %y = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) initial_states(%c0, %s0) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>, tensor<2x48x3xbf16>, tensor<2x4x4x8xf32>) -> tensor<?x16xbf16>
  return
}

// -----

// Final states need initial states.
func.func @finals_without_states(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>, %c0: tensor<2x48x3xbf16>, %s0: tensor<2x4x4x8xf32>, %s64: tensor<2x4x4x8xf64>, %c3: tensor<3x48x3xbf16>) {
  // expected-error @+1 {{returns final states but takes no initial states}}
  %y, %c, %s = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>) -> (tensor<?x16xbf16>, tensor<2x48x3xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

// The conv's and the delta rule's states come together.
func.func @one_state(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>, %c0: tensor<2x48x3xbf16>, %s0: tensor<2x4x4x8xf32>, %s64: tensor<2x4x4x8xf64>, %c3: tensor<3x48x3xbf16>) {
  // expected-error @+1 {{takes 0 or 2 initial states (the conv's, the delta rule's) and returns 0 or 2 final states, found 1 and 1}}
  %y, %c = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) initial_states(%c0) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>, tensor<2x48x3xbf16>) -> (tensor<?x16xbf16>, tensor<2x48x3xbf16>)
  return
}

// -----

// One conv state per sequence of the packing.
func.func @conv_state_sequences(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>, %c0: tensor<2x48x3xbf16>, %s0: tensor<2x4x4x8xf32>, %s64: tensor<2x4x4x8xf64>, %c3: tensor<3x48x3xbf16>) {
  // expected-error @+1 {{conv initial state dimension 0 (sequences) must be 2}}
  %y, %c, %s = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) initial_states(%c3, %s0) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>, tensor<3x48x3xbf16>, tensor<2x4x4x8xf32>) -> (tensor<?x16xbf16>, tensor<2x48x3xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

// The delta rule's state is f32 in a bf16 layer.
func.func @delta_state_f64(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>, %c0: tensor<2x48x3xbf16>, %s0: tensor<2x4x4x8xf32>, %s64: tensor<2x4x4x8xf64>, %c3: tensor<3x48x3xbf16>) {
  // expected-error @+1 {{the delta rule's initial state must be 'f32' (f64 only in f64 layers), found 'tensor<2x4x4x8xf64>'}}
  %y, %c, %s = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) initial_states(%c0, %s64) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>, tensor<2x48x3xbf16>, tensor<2x4x4x8xf64>) -> (tensor<?x16xbf16>, tensor<2x48x3xbf16>, tensor<2x4x4x8xf64>)
  return
}

// -----

// The delta rule's states have one [K, V] matrix per value head.
func.func @delta_state_heads(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>, %c0: tensor<2x48x3xbf16>, %s0: tensor<2x4x4x8xf32>) {
  // expected-error @+1 {{final state dimension 1 (value heads) must be 4}}
  %y, %c, %s = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) initial_states(%c0, %s0) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>, tensor<2x48x3xbf16>, tensor<2x4x4x8xf32>) -> (tensor<?x16xbf16>, tensor<2x48x3xbf16>, tensor<2x2x4x8xf32>)
  return
}

// -----

// The conv's final state keeps W - 1 inputs.
func.func @conv_final_width(%x: tensor<?x16xbf16>, %p: !gdn.packing<seqs = 2, tokens = ?>,
    %w0: tensor<80x16xbf16>, %w1: tensor<8x16xbf16>, %w2: tensor<48x4xbf16>, %w3: tensor<4xf32>, %w4: tensor<4xf32>, %w5: tensor<8xbf16>, %w6: tensor<16x32xbf16>, %c0: tensor<2x48x3xbf16>, %s0: tensor<2x4x4x8xf32>) {
  // expected-error @+1 {{conv final state dimension 2 (width - 1) must be 3}}
  %y, %c, %s = gdn.layer %x, %p weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) initial_states(%c0, %s0) {projections = #gdn.projections<qwen3_next>, key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 4 : i64, head_dim_v = 8 : i64, conv_width = 4 : i64}
      : (tensor<?x16xbf16>, !gdn.packing<seqs = 2, tokens = ?>, tensor<80x16xbf16>, tensor<8x16xbf16>, tensor<48x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<8xbf16>, tensor<16x32xbf16>, tensor<2x48x3xbf16>, tensor<2x4x4x8xf32>) -> (tensor<?x16xbf16>, tensor<2x48x4xbf16>, tensor<2x4x4x8xf32>)
  return
}
