// Diagnostics of gdn_comm.all_gather: one case per error path of its verifier.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @zero_rank_group(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{a process group needs at least one rank, found 0}}
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 0>, dim = 0 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}

// -----

func.func @negative_dim(%x: tensor<4x8xf32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{attribute 'dim' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 4>, dim = -1 : i64} : tensor<4x8xf32> -> tensor<16x8xf32>
  return %g : tensor<16x8xf32>
}

// -----

func.func @integer_element(%x: tensor<4x8xi32>) -> tensor<16x8xi32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values, but got 'tensor<4x8xi32>'}}
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 4>, dim = 0 : i64} : tensor<4x8xi32> -> tensor<16x8xi32>
  return %g : tensor<16x8xi32>
}

// -----

func.func @element_mismatch(%x: tensor<4x8xbf16>) -> tensor<16x8xf32> {
  // expected-error @+1 {{result element type ('f32') must match the input's ('bf16')}}
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 4>, dim = 0 : i64} : tensor<4x8xbf16> -> tensor<16x8xf32>
  return %g : tensor<16x8xf32>
}

// -----

func.func @rank_mismatch(%x: tensor<4x8xf32>) -> tensor<16x8x1xf32> {
  // expected-error @+1 {{result rank (3) must match the input's (2)}}
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 4>, dim = 0 : i64} : tensor<4x8xf32> -> tensor<16x8x1xf32>
  return %g : tensor<16x8x1xf32>
}

// -----

func.func @dim_out_of_range(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{dim = 2 is out of range for a rank-2 tensor}}
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 4>, dim = 2 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}

// -----

func.func @result_not_multiple(%x: tensor<?x8xf32>) -> tensor<6x8xf32> {
  // expected-error @+1 {{result dimension 0 (6) must be a multiple of the group size (4)}}
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 4>, dim = 0 : i64} : tensor<?x8xf32> -> tensor<6x8xf32>
  return %g : tensor<6x8xf32>
}

// -----

func.func @wrong_gathered_size(%x: tensor<4x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{result dimension 0 must be 16 (input 4, group of 4 ranks), found 8}}
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 4>, dim = 0 : i64} : tensor<4x8xf32> -> tensor<8x8xf32>
  return %g : tensor<8x8xf32>
}

// -----

func.func @other_dim_changed(%x: tensor<4x8xf32>) -> tensor<16x4xf32> {
  // expected-error @+1 {{result dimension 1 must be 8 like the input's, found 4}}
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 4>, dim = 0 : i64} : tensor<4x8xf32> -> tensor<16x4xf32>
  return %g : tensor<16x4xf32>
}

// -----

func.func @feature_gather_drops_shard(%x: tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 4>>) -> tensor<512x256xbf16> {
  // expected-error @+1 {{gathering along dim = 1 moves no tokens, so the result must keep the input's layout #gdn.seq<contiguous, ranks = 4>, found natural}}
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 4>, dim = 1 : i64} : tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 4>> -> tensor<512x256xbf16>
  return %g : tensor<512x256xbf16>
}

// -----

func.func @zigzag_input(%x: tensor<512x64xbf16, #gdn.seq<zigzag, ranks = 4>>) -> tensor<2048x64xbf16> {
  // expected-error @+1 {{the input is a zigzag shard; only contiguous shards map to rank order, use gdn.convert_layout for the others}}
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 4>, dim = 0 : i64} : tensor<512x64xbf16, #gdn.seq<zigzag, ranks = 4>> -> tensor<2048x64xbf16>
  return %g : tensor<2048x64xbf16>
}

// -----

func.func @shard_of_other_group(%x: tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 2>>) -> tensor<2048x64xbf16> {
  // expected-error @+1 {{the input is sharded over 2 ranks but the group has 4}}
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 4>, dim = 0 : i64} : tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 2>> -> tensor<2048x64xbf16>
  return %g : tensor<2048x64xbf16>
}

// -----

func.func @sharded_result(%x: tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 4>>) -> tensor<2048x64xbf16, #gdn.seq<contiguous, ranks = 4>> {
  // expected-error @+1 {{with the result sharded as #gdn.seq<contiguous, ranks = 4>, the input must be #gdn.seq<contiguous, ranks = 16> (the SP group's 4 ranks nested inside), found #gdn.seq<contiguous, ranks = 4>}}
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 4>, dim = 0 : i64} : tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 4>> -> tensor<2048x64xbf16, #gdn.seq<contiguous, ranks = 4>>
  return %g : tensor<2048x64xbf16, #gdn.seq<contiguous, ranks = 4>>
}

// -----

func.func @nested_over_cp(%x: tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 8>>) -> tensor<1024x64xbf16, #gdn.seq<contiguous, ranks = 4>> {
  // expected-error @+1 {{the result is a token shard over 4 ranks: only an SP group, the innermost ranks, moves between nested shards}}
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<cp, 2>, dim = 0 : i64} : tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 8>> -> tensor<1024x64xbf16, #gdn.seq<contiguous, ranks = 4>>
  return %g : tensor<1024x64xbf16, #gdn.seq<contiguous, ranks = 4>>
}

// -----

func.func @zigzag_not_nested(%x: tensor<256x64xbf16, #gdn.seq<zigzag, ranks = 4>>) -> tensor<512x64xbf16, #gdn.seq<zigzag, ranks = 4>> {
  // expected-error @+1 {{with the result sharded as #gdn.seq<zigzag, ranks = 4>, the input must be #gdn.seq<zigzag, ranks = 4, inner = 2> (the SP group's 2 ranks nested inside), found #gdn.seq<zigzag, ranks = 4>}}
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 2>, dim = 0 : i64} : tensor<256x64xbf16, #gdn.seq<zigzag, ranks = 4>> -> tensor<512x64xbf16, #gdn.seq<zigzag, ranks = 4>>
  return %g : tensor<512x64xbf16, #gdn.seq<zigzag, ranks = 4>>
}

// -----

func.func @zigzag_nested_wrong_inner(%x: tensor<128x64xbf16, #gdn.seq<zigzag, ranks = 4, inner = 4>>) -> tensor<256x64xbf16, #gdn.seq<zigzag, ranks = 4>> {
  // expected-error @+1 {{must be #gdn.seq<zigzag, ranks = 4, inner = 2> (the SP group's 2 ranks nested inside), found #gdn.seq<zigzag, ranks = 4, inner = 4>}}
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 2>, dim = 0 : i64} : tensor<128x64xbf16, #gdn.seq<zigzag, ranks = 4, inner = 4>> -> tensor<256x64xbf16, #gdn.seq<zigzag, ranks = 4>>
  return %g : tensor<256x64xbf16, #gdn.seq<zigzag, ranks = 4>>
}

// -----

func.func @nested_zigzag_to_all_tokens(%x: tensor<128x64xbf16, #gdn.seq<zigzag, ranks = 4, inner = 2>>) -> tensor<256x64xbf16> {
  // expected-error @+1 {{the input is a zigzag shard; only contiguous shards map to rank order, use gdn.convert_layout for the others}}
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 2>, dim = 0 : i64} : tensor<128x64xbf16, #gdn.seq<zigzag, ranks = 4, inner = 2>> -> tensor<256x64xbf16>
  return %g : tensor<256x64xbf16>
}
