// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @not_divisible(%x: tensor<6x4xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{dimension 0 of the input (6) must be divisible by the group size (4)}}
  %y = gdn_comm.local_shard %x {group = #gdn_comm.group<cp, 4>, dim = 0 : i64} : tensor<6x4xf32> -> tensor<1x4xf32>
  return %y : tensor<1x4xf32>
}

// -----

func.func @wrong_block(%x: tensor<8x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{result dimension 0 must be 2 (input 8, group of 4 ranks), found 4}}
  %y = gdn_comm.local_shard %x {group = #gdn_comm.group<cp, 4>, dim = 0 : i64} : tensor<8x4xf32> -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

func.func @token_shard(%x: tensor<8x4xf32, #gdn.seq<contiguous, ranks = 4>>) -> tensor<2x4xf32> {
  // expected-error @+1 {{cuts a tensor every rank holds whole, but the input carries the layout #gdn.seq<contiguous, ranks = 4>}}
  %y = gdn_comm.local_shard %x {group = #gdn_comm.group<cp, 4>, dim = 0 : i64} : tensor<8x4xf32, #gdn.seq<contiguous, ranks = 4>> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
