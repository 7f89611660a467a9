// Diagnostics of gdn_comm.halo_exchange: one case per error path of its
// verifier.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @zero_rank_group(%x: tensor<16x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{a process group needs at least one rank, found 0}}
  %h = gdn_comm.halo_exchange %x {group = #gdn_comm.group<cp, 0>, tokens = 3 : i64} : tensor<16x8xf32> -> tensor<3x8xf32>
  return %h : tensor<3x8xf32>
}

// -----

func.func @zero_tokens(%x: tensor<16x8xf32>) -> tensor<0x8xf32> {
  // expected-error @+1 {{attribute 'tokens' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %h = gdn_comm.halo_exchange %x {group = #gdn_comm.group<cp, 4>, tokens = 0 : i64} : tensor<16x8xf32> -> tensor<0x8xf32>
  return %h : tensor<0x8xf32>
}

// -----

func.func @element_mismatch(%x: tensor<16x8xbf16>) -> tensor<3x8xf32> {
  // expected-error @+1 {{result element type ('f32') must match the input's ('bf16')}}
  %h = gdn_comm.halo_exchange %x {group = #gdn_comm.group<cp, 4>, tokens = 3 : i64} : tensor<16x8xbf16> -> tensor<3x8xf32>
  return %h : tensor<3x8xf32>
}

// -----

func.func @rank_mismatch(%x: tensor<16x8xf32>) -> tensor<3x8x1xf32> {
  // expected-error @+1 {{result rank (3) must match the input's (2)}}
  %h = gdn_comm.halo_exchange %x {group = #gdn_comm.group<cp, 4>, tokens = 3 : i64} : tensor<16x8xf32> -> tensor<3x8x1xf32>
  return %h : tensor<3x8x1xf32>
}

// -----

// A rank-0 tensor has no token dimension (this used to crash the verifier).
func.func @scalar_input(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{expects a token-indexed input [T, ...], found 'tensor<f32>'}}
  %h = gdn_comm.halo_exchange %x {group = #gdn_comm.group<cp, 4>, tokens = 3 : i64} : tensor<f32> -> tensor<f32>
  return %h : tensor<f32>
}

// -----

func.func @features_changed(%x: tensor<16x8xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{result dimension 1 must be 8 like the input's, found 4}}
  %h = gdn_comm.halo_exchange %x {group = #gdn_comm.group<cp, 4>, tokens = 3 : i64} : tensor<16x8xf32> -> tensor<3x4xf32>
  return %h : tensor<3x4xf32>
}

// -----

func.func @wrong_halo_rows(%x: tensor<16x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{the halo must have tokens = 3 rows, found 4}}
  %h = gdn_comm.halo_exchange %x {group = #gdn_comm.group<cp, 4>, tokens = 3 : i64} : tensor<16x8xf32> -> tensor<4x8xf32>
  return %h : tensor<4x8xf32>
}

// -----

// In a zigzag shard the previous rank's last rows do not precede this rank's
// first tokens.
func.func @zigzag_input(%x: tensor<16x8xf32, #gdn.seq<zigzag, ranks = 4>>) -> tensor<3x8xf32> {
  // expected-error @+1 {{the input is a zigzag shard; only contiguous shards map to rank order}}
  %h = gdn_comm.halo_exchange %x {group = #gdn_comm.group<cp, 4>, tokens = 3 : i64} : tensor<16x8xf32, #gdn.seq<zigzag, ranks = 4>> -> tensor<3x8xf32>
  return %h : tensor<3x8xf32>
}

// -----

func.func @shard_of_other_group(%x: tensor<16x8xf32, #gdn.seq<contiguous, ranks = 2>>) -> tensor<3x8xf32> {
  // expected-error @+1 {{the input is sharded over 2 ranks but the group has 4}}
  %h = gdn_comm.halo_exchange %x {group = #gdn_comm.group<cp, 4>, tokens = 3 : i64} : tensor<16x8xf32, #gdn.seq<contiguous, ranks = 2>> -> tensor<3x8xf32>
  return %h : tensor<3x8xf32>
}

// -----

func.func @halo_with_layout(%x: tensor<16x8xf32, #gdn.seq<contiguous, ranks = 4>>) -> tensor<3x8xf32, #gdn.seq<contiguous, ranks = 4>> {
  // expected-error @+1 {{the halo is a few rows of the previous rank, not a shard; it must carry no layout}}
  %h = gdn_comm.halo_exchange %x {group = #gdn_comm.group<cp, 4>, tokens = 3 : i64} : tensor<16x8xf32, #gdn.seq<contiguous, ranks = 4>> -> tensor<3x8xf32, #gdn.seq<contiguous, ranks = 4>>
  return %h : tensor<3x8xf32, #gdn.seq<contiguous, ranks = 4>>
}
