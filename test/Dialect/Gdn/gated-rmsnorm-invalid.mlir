// Every error of gdn.gated_rmsnorm: dtype, ranks, heads and head dim, tokens, the shared weight, eps and layouts.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @integer_z(%x: tensor<?x4x8xbf16>, %z: tensor<?x4x8xi32>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float or 64-bit float values, but got 'tensor<?x4x8xi32>'}}
  %y = gdn.gated_rmsnorm %x, %z, %w : (tensor<?x4x8xbf16>, tensor<?x4x8xi32>, tensor<8xbf16>) -> tensor<?x4x8xbf16>
  return
}

// -----

// Un-split heads ([T, HV*V]) are a rank error.
func.func @x_rank(%x: tensor<?x32xbf16>, %z: tensor<?x4x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{x must be a rank-3 tensor [T, HV, V], found 'tensor<?x32xbf16>'}}
  %y = gdn.gated_rmsnorm %x, %z, %w : (tensor<?x32xbf16>, tensor<?x4x8xbf16>, tensor<8xbf16>) -> tensor<?x4x8xbf16>
  return
}

// -----

func.func @z_rank(%x: tensor<?x4x8xbf16>, %z: tensor<?x32xbf16>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{z must be a rank-3 tensor [T, HV, V], found 'tensor<?x32xbf16>'}}
  %y = gdn.gated_rmsnorm %x, %z, %w : (tensor<?x4x8xbf16>, tensor<?x32xbf16>, tensor<8xbf16>) -> tensor<?x4x8xbf16>
  return
}

// -----

func.func @y_rank(%x: tensor<?x4x8xbf16>, %z: tensor<?x4x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{y must be a rank-3 tensor [T, HV, V], found 'tensor<?x32xbf16>'}}
  %y = gdn.gated_rmsnorm %x, %z, %w : (tensor<?x4x8xbf16>, tensor<?x4x8xbf16>, tensor<8xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

// The weight is shared by all heads: [V], not [HV, V].
func.func @weight_rank(%x: tensor<?x4x8xbf16>, %z: tensor<?x4x8xbf16>, %w: tensor<4x8xbf16>) {
  // expected-error @+1 {{weight must be a rank-1 tensor [V], found 'tensor<4x8xbf16>'}}
  %y = gdn.gated_rmsnorm %x, %z, %w : (tensor<?x4x8xbf16>, tensor<?x4x8xbf16>, tensor<4x8xbf16>) -> tensor<?x4x8xbf16>
  return
}

// -----

func.func @z_heads(%x: tensor<?x4x8xbf16>, %z: tensor<?x2x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{z dimension 1 (value heads) must be 4, found 2}}
  %y = gdn.gated_rmsnorm %x, %z, %w : (tensor<?x4x8xbf16>, tensor<?x2x8xbf16>, tensor<8xbf16>) -> tensor<?x4x8xbf16>
  return
}

// -----

func.func @z_head_dim(%x: tensor<?x4x8xbf16>, %z: tensor<?x4x16xbf16>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{z dimension 2 (head dim V) must be 8, found 16}}
  %y = gdn.gated_rmsnorm %x, %z, %w : (tensor<?x4x8xbf16>, tensor<?x4x16xbf16>, tensor<8xbf16>) -> tensor<?x4x8xbf16>
  return
}

// -----

func.func @y_heads(%x: tensor<?x4x8xbf16>, %z: tensor<?x4x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{y dimension 1 (value heads) must be 4, found 8}}
  %y = gdn.gated_rmsnorm %x, %z, %w : (tensor<?x4x8xbf16>, tensor<?x4x8xbf16>, tensor<8xbf16>) -> tensor<?x8x8xbf16>
  return
}

// -----

func.func @y_head_dim(%x: tensor<?x4x8xbf16>, %z: tensor<?x4x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{y dimension 2 (head dim V) must be 8, found 4}}
  %y = gdn.gated_rmsnorm %x, %z, %w : (tensor<?x4x8xbf16>, tensor<?x4x8xbf16>, tensor<8xbf16>) -> tensor<?x4x4xbf16>
  return
}

// -----

func.func @weight_head_dim(%x: tensor<?x4x8xbf16>, %z: tensor<?x4x8xbf16>, %w: tensor<32xbf16>) {
  // expected-error @+1 {{weight dimension 0 (head dim V) must be 8, found 32}}
  %y = gdn.gated_rmsnorm %x, %z, %w : (tensor<?x4x8xbf16>, tensor<?x4x8xbf16>, tensor<32xbf16>) -> tensor<?x4x8xbf16>
  return
}

// -----

func.func @z_tokens(%x: tensor<8x4x8xbf16>, %z: tensor<9x4x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{z has 9 tokens but x has 8; all activations of one op must cover the same tokens}}
  %y = gdn.gated_rmsnorm %x, %z, %w : (tensor<8x4x8xbf16>, tensor<9x4x8xbf16>, tensor<8xbf16>) -> tensor<?x4x8xbf16>
  return
}

// -----

func.func @y_tokens(%x: tensor<?x4x8xbf16>, %z: tensor<8x4x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{y has 4 tokens but z has 8}}
  %y = gdn.gated_rmsnorm %x, %z, %w : (tensor<?x4x8xbf16>, tensor<8x4x8xbf16>, tensor<8xbf16>) -> tensor<4x4x8xbf16>
  return
}

// -----

func.func @weight_token_sharded(%x: tensor<?x4x8xbf16>, %z: tensor<?x4x8xbf16>, %w: tensor<8xbf16, #gdn.seq<contiguous, ranks = 2>>) {
  // expected-error @+1 {{weight is not a token-indexed activation and must not carry a sequence layout, found #gdn.seq<contiguous, ranks = 2>}}
  %y = gdn.gated_rmsnorm %x, %z, %w : (tensor<?x4x8xbf16>, tensor<?x4x8xbf16>, tensor<8xbf16, #gdn.seq<contiguous, ranks = 2>>) -> tensor<?x4x8xbf16>
  return
}

// -----

func.func @negative_eps(%x: tensor<?x4x8xbf16>, %z: tensor<?x4x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{eps must be >= 0, found -1.000000e-06}}
  %y = gdn.gated_rmsnorm %x, %z, %w {eps = -1.0e-06 : f64} : (tensor<?x4x8xbf16>, tensor<?x4x8xbf16>, tensor<8xbf16>) -> tensor<?x4x8xbf16>
  return
}

// -----

func.func @nan_eps(%x: tensor<?x4x8xbf16>, %z: tensor<?x4x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{eps must be >= 0, found nan}}
  %y = gdn.gated_rmsnorm %x, %z, %w {eps = 0x7FF8000000000000 : f64} : (tensor<?x4x8xbf16>, tensor<?x4x8xbf16>, tensor<8xbf16>) -> tensor<?x4x8xbf16>
  return
}

// -----

// The gate z must be in the layout of x.
func.func @layout_mismatch_gate(%x: tensor<?x4x8xbf16, #gdn.seq<zigzag, ranks = 2>>, %z: tensor<?x4x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{x, z and y must share one sequence layout, but found #gdn.seq<zigzag, ranks = 2> and natural; insert gdn.convert_layout to change a layout}}
  %y = gdn.gated_rmsnorm %x, %z, %w : (tensor<?x4x8xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<?x4x8xbf16>, tensor<8xbf16>) -> tensor<?x4x8xbf16, #gdn.seq<zigzag, ranks = 2>>
  return
}

// -----

func.func @layout_mismatch_result(%x: tensor<?x4x8xbf16>, %z: tensor<?x4x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{x, z and y must share one sequence layout, but found natural and #gdn.heads<ranks = 2>}}
  %y = gdn.gated_rmsnorm %x, %z, %w : (tensor<?x4x8xbf16>, tensor<?x4x8xbf16>, tensor<8xbf16>) -> tensor<?x4x8xbf16, #gdn.heads<ranks = 2>>
  return
}
