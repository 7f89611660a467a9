// Every error of gdn.delta_rule: dtypes, ranks, GQA head counts, K/V dims, tokens, states, chunk_size, scale and layouts.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

// Gates are fp32 by definition.
func.func @bf16_gate(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xbf16>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{operand #3 must be ranked tensor of 32-bit float or 64-bit float values, but got 'tensor<?x4xbf16>'}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

// States are fp32 by definition.
func.func @bf16_initial_state(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>, %h0: tensor<2x4x4x8xbf16>) {
  // expected-error @+1 {{operand #6 must be ranked tensor of 32-bit float or 64-bit float values, but got 'tensor<2x4x4x8xbf16>'}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p initial_state(%h0)
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>, tensor<2x4x4x8xbf16>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @bf16_final_state(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{result #1 must be ranked tensor of 32-bit float or 64-bit float values, but got 'tensor<2x4x4x8xbf16>'}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xbf16>)
  return
}

// -----

func.func @integer_v(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xi32>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{operand #2 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float or 64-bit float values, but got 'tensor<?x4x8xi32>'}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xi32>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

// The packing is required: forgetting the sequence boundaries does not verify.
func.func @packing_operand(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: tensor<3xi32>) {
  // expected-error @+1 {{operand #5 must be packed-sequence metadata (cu_seqlens, optional padded offsets), but got 'tensor<3xi32>'}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<3xi32>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

// Un-split heads ([T, H*K]) are a rank error.
func.func @q_rank(%q: tensor<?x8xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{q must be a rank-3 tensor [T, H, K], found 'tensor<?x8xbf16>'}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x8xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @k_rank(%q: tensor<?x2x4xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{k must be a rank-3 tensor [T, H, K], found 'tensor<?x8xbf16>'}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x8xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @v_rank(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x32xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{v must be a rank-3 tensor [T, HV, V], found 'tensor<?x32xbf16>'}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x32xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @g_rank(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4x1xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{g must be a rank-2 tensor [T, HV], found 'tensor<?x4x1xf32>'}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4x1xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @beta_rank(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{beta must be a rank-2 tensor [T, HV], found 'tensor<?xf32>'}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @o_rank(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{o must be a rank-3 tensor [T, HV, V], found 'tensor<?x32xbf16>'}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x32xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @final_state_rank(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{final_state must be a rank-4 tensor [N, HV, K, V], found 'tensor<2x4x32xf32>'}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x32xf32>)
  return
}

// -----

// Zero key heads leave value heads nothing to read (and would divide by zero).
func.func @zero_key_heads(%q: tensor<?x0x4xbf16>, %k: tensor<?x0x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{q dimension 1 (key heads) must be >= 1, found 0}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x0x4xbf16>, tensor<?x0x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

// K = 0 has no default scale K^-1/2.
func.func @zero_head_dim_k(%q: tensor<?x2x0xbf16>, %k: tensor<?x2x0xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{q dimension 2 (head dim K) must be >= 1, found 0}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x0xbf16>, tensor<?x2x0xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x0x8xf32>)
  return
}

// -----

func.func @gqa_not_multiple(%q: tensor<?x4x4xbf16>, %k: tensor<?x4x4xbf16>, %v: tensor<?x6x8xbf16>, %g: tensor<?x6xf32>, %beta: tensor<?x6xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{value heads (6) must be a multiple of key heads (4)}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x4x4xbf16>, tensor<?x4x4xbf16>, tensor<?x6x8xbf16>, tensor<?x6xf32>, tensor<?x6xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x6x8xbf16>, tensor<2x6x4x8xf32>)
  return
}

// -----

// There may not be fewer value heads than key heads.
func.func @gqa_fewer_value_heads(%q: tensor<?x4x4xbf16>, %k: tensor<?x4x4xbf16>, %v: tensor<?x2x8xbf16>, %g: tensor<?x2xf32>, %beta: tensor<?x2xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{value heads (2) must be a multiple of key heads (4)}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x4x4xbf16>, tensor<?x4x4xbf16>, tensor<?x2x8xbf16>, tensor<?x2xf32>, tensor<?x2xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x2x8xbf16>, tensor<2x2x4x8xf32>)
  return
}

// -----

func.func @default_scale_dynamic_k(%q: tensor<?x2x?xbf16>, %k: tensor<?x2x?xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{the default scale K^-1/2 needs a static head dim K; give 'scale' explicitly}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x?xbf16>, tensor<?x2x?xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x?x8xf32>)
  return
}

// -----

func.func @k_heads(%q: tensor<?x2x4xbf16>, %k: tensor<?x4x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{k dimension 1 (key heads) must be 2, found 4}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x4x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @k_head_dim(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x8xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{k dimension 2 (head dim K) must be 4, found 8}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x8xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @g_heads(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x2xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{g dimension 1 (value heads) must be 4, found 2}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x2xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @beta_heads(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x8xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{beta dimension 1 (value heads) must be 4, found 8}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x8xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @o_heads(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{o dimension 1 (value heads) must be 4, found 2}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x2x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @o_head_dim(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{o dimension 2 (head dim V) must be 8, found 4}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x4xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @k_tokens(%q: tensor<8x2x4xbf16>, %k: tensor<9x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{k has 9 tokens but q has 8; all activations of one op must cover the same tokens}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<8x2x4xbf16>, tensor<9x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @v_tokens(%q: tensor<8x2x4xbf16>, %k: tensor<8x2x4xbf16>, %v: tensor<7x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{v has 7 tokens but q has 8}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<8x2x4xbf16>, tensor<8x2x4xbf16>, tensor<7x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @g_tokens(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<8x4x8xbf16>, %g: tensor<3x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{g has 3 tokens but v has 8}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<8x4x8xbf16>, tensor<3x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @beta_tokens(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<8x4xf32>, %beta: tensor<3x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{beta has 3 tokens but g has 8}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<8x4xf32>, tensor<3x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @o_tokens(%q: tensor<8x2x4xbf16>, %k: tensor<8x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{o has 16 tokens but q has 8}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<8x2x4xbf16>, tensor<8x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<16x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @packing_tokens(%q: tensor<8x2x4xbf16>, %k: tensor<8x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = 16>) {
  // expected-error @+1 {{q has 8 tokens but the packing describes 16}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<8x2x4xbf16>, tensor<8x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = 16>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @o_element_type(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{o element type ('f32') must match v ('bf16')}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xf32>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @initial_state_rank(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>, %h0: tensor<2x4x32xf32>) {
  // expected-error @+1 {{initial_state must be a rank-4 tensor [N, HV, K, V], found 'tensor<2x4x32xf32>'}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p initial_state(%h0)
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>, tensor<2x4x32xf32>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @initial_state_sequences(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>, %h0: tensor<3x4x4x8xf32>) {
  // expected-error @+1 {{initial_state dimension 0 (sequences) must be 2, found 3}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p initial_state(%h0)
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>, tensor<3x4x4x8xf32>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

// States are per value head, not per key head.
func.func @initial_state_heads(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>, %h0: tensor<2x2x4x8xf32>) {
  // expected-error @+1 {{initial_state dimension 1 (value heads) must be 4, found 2}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p initial_state(%h0)
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>, tensor<2x2x4x8xf32>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

// States are key-major [N, HV, K, V]; a value-major state is caught.
func.func @initial_state_head_dim_k(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>, %h0: tensor<2x4x8x4xf32>) {
  // expected-error @+1 {{initial_state dimension 2 (head dim K) must be 4, found 8}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p initial_state(%h0)
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>, tensor<2x4x8x4xf32>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @initial_state_head_dim_v(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>, %h0: tensor<2x4x4x16xf32>) {
  // expected-error @+1 {{initial_state dimension 3 (head dim V) must be 8, found 16}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p initial_state(%h0)
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>, tensor<2x4x4x16xf32>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @initial_state_token_sharded(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>, %h0: tensor<2x4x4x8xf32, #gdn.seq<contiguous, ranks = 2>>) {
  // expected-error @+1 {{initial_state is not a token-indexed activation and must not carry a sequence layout, found #gdn.seq<contiguous, ranks = 2>}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p initial_state(%h0)
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>, tensor<2x4x4x8xf32, #gdn.seq<contiguous, ranks = 2>>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @final_state_sequences(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{final_state dimension 0 (sequences) must be 2, found 1}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<1x4x4x8xf32>)
  return
}

// -----

func.func @final_state_heads(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{final_state dimension 1 (value heads) must be 4, found 2}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x2x4x8xf32>)
  return
}

// -----

func.func @final_state_head_dim_k(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{final_state dimension 2 (head dim K) must be 4, found 8}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x8x4xf32>)
  return
}

// -----

func.func @final_state_head_dim_v(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{final_state dimension 3 (head dim V) must be 8, found 2}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x2xf32>)
  return
}

// -----

func.func @final_state_token_sharded(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{final_state is not a token-indexed activation and must not carry a sequence layout, found #gdn.seq<zigzag, ranks = 2>}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32, #gdn.seq<zigzag, ranks = 2>>)
  return
}

// -----

func.func @chunk_size_zero(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{chunk_size must be a positive power of two, found 0}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p {chunk_size = 0 : i64}
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @chunk_size_not_power_of_two(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{chunk_size must be a positive power of two, found 48}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p {chunk_size = 48 : i64}
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @chunk_size_negative(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{chunk_size must be a positive power of two, found -64}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p {chunk_size = -64 : i64}
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @scale_zero(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{scale must be > 0, found 0.000000e+00}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p {scale = 0.0 : f64}
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @scale_negative(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{scale must be > 0, found -1.250000e-01}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p {scale = -0.125 : f64}
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

func.func @scale_nan(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{scale must be > 0, found nan}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p {scale = 0x7FF8000000000000 : f64}
      : (tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

// q is a zigzag shard, k is not.
func.func @layout_mismatch_inputs(%q: tensor<?x2x4xbf16, #gdn.seq<zigzag, ranks = 2>>, %k: tensor<?x2x4xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{q, k, v, g, beta and o must share one sequence layout, but found #gdn.seq<zigzag, ranks = 2> and natural; insert gdn.convert_layout to change a layout}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

// The output must keep the layout of the inputs.
func.func @layout_mismatch_result(%q: tensor<?x2x4xbf16, #gdn.heads<ranks = 2>>, %k: tensor<?x2x4xbf16, #gdn.heads<ranks = 2>>, %v: tensor<?x4x8xbf16, #gdn.heads<ranks = 2>>, %g: tensor<?x4xf32, #gdn.heads<ranks = 2>>, %beta: tensor<?x4xf32, #gdn.heads<ranks = 2>>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{q, k, v, g, beta and o must share one sequence layout, but found #gdn.heads<ranks = 2> and natural}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<?x2x4xbf16, #gdn.heads<ranks = 2>>, tensor<?x2x4xbf16, #gdn.heads<ranks = 2>>, tensor<?x4x8xbf16, #gdn.heads<ranks = 2>>, tensor<?x4xf32, #gdn.heads<ranks = 2>>, tensor<?x4xf32, #gdn.heads<ranks = 2>>, !gdn.packing<seqs = 2, tokens = ?>)
      -> (tensor<?x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}

// -----

// Padded constant offsets: the buffer is cu_padded's total.
func.func @packing_tokens_from_constant_padded_offsets(%q: tensor<10x2x4xbf16>, %k: tensor<10x2x4xbf16>, %v: tensor<10x4x8xbf16>, %g: tensor<10x4xf32>, %beta: tensor<10x4xf32>) {
  %cu = arith.constant dense<[0, 3, 7]> : tensor<3xi32>
  %cu_padded = arith.constant dense<[0, 4, 8]> : tensor<3xi32>
  %p = gdn.packing %cu padded %cu_padded : tensor<3xi32>, tensor<3xi32> -> !gdn.packing<seqs = ?, tokens = ?, padded>
  // expected-error @+1 {{q has 10 tokens but the packing describes 8 (its constant offsets)}}
  %o, %ht = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<10x2x4xbf16>, tensor<10x2x4xbf16>, tensor<10x4x8xbf16>, tensor<10x4xf32>, tensor<10x4xf32>, !gdn.packing<seqs = ?, tokens = ?, padded>)
      -> (tensor<10x4x8xbf16>, tensor<2x4x4x8xf32>)
  return
}
