// Every error of gdn.gates: dtypes, ranks, head counts, tokens, replicated parameters and layouts.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

// Gates are fp32 (f64 in reference programs) whatever the input precision.
func.func @bf16_gates(%a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>) {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit float or 64-bit float values, but got 'tensor<?x4xbf16>'}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4xbf16>, tensor<?x4xf32>)
  return
}

// -----

func.func @integer_input(%a: tensor<?x4xi32>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float or 64-bit float values, but got 'tensor<?x4xi32>'}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x4xi32>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @a_rank(%a: tensor<?x4x1xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>) {
  // expected-error @+1 {{a must be a rank-2 tensor [T, HV], found 'tensor<?x4x1xbf16>'}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x4x1xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @b_rank(%a: tensor<?x4xbf16>, %b: tensor<?xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>) {
  // expected-error @+1 {{b must be a rank-2 tensor [T, HV], found 'tensor<?xbf16>'}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x4xbf16>, tensor<?xbf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @a_log_rank(%a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<1x4xf32>, %dt_bias: tensor<4xf32>) {
  // expected-error @+1 {{a_log must be a rank-1 tensor [HV], found 'tensor<1x4xf32>'}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<1x4xf32>, tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @dt_bias_rank(%a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<f32>) {
  // expected-error @+1 {{dt_bias must be a rank-1 tensor [HV], found 'tensor<f32>'}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<f32>) -> (tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @g_rank(%a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>) {
  // expected-error @+1 {{g must be a rank-2 tensor [T, HV], found 'tensor<?x4x1xf32>'}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4x1xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @beta_rank(%a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>) {
  // expected-error @+1 {{beta must be a rank-2 tensor [T, HV], found 'tensor<?xf32>'}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?xf32>)
  return
}

// -----

func.func @b_heads(%a: tensor<?x4xbf16>, %b: tensor<?x8xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>) {
  // expected-error @+1 {{b dimension 1 (value heads) must be 4, found 8}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x4xbf16>, tensor<?x8xbf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @a_log_heads(%a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<3xf32>, %dt_bias: tensor<4xf32>) {
  // expected-error @+1 {{a_log dimension 0 (value heads) must be 4, found 3}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<3xf32>, tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @dt_bias_heads(%a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<5xf32>) {
  // expected-error @+1 {{dt_bias dimension 0 (value heads) must be 4, found 5}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<5xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @g_heads(%a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>) {
  // expected-error @+1 {{g dimension 1 (value heads) must be 4, found 2}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x2xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @beta_heads(%a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>) {
  // expected-error @+1 {{beta dimension 1 (value heads) must be 4, found 6}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?x6xf32>)
  return
}

// -----

func.func @b_tokens(%a: tensor<8x4xbf16>, %b: tensor<9x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>) {
  // expected-error @+1 {{b has 9 tokens but a has 8; all activations of one op must cover the same tokens}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<8x4xbf16>, tensor<9x4xbf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

// With a dynamic, the first static token count (b) is the reference.
func.func @g_tokens(%a: tensor<?x4xbf16>, %b: tensor<8x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>) {
  // expected-error @+1 {{g has 7 tokens but b has 8}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x4xbf16>, tensor<8x4xbf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<7x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @beta_tokens(%a: tensor<8x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>) {
  // expected-error @+1 {{beta has 16 tokens but a has 8}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<8x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4xf32>, tensor<16x4xf32>)
  return
}

// -----

func.func @a_log_token_sharded(%a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32, #gdn.seq<contiguous, ranks = 2>>, %dt_bias: tensor<4xf32>) {
  // expected-error @+1 {{a_log is not a token-indexed activation and must not carry a sequence layout, found #gdn.seq<contiguous, ranks = 2>}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32, #gdn.seq<contiguous, ranks = 2>>, tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @dt_bias_token_sharded(%a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32, #gdn.seq<zigzag, ranks = 2>>) {
  // expected-error @+1 {{dt_bias is not a token-indexed activation and must not carry a sequence layout, found #gdn.seq<zigzag, ranks = 2>}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32, #gdn.seq<zigzag, ranks = 2>>) -> (tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

// The results must keep the inputs' layout.
func.func @layout_mismatch(%a: tensor<?x4xbf16, #gdn.seq<zigzag, ranks = 2>>, %b: tensor<?x4xbf16, #gdn.seq<zigzag, ranks = 2>>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>) {
  // expected-error @+1 {{a, b, g and beta must share one sequence layout, but found #gdn.seq<zigzag, ranks = 2> and natural; insert gdn.convert_layout to change a layout}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x4xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x4xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @layout_mismatch_inputs(%a: tensor<?x4xbf16>, %b: tensor<?x4xbf16, #gdn.heads<ranks = 2>>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>) {
  // expected-error @+1 {{a, b, g and beta must share one sequence layout, but found natural and #gdn.heads<ranks = 2>}}
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias : (tensor<?x4xbf16>, tensor<?x4xbf16, #gdn.heads<ranks = 2>>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>)
  return
}
