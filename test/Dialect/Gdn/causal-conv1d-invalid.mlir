// Every error of gdn.causal_conv1d: attribute and dtype constraints, ranks, channels, width, tokens, states, layouts.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @width_zero(%x: tensor<?x8xbf16>, %w: tensor<8x0xbf16>, %p: !P) {
  // expected-error @+1 {{attribute 'width' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  %y = gdn.causal_conv1d %x, %w, %p {width = 0 : i64} : (tensor<?x8xbf16>, tensor<8x0xbf16>, !P) -> tensor<?x8xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @width_missing(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>, %p: !P) {
  // expected-error @+1 {{requires attribute 'width'}}
  %y = gdn.causal_conv1d %x, %w, %p : (tensor<?x8xbf16>, tensor<8x4xbf16>, !P) -> tensor<?x8xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @integer_activations(%x: tensor<?x8xi32>, %w: tensor<8x4xbf16>, %p: !P) {
  // expected-error @+1 {{operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float or 64-bit float values, but got 'tensor<?x8xi32>'}}
  %y = gdn.causal_conv1d %x, %w, %p {width = 4 : i64} : (tensor<?x8xi32>, tensor<8x4xbf16>, !P) -> tensor<?x8xbf16>
  return
}

// -----

func.func @packing_not_a_packing(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>, %p: tensor<3xi32>) {
  // expected-error @+1 {{operand #2 must be packed-sequence metadata (cu_seqlens, optional padded offsets), but got 'tensor<3xi32>'}}
  %y = gdn.causal_conv1d %x, %w, %p {width = 4 : i64} : (tensor<?x8xbf16>, tensor<8x4xbf16>, tensor<3xi32>) -> tensor<?x8xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @x_rank(%x: tensor<?x2x4xbf16>, %w: tensor<8x4xbf16>, %p: !P) {
  // expected-error @+1 {{x must be a rank-2 tensor [T, C], found 'tensor<?x2x4xbf16>'}}
  %y = gdn.causal_conv1d %x, %w, %p {width = 4 : i64} : (tensor<?x2x4xbf16>, tensor<8x4xbf16>, !P) -> tensor<?x8xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @weight_rank(%x: tensor<?x8xbf16>, %w: tensor<32xbf16>, %p: !P) {
  // expected-error @+1 {{weight must be a rank-2 tensor [C, W], found 'tensor<32xbf16>'}}
  %y = gdn.causal_conv1d %x, %w, %p {width = 4 : i64} : (tensor<?x8xbf16>, tensor<32xbf16>, !P) -> tensor<?x8xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @y_rank(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>, %p: !P) {
  // expected-error @+1 {{y must be a rank-2 tensor [T, C], found 'tensor<?x8x1xbf16>'}}
  %y = gdn.causal_conv1d %x, %w, %p {width = 4 : i64} : (tensor<?x8xbf16>, tensor<8x4xbf16>, !P) -> tensor<?x8x1xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @weight_channels(%x: tensor<?x8xbf16>, %w: tensor<16x4xbf16>, %p: !P) {
  // expected-error @+1 {{weight dimension 0 (channels) must be 8, found 16}}
  %y = gdn.causal_conv1d %x, %w, %p {width = 4 : i64} : (tensor<?x8xbf16>, tensor<16x4xbf16>, !P) -> tensor<?x8xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

// A [W, C] weight (transposed) is caught by its width.
func.func @weight_width(%x: tensor<?x8xbf16>, %w: tensor<8x3xbf16>, %p: !P) {
  // expected-error @+1 {{weight dimension 1 (width) must be 4, found 3}}
  %y = gdn.causal_conv1d %x, %w, %p {width = 4 : i64} : (tensor<?x8xbf16>, tensor<8x3xbf16>, !P) -> tensor<?x8xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @y_channels(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>, %p: !P) {
  // expected-error @+1 {{y dimension 1 (channels) must be 8, found 16}}
  %y = gdn.causal_conv1d %x, %w, %p {width = 4 : i64} : (tensor<?x8xbf16>, tensor<8x4xbf16>, !P) -> tensor<?x16xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @y_tokens(%x: tensor<7x8xbf16>, %w: tensor<8x4xbf16>, %p: !P) {
  // expected-error @+1 {{y has 9 tokens but x has 7; all activations of one op must cover the same tokens}}
  %y = gdn.causal_conv1d %x, %w, %p {width = 4 : i64} : (tensor<7x8xbf16>, tensor<8x4xbf16>, !P) -> tensor<9x8xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = 8>

func.func @packing_tokens(%x: tensor<7x8xbf16>, %w: tensor<8x4xbf16>, %p: !P) {
  // expected-error @+1 {{x has 7 tokens but the packing describes 8}}
  %y = gdn.causal_conv1d %x, %w, %p {width = 4 : i64} : (tensor<7x8xbf16>, tensor<8x4xbf16>, !P) -> tensor<?x8xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = 8>

// With x dynamic, the static y is the one compared with the packing.
func.func @packing_tokens_from_y(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>, %p: !P) {
  // expected-error @+1 {{y has 6 tokens but the packing describes 8}}
  %y = gdn.causal_conv1d %x, %w, %p {width = 4 : i64} : (tensor<?x8xbf16>, tensor<8x4xbf16>, !P) -> tensor<6x8xbf16>
  return
}

// -----

// A packing made from constant offsets describes their total even when its
// type leaves the token count dynamic.
func.func @packing_tokens_from_constant_offsets(%x: tensor<8x4xf32>, %w: tensor<4x4xf32>) {
  %cu = arith.constant dense<[0, 3, 7]> : tensor<3xi32>
  %p = gdn.packing %cu : tensor<3xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error @+1 {{x has 8 tokens but the packing describes 7 (its constant offsets)}}
  %y = gdn.causal_conv1d %x, %w, %p {width = 4 : i64} : (tensor<8x4xf32>, tensor<4x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<8x4xf32>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @weight_token_sharded(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16, #gdn.seq<contiguous, ranks = 2>>, %p: !P) {
  // expected-error @+1 {{weight is not a token-indexed activation and must not carry a sequence layout, found #gdn.seq<contiguous, ranks = 2>}}
  %y = gdn.causal_conv1d %x, %w, %p {width = 4 : i64} : (tensor<?x8xbf16>, tensor<8x4xbf16, #gdn.seq<contiguous, ranks = 2>>, !P) -> tensor<?x8xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @bias_rank(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>, %p: !P, %b: tensor<8x1xbf16>) {
  // expected-error @+1 {{bias must be a rank-1 tensor [C], found 'tensor<8x1xbf16>'}}
  %y = gdn.causal_conv1d %x, %w, %p bias(%b) {width = 4 : i64} : (tensor<?x8xbf16>, tensor<8x4xbf16>, !P, tensor<8x1xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @bias_channels(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>, %p: !P, %b: tensor<4xbf16>) {
  // expected-error @+1 {{bias dimension 0 (channels) must be 8, found 4}}
  %y = gdn.causal_conv1d %x, %w, %p bias(%b) {width = 4 : i64} : (tensor<?x8xbf16>, tensor<8x4xbf16>, !P, tensor<4xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @bias_token_sharded(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>, %p: !P, %b: tensor<8xbf16, #gdn.seq<zigzag, ranks = 2>>) {
  // expected-error @+1 {{bias is not a token-indexed activation and must not carry a sequence layout, found #gdn.seq<zigzag, ranks = 2>}}
  %y = gdn.causal_conv1d %x, %w, %p bias(%b) {width = 4 : i64} : (tensor<?x8xbf16>, tensor<8x4xbf16>, !P, tensor<8xbf16, #gdn.seq<zigzag, ranks = 2>>) -> tensor<?x8xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @initial_state_rank(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>, %p: !P, %h0: tensor<8x3xbf16>) {
  // expected-error @+1 {{initial_state must be a rank-3 tensor [N, C, W-1], found 'tensor<8x3xbf16>'}}
  %y = gdn.causal_conv1d %x, %w, %p initial_state(%h0) {width = 4 : i64} : (tensor<?x8xbf16>, tensor<8x4xbf16>, !P, tensor<8x3xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @initial_state_sequences(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>, %p: !P, %h0: tensor<3x8x3xbf16>) {
  // expected-error @+1 {{initial_state dimension 0 (sequences) must be 2, found 3}}
  %y = gdn.causal_conv1d %x, %w, %p initial_state(%h0) {width = 4 : i64} : (tensor<?x8xbf16>, tensor<8x4xbf16>, !P, tensor<3x8x3xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @initial_state_channels(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>, %p: !P, %h0: tensor<2x4x3xbf16>) {
  // expected-error @+1 {{initial_state dimension 1 (channels) must be 8, found 4}}
  %y = gdn.causal_conv1d %x, %w, %p initial_state(%h0) {width = 4 : i64} : (tensor<?x8xbf16>, tensor<8x4xbf16>, !P, tensor<2x4x3xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

// The state holds W - 1 taps, not W.
func.func @initial_state_width(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>, %p: !P, %h0: tensor<2x8x4xbf16>) {
  // expected-error @+1 {{initial_state dimension 2 (width - 1) must be 3, found 4}}
  %y = gdn.causal_conv1d %x, %w, %p initial_state(%h0) {width = 4 : i64} : (tensor<?x8xbf16>, tensor<8x4xbf16>, !P, tensor<2x8x4xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = ?, tokens = ?>

func.func @initial_state_token_sharded(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>, %p: !P, %h0: tensor<?x8x3xbf16, #gdn.seq<contiguous, ranks = 2>>) {
  // expected-error @+1 {{initial_state is not a token-indexed activation and must not carry a sequence layout, found #gdn.seq<contiguous, ranks = 2>}}
  %y = gdn.causal_conv1d %x, %w, %p initial_state(%h0) {width = 4 : i64} : (tensor<?x8xbf16>, tensor<8x4xbf16>, !P, tensor<?x8x3xbf16, #gdn.seq<contiguous, ranks = 2>>) -> tensor<?x8xbf16>
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @final_state_rank(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>, %p: !P) {
  // expected-error @+1 {{final_state must be a rank-3 tensor [N, C, W-1], found 'tensor<2x24xbf16>'}}
  %y, %ht = gdn.causal_conv1d %x, %w, %p {width = 4 : i64} : (tensor<?x8xbf16>, tensor<8x4xbf16>, !P) -> (tensor<?x8xbf16>, tensor<2x24xbf16>)
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @final_state_sequences(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>, %p: !P) {
  // expected-error @+1 {{final_state dimension 0 (sequences) must be 2, found 1}}
  %y, %ht = gdn.causal_conv1d %x, %w, %p {width = 4 : i64} : (tensor<?x8xbf16>, tensor<8x4xbf16>, !P) -> (tensor<?x8xbf16>, tensor<1x8x3xbf16>)
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @final_state_channels(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>, %p: !P) {
  // expected-error @+1 {{final_state dimension 1 (channels) must be 8, found 3}}
  %y, %ht = gdn.causal_conv1d %x, %w, %p {width = 4 : i64} : (tensor<?x8xbf16>, tensor<8x4xbf16>, !P) -> (tensor<?x8xbf16>, tensor<2x3x8xbf16>)
  return
}

// -----

!P = !gdn.packing<seqs = 2, tokens = ?>

func.func @final_state_width(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>, %p: !P) {
  // expected-error @+1 {{final_state dimension 2 (width - 1) must be 3, found 2}}
  %y, %ht = gdn.causal_conv1d %x, %w, %p {width = 4 : i64} : (tensor<?x8xbf16>, tensor<8x4xbf16>, !P) -> (tensor<?x8xbf16>, tensor<2x8x2xbf16>)
  return
}

// -----

!P = !gdn.packing<seqs = ?, tokens = ?>

func.func @final_state_token_sharded(%x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>, %p: !P) {
  // expected-error @+1 {{final_state is not a token-indexed activation and must not carry a sequence layout, found #gdn.seq<zigzag, ranks = 4>}}
  %y, %ht = gdn.causal_conv1d %x, %w, %p {width = 4 : i64} : (tensor<?x8xbf16>, tensor<8x4xbf16>, !P) -> (tensor<?x8xbf16>, tensor<?x8x3xbf16, #gdn.seq<zigzag, ranks = 4>>)
  return
}

// -----

!P = !gdn.packing<seqs = ?, tokens = ?>

func.func @layout_mismatch(%x: tensor<?x8xbf16, #gdn.seq<zigzag, ranks = 4>>, %w: tensor<8x4xbf16>, %p: !P) {
  // expected-error @+1 {{x and y must share one sequence layout, but found #gdn.seq<zigzag, ranks = 4> and natural; insert gdn.convert_layout to change a layout}}
  %y = gdn.causal_conv1d %x, %w, %p {width = 4 : i64} : (tensor<?x8xbf16, #gdn.seq<zigzag, ranks = 4>>, tensor<8x4xbf16>, !P) -> tensor<?x8xbf16>
  return
}
