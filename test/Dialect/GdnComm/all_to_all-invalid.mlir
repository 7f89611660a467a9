// Diagnostics of gdn_comm.all_to_all: one case per error path of its verifier.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @zero_rank_group(%x: tensor<8x4x2xf32>) -> tensor<8x4x2xf32> {
  // expected-error @+1 {{a process group needs at least one rank, found 0}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 0>, split_dim = 1 : i64, concat_dim = 0 : i64} : tensor<8x4x2xf32> -> tensor<8x4x2xf32>
  return %h : tensor<8x4x2xf32>
}

// -----

func.func @negative_concat_dim(%x: tensor<8x4x2xf32>) -> tensor<32x1x2xf32> {
  // expected-error @+1 {{attribute 'concat_dim' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64, concat_dim = -1 : i64} : tensor<8x4x2xf32> -> tensor<32x1x2xf32>
  return %h : tensor<32x1x2xf32>
}

// -----

func.func @element_mismatch(%x: tensor<8x4x2xf32>) -> tensor<32x1x2xf16> {
  // expected-error @+1 {{result element type ('f16') must match the input's ('f32')}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64, concat_dim = 0 : i64} : tensor<8x4x2xf32> -> tensor<32x1x2xf16>
  return %h : tensor<32x1x2xf16>
}

// -----

func.func @rank_mismatch(%x: tensor<8x4x2xf32>) -> tensor<32x2xf32> {
  // expected-error @+1 {{result rank (2) must match the input's (3)}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64, concat_dim = 0 : i64} : tensor<8x4x2xf32> -> tensor<32x2xf32>
  return %h : tensor<32x2xf32>
}

// -----

func.func @split_dim_out_of_range(%x: tensor<8x4x2xf32>) -> tensor<8x4x2xf32> {
  // expected-error @+1 {{split_dim = 3 is out of range for a rank-3 tensor}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 3 : i64, concat_dim = 0 : i64} : tensor<8x4x2xf32> -> tensor<8x4x2xf32>
  return %h : tensor<8x4x2xf32>
}

// -----

func.func @concat_dim_out_of_range(%x: tensor<8x4x2xf32>) -> tensor<8x4x2xf32> {
  // expected-error @+1 {{concat_dim = 7 is out of range for a rank-3 tensor}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64, concat_dim = 7 : i64} : tensor<8x4x2xf32> -> tensor<8x4x2xf32>
  return %h : tensor<8x4x2xf32>
}

// -----

func.func @untouched_dim_changed(%x: tensor<8x4x2xf32>) -> tensor<32x1x4xf32> {
  // expected-error @+1 {{result dimension 2 must be 2 like the input's, found 4}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64, concat_dim = 0 : i64} : tensor<8x4x2xf32> -> tensor<32x1x4xf32>
  return %h : tensor<32x1x4xf32>
}

// -----

func.func @split_not_divisible(%x: tensor<8x6x2xf32>) -> tensor<32x?x2xf32> {
  // expected-error @+1 {{dimension 1 of the input (6) must be divisible by the group size (4)}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64, concat_dim = 0 : i64} : tensor<8x6x2xf32> -> tensor<32x?x2xf32>
  return %h : tensor<32x?x2xf32>
}

// -----

func.func @wrong_split_size(%x: tensor<8x4x2xf32>) -> tensor<32x2x2xf32> {
  // expected-error @+1 {{result dimension 1 must be 1 (input 4, group of 4 ranks), found 2}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64, concat_dim = 0 : i64} : tensor<8x4x2xf32> -> tensor<32x2x2xf32>
  return %h : tensor<32x2x2xf32>
}

// -----

func.func @concat_not_multiple(%x: tensor<?x4x2xf32>) -> tensor<30x1x2xf32> {
  // expected-error @+1 {{result dimension 0 (30) must be a multiple of the group size (4)}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64, concat_dim = 0 : i64} : tensor<?x4x2xf32> -> tensor<30x1x2xf32>
  return %h : tensor<30x1x2xf32>
}

// -----

func.func @wrong_concat_size(%x: tensor<8x4x2xf32>) -> tensor<16x1x2xf32> {
  // expected-error @+1 {{result dimension 0 must be 32 (input 8, group of 4 ranks), found 16}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64, concat_dim = 0 : i64} : tensor<8x4x2xf32> -> tensor<16x1x2xf32>
  return %h : tensor<16x1x2xf32>
}

// -----

func.func @same_dims_change_size(%x: tensor<8x4x2xf32>) -> tensor<8x8x2xf32> {
  // expected-error @+1 {{result dimension 1 must be 4 like the input's, found 8}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64, concat_dim = 1 : i64} : tensor<8x4x2xf32> -> tensor<8x8x2xf32>
  return %h : tensor<8x8x2xf32>
}

// -----

func.func @input_heads_of_other_group(%x: tensor<64x8x2xf32, #gdn.heads<ranks = 2>>) -> tensor<16x32x2xf32, #gdn.seq<contiguous, ranks = 4>> {
  // expected-error @+1 {{the input is split over 2 ranks by heads but the group has 4}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 0 : i64, concat_dim = 1 : i64} : tensor<64x8x2xf32, #gdn.heads<ranks = 2>> -> tensor<16x32x2xf32, #gdn.seq<contiguous, ranks = 4>>
  return %h : tensor<16x32x2xf32, #gdn.seq<contiguous, ranks = 4>>
}

// -----

func.func @result_heads_of_other_group(%x: tensor<16x32x2xf32, #gdn.seq<contiguous, ranks = 4>>) -> tensor<64x8x2xf32, #gdn.heads<ranks = 8>> {
  // expected-error @+1 {{the result is split over 8 ranks by heads but the group has 4}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64, concat_dim = 0 : i64} : tensor<16x32x2xf32, #gdn.seq<contiguous, ranks = 4>> -> tensor<64x8x2xf32, #gdn.heads<ranks = 8>>
  return %h : tensor<64x8x2xf32, #gdn.heads<ranks = 8>>
}

// -----

func.func @token_blocks_with_layout(%x: tensor<16x8xf32, #gdn.seq<contiguous, ranks = 4>>) -> tensor<16x8xf32, #gdn.seq<contiguous, ranks = 4>> {
  // expected-error @+1 {{split_dim = concat_dim = 0 interleaves token blocks of all ranks, which no layout describes, but the input has layout #gdn.seq<contiguous, ranks = 4>}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 0 : i64, concat_dim = 0 : i64} : tensor<16x8xf32, #gdn.seq<contiguous, ranks = 4>> -> tensor<16x8xf32, #gdn.seq<contiguous, ranks = 4>>
  return %h : tensor<16x8xf32, #gdn.seq<contiguous, ranks = 4>>
}

// -----

func.func @features_drop_shard(%x: tensor<64x8x32xf32, #gdn.seq<zigzag, ranks = 2>>) -> tensor<64x4x64xf32> {
  // expected-error @+1 {{exchanging along split_dim = 1 and concat_dim = 2 moves no tokens, so the result must keep the input's layout #gdn.seq<zigzag, ranks = 2>, found natural}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 2>, split_dim = 1 : i64, concat_dim = 2 : i64} : tensor<64x8x32xf32, #gdn.seq<zigzag, ranks = 2>> -> tensor<64x4x64xf32>
  return %h : tensor<64x4x64xf32>
}

// -----

func.func @zigzag_input(%x: tensor<16x32x2xf32, #gdn.seq<zigzag, ranks = 4>>) -> tensor<64x8x2xf32, #gdn.heads<ranks = 4>> {
  // expected-error @+1 {{the input is a zigzag shard; only contiguous shards map to rank order}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64, concat_dim = 0 : i64} : tensor<16x32x2xf32, #gdn.seq<zigzag, ranks = 4>> -> tensor<64x8x2xf32, #gdn.heads<ranks = 4>>
  return %h : tensor<64x8x2xf32, #gdn.heads<ranks = 4>>
}

// -----

func.func @input_shard_of_other_group(%x: tensor<16x32x2xf32, #gdn.seq<contiguous, ranks = 2>>) -> tensor<64x8x2xf32> {
  // expected-error @+1 {{the input is sharded over 2 ranks but the group has 4}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64, concat_dim = 0 : i64} : tensor<16x32x2xf32, #gdn.seq<contiguous, ranks = 2>> -> tensor<64x8x2xf32>
  return %h : tensor<64x8x2xf32>
}

// -----

func.func @concatenated_tokens_sharded(%x: tensor<16x32x2xf32, #gdn.seq<contiguous, ranks = 4>>) -> tensor<64x8x2xf32, #gdn.seq<contiguous, ranks = 4>> {
  // expected-error @+1 {{concatenating tokens, so the result holds all of them in natural order, but it has layout #gdn.seq<contiguous, ranks = 4>}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 1 : i64, concat_dim = 0 : i64} : tensor<16x32x2xf32, #gdn.seq<contiguous, ranks = 4>> -> tensor<64x8x2xf32, #gdn.seq<contiguous, ranks = 4>>
  return %h : tensor<64x8x2xf32, #gdn.seq<contiguous, ranks = 4>>
}

// -----

func.func @split_tokens_of_shard(%x: tensor<64x8x2xf32, #gdn.seq<contiguous, ranks = 4>>) -> tensor<16x32x2xf32, #gdn.seq<contiguous, ranks = 4>> {
  // expected-error @+1 {{splitting tokens, so the input holds all of them in natural order, but it has layout #gdn.seq<contiguous, ranks = 4>}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 0 : i64, concat_dim = 1 : i64} : tensor<64x8x2xf32, #gdn.seq<contiguous, ranks = 4>> -> tensor<16x32x2xf32, #gdn.seq<contiguous, ranks = 4>>
  return %h : tensor<16x32x2xf32, #gdn.seq<contiguous, ranks = 4>>
}

// -----

func.func @result_shard_of_other_group(%x: tensor<64x8x2xf32, #gdn.heads<ranks = 4>>) -> tensor<16x32x2xf32, #gdn.seq<contiguous, ranks = 8>> {
  // expected-error @+1 {{the result is sharded over 8 ranks but the group has 4}}
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 4>, split_dim = 0 : i64, concat_dim = 1 : i64} : tensor<64x8x2xf32, #gdn.heads<ranks = 4>> -> tensor<16x32x2xf32, #gdn.seq<contiguous, ranks = 8>>
  return %h : tensor<16x32x2xf32, #gdn.seq<contiguous, ranks = 8>>
}
