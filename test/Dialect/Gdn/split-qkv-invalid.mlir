// Every error of gdn.split_qkv: dtype, ranks, static split points, GQA, channels, tokens, element types and layouts.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @integer_input(%c: tensor<?x48xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float or 64-bit float values, but got 'tensor<?x48xi32>'}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x48xi32> -> tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>
  return
}

// -----

func.func @mixed_qkv_rank(%c: tensor<?x6x8xbf16>) {
  // expected-error @+1 {{mixed_qkv must be a rank-2 tensor [T, 2HK + HV*V], found 'tensor<?x6x8xbf16>'}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x6x8xbf16> -> tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>
  return
}

// -----

func.func @q_rank(%c: tensor<?x48xbf16>) {
  // expected-error @+1 {{q must be a rank-3 tensor [T, H, K], found 'tensor<?x8xbf16>'}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x48xbf16> -> tensor<?x8xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>
  return
}

// -----

func.func @k_rank(%c: tensor<?x48xbf16>) {
  // expected-error @+1 {{k must be a rank-3 tensor [T, H, K], found 'tensor<?x8xbf16>'}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x48xbf16> -> tensor<?x2x4xbf16>, tensor<?x8xbf16>, tensor<?x4x8xbf16>
  return
}

// -----

func.func @v_rank(%c: tensor<?x48xbf16>) {
  // expected-error @+1 {{v must be a rank-3 tensor [T, HV, V], found 'tensor<?x32xbf16>'}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x48xbf16> -> tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x32xbf16>
  return
}

// -----

// The split points come from the result types, so they must be static.
func.func @q_dynamic_heads(%c: tensor<?x48xbf16>) {
  // expected-error @+1 {{q must have static heads and head dim, found 'tensor<?x?x4xbf16>'}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x48xbf16> -> tensor<?x?x4xbf16>, tensor<?x?x4xbf16>, tensor<?x4x8xbf16>
  return
}

// -----

func.func @q_dynamic_head_dim(%c: tensor<?x48xbf16>) {
  // expected-error @+1 {{q must have static heads and head dim, found 'tensor<?x2x?xbf16>'}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x48xbf16> -> tensor<?x2x?xbf16>, tensor<?x2x?xbf16>, tensor<?x4x8xbf16>
  return
}

// -----

func.func @v_dynamic_heads(%c: tensor<?x48xbf16>) {
  // expected-error @+1 {{v must have static heads and head dim, found 'tensor<?x?x8xbf16>'}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x48xbf16> -> tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x?x8xbf16>
  return
}

// -----

func.func @v_dynamic_head_dim(%c: tensor<?x48xbf16>) {
  // expected-error @+1 {{v must have static heads and head dim, found 'tensor<?x4x?xbf16>'}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x48xbf16> -> tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x?xbf16>
  return
}

// -----

// Zero key heads would divide by zero in the GQA check.
func.func @zero_key_heads(%c: tensor<?x32xbf16>) {
  // expected-error @+1 {{q dimension 1 (key heads) must be >= 1, found 0}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x32xbf16> -> tensor<?x0x4xbf16>, tensor<?x0x4xbf16>, tensor<?x4x8xbf16>
  return
}

// -----

func.func @gqa_not_multiple(%c: tensor<?x40xbf16>) {
  // expected-error @+1 {{value heads (3) must be a multiple of key heads (2)}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x40xbf16> -> tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x3x8xbf16>
  return
}

// -----

func.func @k_heads(%c: tensor<?x48xbf16>) {
  // expected-error @+1 {{k dimension 1 (key heads) must be 2, found 4}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x48xbf16> -> tensor<?x2x4xbf16>, tensor<?x4x4xbf16>, tensor<?x4x8xbf16>
  return
}

// -----

func.func @k_head_dim(%c: tensor<?x48xbf16>) {
  // expected-error @+1 {{k dimension 2 (head dim K) must be 4, found 2}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x48xbf16> -> tensor<?x2x4xbf16>, tensor<?x2x2xbf16>, tensor<?x4x8xbf16>
  return
}

// -----

// qkvz (with z) is not the conv output.
func.func @mixed_qkv_channels(%c: tensor<?x80xbf16>) {
  // expected-error @+1 {{mixed_qkv dimension 1 (2HK + HV*V) must be 48, found 80}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x80xbf16> -> tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>
  return
}

// -----

func.func @q_tokens(%c: tensor<8x48xbf16>) {
  // expected-error @+1 {{q has 9 tokens but mixed_qkv has 8; all activations of one op must cover the same tokens}}
  %q, %k, %v = gdn.split_qkv %c : tensor<8x48xbf16> -> tensor<9x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>
  return
}

// -----

func.func @k_tokens(%c: tensor<?x48xbf16>) {
  // expected-error @+1 {{k has 7 tokens but q has 8}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x48xbf16> -> tensor<8x2x4xbf16>, tensor<7x2x4xbf16>, tensor<?x4x8xbf16>
  return
}

// -----

func.func @v_tokens(%c: tensor<?x48xbf16>) {
  // expected-error @+1 {{v has 1 tokens but k has 8}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x48xbf16> -> tensor<?x2x4xbf16>, tensor<8x2x4xbf16>, tensor<1x4x8xbf16>
  return
}

// -----

// The split only moves elements: it keeps their type.
func.func @q_element_type(%c: tensor<?x48xbf16>) {
  // expected-error @+1 {{q element type ('f32') must match mixed_qkv ('bf16')}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x48xbf16> -> tensor<?x2x4xf32>, tensor<?x2x4xbf16>, tensor<?x4x8xbf16>
  return
}

// -----

func.func @k_element_type(%c: tensor<?x48xbf16>) {
  // expected-error @+1 {{k element type ('f16') must match mixed_qkv ('bf16')}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x48xbf16> -> tensor<?x2x4xbf16>, tensor<?x2x4xf16>, tensor<?x4x8xbf16>
  return
}

// -----

func.func @v_element_type(%c: tensor<?x48xbf16>) {
  // expected-error @+1 {{v element type ('f32') must match mixed_qkv ('bf16')}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x48xbf16> -> tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x4x8xf32>
  return
}

// -----

// A split cannot also redistribute heads.
func.func @layout_mismatch(%c: tensor<?x48xbf16>) {
  // expected-error @+1 {{mixed_qkv, q, k and v must share one sequence layout, but found natural and #gdn.heads<ranks = 2>; insert gdn.convert_layout to change a layout}}
  %q, %k, %v = gdn.split_qkv %c : tensor<?x48xbf16> -> tensor<?x2x4xbf16, #gdn.heads<ranks = 2>>, tensor<?x2x4xbf16, #gdn.heads<ranks = 2>>, tensor<?x4x8xbf16, #gdn.heads<ranks = 2>>
  return
}
