// Every error of the layout encodings #gdn.seq and #gdn.heads.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{#gdn.seq<natural> holds all tokens and takes no rank count (found ranks = 4); use #gdn.seq<contiguous, ranks = 4> for a shard}}
func.func @natural_with_ranks(%a: tensor<16xf32, #gdn.seq<natural, ranks = 4>>) {
  return
}

// -----

// expected-error @+1 {{a contiguous shard needs ranks >= 2, found ranks = 1; a single rank holds the natural layout}}
func.func @contiguous_one_rank(%a: tensor<16xf32, #gdn.seq<contiguous, ranks = 1>>) {
  return
}

// -----

// Without `ranks`, a shard defaults to one rank, which is no shard.
// expected-error @+1 {{a zigzag shard needs ranks >= 2, found ranks = 1}}
func.func @zigzag_default_ranks(%a: tensor<16xf32, #gdn.seq<zigzag>>) {
  return
}

// -----

// expected-error @+1 {{a zigzag shard needs ranks >= 2, found ranks = 0}}
func.func @zigzag_zero_ranks(%a: tensor<16xf32, #gdn.seq<zigzag, ranks = 0>>) {
  return
}

// -----

// expected-error @+1 {{#gdn.seq needs a tensor with a token dimension (rank >= 1), found a rank-0 tensor}}
func.func @seq_on_scalar(%a: tensor<f32, #gdn.seq<contiguous, ranks = 2>>) {
  return
}

// -----

// expected-error @+1 {{#gdn.heads needs ranks >= 2, found ranks = 1; a single rank holds all heads}}
func.func @heads_one_rank(%a: tensor<16x4xf32, #gdn.heads<ranks = 1>>) {
  return
}

// -----

// expected-error @+1 {{#gdn.heads needs a [T, heads, ...] tensor (rank >= 2), found rank 1}}
func.func @heads_on_rank_one(%a: tensor<16xf32, #gdn.heads<ranks = 2>>) {
  return
}

// -----

// expected-error @+2 {{expected one of [natural, contiguous, zigzag] for distribution of tokens across ranks, got: striped}}
// expected-error @+1 {{failed to parse Gdn_SeqLayoutAttr parameter 'kind'}}
func.func @unknown_kind(%a: tensor<16xf32, #gdn.seq<striped, ranks = 2>>) {
  return
}

// -----

// The rank count of #gdn.heads is required.
// expected-error @+1 {{expected 'ranks'}}
func.func @heads_without_ranks(%a: tensor<16x4xf32, #gdn.heads<>>) {
  return
}

// -----

// Only zigzag shards nest an SP sharding; nested contiguous shards are one.
// expected-error @+1 {{only zigzag shards nest an inner (SP) sharding; a contiguous shard over 4 ranks with inner = 2 is #gdn.seq<contiguous, ranks = 8>}}
func.func @contiguous_with_inner(%a: tensor<16xf32, #gdn.seq<contiguous, ranks = 4, inner = 2>>) {
  return
}

// -----

// expected-error @+1 {{#gdn.seq needs inner >= 1, found inner = 0}}
func.func @zero_inner(%a: tensor<16xf32, #gdn.seq<zigzag, ranks = 4, inner = 0>>) {
  return
}
