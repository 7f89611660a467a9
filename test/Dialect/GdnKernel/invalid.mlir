// Every error of gdn_kernel.prologue and gdn_kernel.gated_rmsnorm: ODS attribute and dtype constraints, then each verifier check (shapes, dtypes, lane groups, tile limits, eps).
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

// Attribute constraints are checked as the attribute dictionary is parsed.
func.func @key_heads_zero(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+2 {{attribute 'key_heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 0 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @threads_missing(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{requires attribute 'threads'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @eps_not_f64(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+2 {{attribute 'l2norm_eps' failed to satisfy constraint: 64-bit float attribute}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f32, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @integer_activations(%mixed: tensor<?x384xi16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values, but got 'tensor<?x384xi16>'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xi16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

// g and beta are always fp32.
func.func @bf16_gates(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{result #3 must be ranked tensor of 32-bit float values, but got 'tensor<?x4xbf16>'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xbf16>, tensor<?x4xf32>)
  return
}

// -----

func.func @packing_not_a_packing(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: tensor<3xi32>) {
  // expected-error @+1 {{must be packed-sequence metadata (cu_seqlens, optional padded offsets), but got 'tensor<3xi32>'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<3xi32>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @heads_not_grouped(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{value heads (5) must be a multiple of key heads (2)}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 5 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @width_five(%mixed: tensor<?x384xbf16>, %w: tensor<384x5xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{conv_width = 5 exceeds the kernel's limit of 4}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 5 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x5xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

// A rank-0 or rank-1 mixed_qkv has no token dimension.
func.func @mixed_rank(%mixed: tensor<384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{mixed_qkv must be [T, C], found 'tensor<384xbf16>'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @packing_tokens(%mixed: tensor<16x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = 2, tokens = 32>) {
  // expected-error @+1 {{mixed_qkv has 16 tokens but the packing describes 32}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<16x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = 2, tokens = 32>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

// With mixed_qkv dynamic, the packing's static token count sizes the other tensors.
func.func @packing_tokens_from_packing(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = 2, tokens = 32>) {
  // expected-error @+1 {{q must have shape [32, 2, 64], found 'tensor<16x2x64xbf16>'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = 2, tokens = 32>)
      -> (tensor<16x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @q_element_type(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{q, k and v must have one element type, found 'bf16' and 'f16'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

// The conv input may be wider than q, k and v (an f32 projection output),
// never narrower.
func.func @mixed_narrower(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{mixed_qkv ('bf16') must be at least as wide as q, k and v ('f32')}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xf32>, tensor<?x2x64xf32>, tensor<?x4x32xf32>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

// The kernel reads the bias as ConvWeight.
func.func @bias_element_type(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %bias: tensor<384xf32>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{conv_weight and conv_bias must have one element type, found 'bf16' and 'f32'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p bias(%bias)
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<384xf32>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @state_element_types(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %h0: tensor<?x384x3xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{conv_initial_state and conv_final_state must have one element type, found 'bf16' and 'f32'}}
  %q, %k, %v, %g, %beta, %ht = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p initial_state(%h0)
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x384x3xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x384x3xf32>)
  return
}

// -----

func.func @a_b_element_types(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xf32>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{a and b must have one element type, found 'bf16' and 'f32'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @gate_param_element_types(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xbf16>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{a_log and dt_bias must have one element type, found 'f32' and 'bf16'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xbf16>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

// 2 * 2 * 64 + 4 * 32 = 384 channels.
func.func @mixed_channels(%mixed: tensor<?x256xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{mixed_qkv must have shape [?, 384], found 'tensor<?x256xbf16>'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x256xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @weight_width(%mixed: tensor<?x384xbf16>, %w: tensor<384x3xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{conv_weight must have shape [384, 4], found 'tensor<384x3xbf16>'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x3xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @q_shape(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{q must have shape [?, 2, 64], found 'tensor<?x2x32xbf16>'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x32xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @k_shape(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{k must have shape [?, 2, 64], found 'tensor<?x4x64xbf16>'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

// v keeps its heads split: [T, HV, V].
func.func @v_shape(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{v must have shape [?, 4, 32], found 'tensor<?x128xbf16>'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x128xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @a_shape(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x2xbf16>, %b: tensor<?x2xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{a must have shape [?, 4], found 'tensor<?x2xbf16>'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @b_shape(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4x1xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{b must have shape [?, 4], found 'tensor<?x4x1xbf16>'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4x1xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @g_shape(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{g must have shape [?, 4], found 'tensor<?x2xf32>'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x2xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @beta_tokens(%mixed: tensor<16x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{beta must have shape [16, 4], found 'tensor<8x4xf32>'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<16x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<8x4xf32>)
  return
}

// -----

func.func @a_log_shape(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<2xf32>, %dt_bias: tensor<2xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{a_log must have shape [4], found 'tensor<2xf32>'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<2xf32>, tensor<2xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @dt_bias_shape(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<1x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{dt_bias must have shape [4], found 'tensor<1x4xf32>'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<1x4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @bias_shape(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %bias: tensor<256xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{conv_bias must have shape [384], found 'tensor<256xbf16>'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p bias(%bias)
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<256xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

// The conv state holds W - 1 taps.
func.func @initial_state_width(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %h0: tensor<?x384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{conv_initial_state must have shape [?, 384, 3], found 'tensor<?x384x4xbf16>'}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p initial_state(%h0)
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @final_state_sequences(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{conv_final_state must have shape [2, 384, 3], found 'tensor<3x384x3xbf16>'}}
  %q, %k, %v, %g, %beta, %ht = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<3x384x3xbf16>)
  return
}

// -----

func.func @width_one_final_state(%mixed: tensor<?x384xbf16>, %w: tensor<384x1xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{a width-1 conv has no final state}}
  %q, %k, %v, %g, %beta, %ht = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 1 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x1xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x384x0xbf16>)
  return
}

// -----

// 60 bf16 channels are 7.5 vectors of 16 bytes.
func.func @key_head_partial_vector(%mixed: tensor<?x368xbf16>, %w: tensor<368x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{a key head (60 x 'bf16') must fill a power-of-two group of at most 32 lanes of 16 bytes}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 60 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x368xbf16>, tensor<368x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x60xbf16>, tensor<?x2x60xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

// 8-byte vectors: only 8 or 16 bytes a thread.
func.func @vector_bytes_twelve(%mixed: tensor<?x384xf32>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{vector_bytes = 12 must be 8 or 16}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64, vector_bytes = 12 : i64}
      : (tensor<?x384xf32>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

// 8-byte vectors of bf16 over bf16 input: 8 bytes of input a thread and row,
// which the 16-byte copies cannot move.
func.func @vector_bytes_eight_bf16_input(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{vector_bytes = 8 of 'bf16' takes 'bf16' conv input that is not whole 16-byte words; 8-byte vectors need a conv input twice as wide as q, k and v (f32 beside bf16 or f16)}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64, vector_bytes = 8 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

// 256 bf16 channels are 32 lanes of 16 bytes but 64 of 8.
func.func @key_head_over_a_warp_of_eight_byte_vectors(%mixed: tensor<?x1152xf32>, %w: tensor<1152x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{a key head (256 x 'bf16') must fill a power-of-two group of at most 32 lanes of 8 bytes}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 256 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64, vector_bytes = 8 : i64}
      : (tensor<?x1152xf32>, tensor<1152x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x256xbf16>, tensor<?x2x256xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

// 96 bf16 channels are 12 lanes.
func.func @key_head_not_power_of_two(%mixed: tensor<?x512xbf16>, %w: tensor<512x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{a key head (96 x 'bf16') must fill a power-of-two group of at most 32 lanes of 16 bytes}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 96 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x512xbf16>, tensor<512x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x96xbf16>, tensor<?x2x96xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

// 512 bf16 channels are 64 lanes, two warps.
func.func @key_head_over_a_warp(%mixed: tensor<?x2176xbf16>, %w: tensor<2176x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{a key head (512 x 'bf16') must fill a power-of-two group of at most 32 lanes of 16 bytes}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 512 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x2176xbf16>, tensor<2176x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x512xbf16>, tensor<?x2x512xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @threads_not_warps(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{threads = 100 must be a multiple of 32, at most 1024}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 100 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @threads_too_many(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{threads = 2048 must be a multiple of 32, at most 1024}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 2048 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @rows_in_flight_too_large(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{rows_in_flight (32) must be at most 16 and tokens_per_block (128) at most 1024}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 32 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @tokens_per_block_too_large(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{rows_in_flight (2) must be at most 16 and tokens_per_block (2048) at most 1024}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 2048 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

// f32: 2 * 1 * 4 + 1 * 3 = 11 channels, 44 bytes.
func.func @channels_partial_vector(%mixed: tensor<?x11xf32>, %w: tensor<11x4xf32>, %a: tensor<?x1xf32>, %b: tensor<?x1xf32>, %a_log: tensor<1xf32>, %dt_bias: tensor<1xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{the 11 conv channels must fill whole 16-byte vectors}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 1 : i64, value_heads = 1 : i64, head_dim_k = 4 : i64, head_dim_v = 3 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x11xf32>, tensor<11x4xf32>, tensor<?x1xf32>, tensor<?x1xf32>, tensor<1xf32>, tensor<1xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x1x3xf32>, tensor<?x1xf32>, tensor<?x1xf32>)
  return
}

// -----

func.func @l2norm_eps_negative(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{l2norm_eps must be >= 0}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = -1.0e-06 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @l2norm_eps_nan(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{l2norm_eps must be >= 0}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 0x7FF8000000000000 : f64, allow_neg_eigval = false, threads = 256 : i64, tokens_per_block = 128 : i64, rows_in_flight = 2 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @rms_integer_z(%x: tensor<?x4x32xbf16>, %z: tensor<?x4x32xi16>, %w: tensor<32xbf16>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values, but got 'tensor<?x4x32xi16>'}}
  %y = gdn_kernel.gated_rmsnorm %x, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64} : (tensor<?x4x32xbf16>, tensor<?x4x32xi16>, tensor<32xbf16>) -> tensor<?x4x32xbf16>
  return
}

// -----

func.func @rms_threads_zero(%x: tensor<?x4x32xbf16>, %z: tensor<?x4x32xbf16>, %w: tensor<32xbf16>) {
  // expected-error @+1 {{attribute 'threads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %y = gdn_kernel.gated_rmsnorm %x, %z, %w {eps = 1.0e-06 : f64, threads = 0 : i64} : (tensor<?x4x32xbf16>, tensor<?x4x32xbf16>, tensor<32xbf16>) -> tensor<?x4x32xbf16>
  return
}

// -----

func.func @rms_eps_missing(%x: tensor<?x4x32xbf16>, %z: tensor<?x4x32xbf16>, %w: tensor<32xbf16>) {
  // expected-error @+1 {{requires attribute 'eps'}}
  %y = gdn_kernel.gated_rmsnorm %x, %z, %w {threads = 256 : i64} : (tensor<?x4x32xbf16>, tensor<?x4x32xbf16>, tensor<32xbf16>) -> tensor<?x4x32xbf16>
  return
}

// -----

func.func @rms_x_rank(%x: tensor<?x128xbf16>, %z: tensor<?x4x32xbf16>, %w: tensor<32xbf16>) {
  // expected-error @+1 {{x must be [T, HV, V], found 'tensor<?x128xbf16>'}}
  %y = gdn_kernel.gated_rmsnorm %x, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64} : (tensor<?x128xbf16>, tensor<?x4x32xbf16>, tensor<32xbf16>) -> tensor<?x4x32xbf16>
  return
}

// -----

func.func @rms_dynamic_head_dim(%x: tensor<?x4x?xbf16>, %z: tensor<?x4x32xbf16>, %w: tensor<32xbf16>) {
  // expected-error @+1 {{the head dim V must be static}}
  %y = gdn_kernel.gated_rmsnorm %x, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64} : (tensor<?x4x?xbf16>, tensor<?x4x32xbf16>, tensor<32xbf16>) -> tensor<?x4x32xbf16>
  return
}

// -----

func.func @rms_z_shape(%x: tensor<?x4x32xbf16>, %z: tensor<?x8x32xbf16>, %w: tensor<32xbf16>) {
  // expected-error @+1 {{z must have shape [?, 4, 32], found 'tensor<?x8x32xbf16>'}}
  %y = gdn_kernel.gated_rmsnorm %x, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64} : (tensor<?x4x32xbf16>, tensor<?x8x32xbf16>, tensor<32xbf16>) -> tensor<?x4x32xbf16>
  return
}

// -----

func.func @rms_y_tokens(%x: tensor<16x4x32xbf16>, %z: tensor<?x4x32xbf16>, %w: tensor<32xbf16>) {
  // expected-error @+1 {{y must have shape [16, 4, 32], found 'tensor<8x4x32xbf16>'}}
  %y = gdn_kernel.gated_rmsnorm %x, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64} : (tensor<16x4x32xbf16>, tensor<?x4x32xbf16>, tensor<32xbf16>) -> tensor<8x4x32xbf16>
  return
}

// -----

// The weight is shared by all heads: [V], not [HV, V].
func.func @rms_weight_shape(%x: tensor<?x4x32xbf16>, %z: tensor<?x4x32xbf16>, %w: tensor<4x32xbf16>) {
  // expected-error @+1 {{weight must have shape [32], found 'tensor<4x32xbf16>'}}
  %y = gdn_kernel.gated_rmsnorm %x, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64} : (tensor<?x4x32xbf16>, tensor<?x4x32xbf16>, tensor<4x32xbf16>) -> tensor<?x4x32xbf16>
  return
}

// -----

func.func @rms_head_partial_vector(%x: tensor<?x4x20xbf16>, %z: tensor<?x4x20xbf16>, %w: tensor<20xbf16>) {
  // expected-error @+1 {{a value head (20 x 'bf16') must fill a power-of-two group of at most 32 lanes of 16 bytes}}
  %y = gdn_kernel.gated_rmsnorm %x, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64} : (tensor<?x4x20xbf16>, tensor<?x4x20xbf16>, tensor<20xbf16>) -> tensor<?x4x20xbf16>
  return
}

// -----

func.func @rms_head_over_a_warp(%x: tensor<?x4x512xf32>, %z: tensor<?x4x512xf32>, %w: tensor<512xf32>) {
  // expected-error @+1 {{a value head (512 x 'f32') must fill a power-of-two group of at most 32 lanes of 16 bytes}}
  %y = gdn_kernel.gated_rmsnorm %x, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64} : (tensor<?x4x512xf32>, tensor<?x4x512xf32>, tensor<512xf32>) -> tensor<?x4x512xf32>
  return
}

// -----

func.func @rms_threads(%x: tensor<?x4x32xbf16>, %z: tensor<?x4x32xbf16>, %w: tensor<32xbf16>) {
  // expected-error @+1 {{threads = 48 must be a multiple of 32, at most 1024}}
  %y = gdn_kernel.gated_rmsnorm %x, %z, %w {eps = 1.0e-06 : f64, threads = 48 : i64} : (tensor<?x4x32xbf16>, tensor<?x4x32xbf16>, tensor<32xbf16>) -> tensor<?x4x32xbf16>
  return
}

// -----

func.func @rms_eps_negative(%x: tensor<?x4x32xbf16>, %z: tensor<?x4x32xbf16>, %w: tensor<32xbf16>) {
  // expected-error @+1 {{eps must be >= 0}}
  %y = gdn_kernel.gated_rmsnorm %x, %z, %w {eps = -1.0 : f64, threads = 256 : i64} : (tensor<?x4x32xbf16>, tensor<?x4x32xbf16>, tensor<32xbf16>) -> tensor<?x4x32xbf16>
  return
}

// -----

func.func @shared_memory_too_large(%mixed: tensor<?x384xbf16>, %w: tensor<384x4xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{threads = 1024 with rows_in_flight = 16 needs 262160 bytes of shared memory (16-byte words of conv input a thread and row: 1), above 232448; use fewer threads or rows in flight}}
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %mixed, %w, %a, %b, %a_log, %dt_bias, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 32 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>, l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false, threads = 1024 : i64, tokens_per_block = 128 : i64, rows_in_flight = 16 : i64}
      : (tensor<?x384xbf16>, tensor<384x4xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>)
  return
}
