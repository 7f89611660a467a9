// Every error of gdn.split_qkvz: attributes, dtypes, ranks, the interleaving sizes, GQA, tokens, element types and layouts.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @key_heads_zero(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{attribute 'key_heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 0 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @head_dim_k_negative(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{attribute 'head_dim_k' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = -4 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @head_dim_k_missing(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{requires attribute 'head_dim_k'}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @integer_ba(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xi32>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float or 64-bit float values, but got 'tensor<?x8xi32>'}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xi32>)
      -> (tensor<?x48xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @qkvz_rank(%qkvz: tensor<?x2x40xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{qkvz must be a rank-2 tensor [T, H * (2K + 2rV)], found 'tensor<?x2x40xbf16>'}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x2x40xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @ba_rank(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x2x4xbf16>) {
  // expected-error @+1 {{ba must be a rank-2 tensor [T, 2HV], found 'tensor<?x2x4xbf16>'}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x2x4xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @mixed_qkv_rank(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{mixed_qkv must be a rank-2 tensor [T, 2HK + HV*V], found 'tensor<?x48x1xbf16>'}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48x1xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @z_rank(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{z must be a rank-3 tensor [T, HV, V], found 'tensor<?x32xbf16>'}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x32xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @b_rank(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{b must be a rank-2 tensor [T, HV], found 'tensor<?x4x1xbf16>'}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x4x8xbf16>, tensor<?x4x1xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @a_rank(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{a must be a rank-2 tensor [T, HV], found 'tensor<?xbf16>'}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?xbf16>)
  return
}

// -----

func.func @z_dynamic_heads(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{z must have static heads and head dim to fix the interleaving, found 'tensor<?x?x8xbf16>'}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x?x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @z_dynamic_head_dim(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{z must have static heads and head dim to fix the interleaving, found 'tensor<?x4x?xbf16>'}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x4x?xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @gqa_not_multiple(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{value heads (3) must be a multiple of key heads (2)}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x3x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @qkvz_features(%qkvz: tensor<?x64xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{qkvz dimension 1 (2HK + 2HV*V) must be 80, found 64}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x64xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

// ba holds b and a: 2 * HV features.
func.func @ba_features(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x4xbf16>) {
  // expected-error @+1 {{ba dimension 1 (2HV) must be 8, found 4}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x4xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

// The conv input does not include z.
func.func @mixed_qkv_features(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{mixed_qkv dimension 1 (2HK + HV*V) must be 48, found 80}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x80xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @b_heads(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{b dimension 1 (value heads) must be 4, found 2}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x4x8xbf16>, tensor<?x2xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @a_heads(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{a dimension 1 (value heads) must be 4, found 8}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x8xbf16>)
  return
}

// -----

func.func @ba_tokens(%qkvz: tensor<8x80xbf16>, %ba: tensor<7x8xbf16>) {
  // expected-error @+1 {{ba has 7 tokens but qkvz has 8; all activations of one op must cover the same tokens}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<8x80xbf16>, tensor<7x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @mixed_qkv_tokens(%qkvz: tensor<8x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{mixed_qkv has 9 tokens but qkvz has 8}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<8x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<9x48xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @z_tokens(%qkvz: tensor<?x80xbf16>, %ba: tensor<8x8xbf16>) {
  // expected-error @+1 {{z has 1 tokens but ba has 8}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<8x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<1x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @b_tokens(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{b has 2 tokens but z has 8}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<8x4x8xbf16>, tensor<2x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @a_tokens(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{a has 3 tokens but b has 8}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x4x8xbf16>, tensor<8x4xbf16>, tensor<3x4xbf16>)
  return
}

// -----

// The split only moves elements: it keeps their type.
func.func @mixed_qkv_element_type(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{mixed_qkv element type ('f32') must match qkvz ('bf16')}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48xf32>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @z_element_type(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{z element type ('f16') must match qkvz ('bf16')}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x4x8xf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}

// -----

func.func @b_element_type(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{b element type ('f32') must match ba ('bf16')}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xbf16>)
  return
}

// -----

func.func @a_element_type(%qkvz: tensor<?x80xbf16>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{a element type ('f32') must match ba ('bf16')}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16>, tensor<?x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xf32>)
  return
}

// -----

func.func @layout_mismatch(%qkvz: tensor<?x80xbf16, #gdn.seq<zigzag, ranks = 2>>, %ba: tensor<?x8xbf16>) {
  // expected-error @+1 {{qkvz, ba, mixed_qkv, z, b and a must share one sequence layout, but found #gdn.seq<zigzag, ranks = 2> and natural; insert gdn.convert_layout to change a layout}}
  %mixed, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x80xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x8xbf16>)
      -> (tensor<?x48xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>)
  return
}
