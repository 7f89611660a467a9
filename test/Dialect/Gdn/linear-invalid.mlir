// Every error of gdn.linear: dtype, ranks, In/Out against the feature sizes, tokens, the replicated weight and layouts.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @integer_weight(%x: tensor<?x16xbf16>, %w: tensor<32x16xi8>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float or 64-bit float values, but got 'tensor<32x16xi8>'}}
  %y = gdn.linear %x, %w : (tensor<?x16xbf16>, tensor<32x16xi8>) -> tensor<?x32xbf16>
  return
}

// -----

// A single token without its token dimension is rejected.
func.func @x_rank(%x: tensor<16xbf16>, %w: tensor<32x16xbf16>) {
  // expected-error @+1 {{x and y must be [T, features...] tensors of rank >= 2, found 'tensor<16xbf16>' and 'tensor<?x32xbf16>'}}
  %y = gdn.linear %x, %w : (tensor<16xbf16>, tensor<32x16xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

func.func @y_rank(%x: tensor<?x16xbf16>, %w: tensor<32x16xbf16>) {
  // expected-error @+1 {{x and y must be [T, features...] tensors of rank >= 2, found 'tensor<?x16xbf16>' and 'tensor<?xbf16>'}}
  %y = gdn.linear %x, %w : (tensor<?x16xbf16>, tensor<32x16xbf16>) -> tensor<?xbf16>
  return
}

// -----

func.func @weight_rank(%x: tensor<?x16xbf16>, %w: tensor<2x16x16xbf16>) {
  // expected-error @+1 {{weight must be a rank-2 tensor [Out, In], found 'tensor<2x16x16xbf16>'}}
  %y = gdn.linear %x, %w : (tensor<?x16xbf16>, tensor<2x16x16xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

// A transposed ([In, Out]) weight is caught: PyTorch layout is [Out, In].
func.func @weight_in(%x: tensor<?x16xbf16>, %w: tensor<16x32xbf16>) {
  // expected-error @+1 {{weight dimension 1 (In = features of x) must be 16, found 32}}
  %y = gdn.linear %x, %w : (tensor<?x16xbf16>, tensor<16x32xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

// In is the product of all feature dimensions of x.
func.func @weight_in_heads(%x: tensor<?x32x128xbf16>, %w: tensor<2048x2048xbf16>) {
  // expected-error @+1 {{weight dimension 1 (In = features of x) must be 4096, found 2048}}
  %y = gdn.linear %x, %w : (tensor<?x32x128xbf16>, tensor<2048x2048xbf16>) -> tensor<?x2048xbf16>
  return
}

// -----

func.func @weight_out(%x: tensor<?x16xbf16>, %w: tensor<32x16xbf16>) {
  // expected-error @+1 {{weight dimension 0 (Out = features of y) must be 64, found 32}}
  %y = gdn.linear %x, %w : (tensor<?x16xbf16>, tensor<32x16xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @weight_out_heads(%x: tensor<?x2048xbf16>, %w: tensor<2048x2048xbf16>) {
  // expected-error @+1 {{weight dimension 0 (Out = features of y) must be 4096, found 2048}}
  %y = gdn.linear %x, %w : (tensor<?x2048xbf16>, tensor<2048x2048xbf16>) -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @y_tokens(%x: tensor<8x16xbf16>, %w: tensor<32x16xbf16>) {
  // expected-error @+1 {{y has 9 tokens but x has 8; all activations of one op must cover the same tokens}}
  %y = gdn.linear %x, %w : (tensor<8x16xbf16>, tensor<32x16xbf16>) -> tensor<9x32xbf16>
  return
}

// -----

func.func @weight_token_sharded(%x: tensor<?x16xbf16>, %w: tensor<32x16xbf16, #gdn.seq<contiguous, ranks = 2>>) {
  // expected-error @+1 {{weight is not a token-indexed activation and must not carry a sequence layout, found #gdn.seq<contiguous, ranks = 2>}}
  %y = gdn.linear %x, %w : (tensor<?x16xbf16>, tensor<32x16xbf16, #gdn.seq<contiguous, ranks = 2>>) -> tensor<?x32xbf16>
  return
}

// -----

// A projection does not redistribute tokens.
func.func @layout_mismatch(%x: tensor<?x16xbf16, #gdn.seq<zigzag, ranks = 2>>, %w: tensor<32x16xbf16>) {
  // expected-error @+1 {{x and y must share one sequence layout, but found #gdn.seq<zigzag, ranks = 2> and #gdn.seq<contiguous, ranks = 2>; insert gdn.convert_layout to change a layout}}
  %y = gdn.linear %x, %w : (tensor<?x16xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<32x16xbf16>) -> tensor<?x32xbf16, #gdn.seq<contiguous, ranks = 2>>
  return
}

// -----

// Same kind, different rank counts: still two layouts.
func.func @layout_ranks_mismatch(%x: tensor<?x16xbf16, #gdn.seq<zigzag, ranks = 2>>, %w: tensor<32x16xbf16>) {
  // expected-error @+1 {{x and y must share one sequence layout, but found #gdn.seq<zigzag, ranks = 2> and #gdn.seq<zigzag, ranks = 4>}}
  %y = gdn.linear %x, %w : (tensor<?x16xbf16, #gdn.seq<zigzag, ranks = 2>>, tensor<32x16xbf16>) -> tensor<?x32xbf16, #gdn.seq<zigzag, ranks = 4>>
  return
}
