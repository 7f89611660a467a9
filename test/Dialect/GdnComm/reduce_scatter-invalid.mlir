// Diagnostics of gdn_comm.reduce_scatter: one case per error path of its
// verifier.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @zero_rank_group(%y: tensor<16x8xf32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{a process group needs at least one rank, found 0}}
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 0>, dim = 0 : i64} : tensor<16x8xf32> -> tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}

// -----

func.func @missing_dim(%y: tensor<16x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{requires attribute 'dim'}}
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 4>} : tensor<16x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

func.func @element_mismatch(%y: tensor<16x8xf32>) -> tensor<4x8xbf16> {
  // expected-error @+1 {{result element type ('bf16') must match the input's ('f32')}}
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 4>, dim = 0 : i64} : tensor<16x8xf32> -> tensor<4x8xbf16>
  return %r : tensor<4x8xbf16>
}

// -----

func.func @rank_mismatch(%y: tensor<16x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{result rank (1) must match the input's (2)}}
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 4>, dim = 0 : i64} : tensor<16x8xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @dim_out_of_range(%y: tensor<16x8xf32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{dim = 5 is out of range for a rank-2 tensor}}
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 4>, dim = 5 : i64} : tensor<16x8xf32> -> tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}

// -----

// Even with a dynamic result, a static input must split into equal slices.
func.func @input_not_divisible(%y: tensor<6x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{dimension 0 of the input (6) must be divisible by the group size (4)}}
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 4>, dim = 0 : i64} : tensor<6x8xf32> -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// -----

func.func @wrong_slice_size(%y: tensor<16x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{result dimension 0 must be 4 (input 16, group of 4 ranks), found 8}}
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 4>, dim = 0 : i64} : tensor<16x8xf32> -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

func.func @other_dim_changed(%y: tensor<16x8xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{result dimension 1 must be 8 like the input's, found 2}}
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 4>, dim = 0 : i64} : tensor<16x8xf32> -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// -----

func.func @feature_scatter_adds_shard(%y: tensor<512x256xbf16>) -> tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 4>> {
  // expected-error @+1 {{scattering along dim = 1 moves no tokens, so the result must keep the input's layout natural, found #gdn.seq<contiguous, ranks = 4>}}
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 4>, dim = 1 : i64} : tensor<512x256xbf16> -> tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 4>>
  return %r : tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 4>>
}

// -----

func.func @sharded_input(%y: tensor<2048x64xbf16, #gdn.seq<zigzag, ranks = 2>>) -> tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 4>> {
  // expected-error @+1 {{with the input sharded as #gdn.seq<zigzag, ranks = 2>, the result must be #gdn.seq<zigzag, ranks = 2, inner = 4> (the SP group's 4 ranks nested inside), found #gdn.seq<contiguous, ranks = 4>}}
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 4>, dim = 0 : i64} : tensor<2048x64xbf16, #gdn.seq<zigzag, ranks = 2>> -> tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 4>>
  return %r : tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 4>>
}

// -----

func.func @zigzag_result(%y: tensor<2048x64xbf16>) -> tensor<512x64xbf16, #gdn.seq<zigzag, ranks = 4>> {
  // expected-error @+1 {{the result is a zigzag shard; only contiguous shards map to rank order, use gdn.convert_layout for the others}}
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 4>, dim = 0 : i64} : tensor<2048x64xbf16> -> tensor<512x64xbf16, #gdn.seq<zigzag, ranks = 4>>
  return %r : tensor<512x64xbf16, #gdn.seq<zigzag, ranks = 4>>
}

// -----

func.func @shard_of_other_group(%y: tensor<2048x64xbf16>) -> tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 8>> {
  // expected-error @+1 {{the result is sharded over 8 ranks but the group has 4}}
  %r = gdn_comm.reduce_scatter %y {group = #gdn_comm.group<sp, 4>, dim = 0 : i64} : tensor<2048x64xbf16> -> tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 8>>
  return %r : tensor<512x64xbf16, #gdn.seq<contiguous, ranks = 8>>
}
