// Layout changes on simulated ranks preserve the global tensor: a headwise
// all-to-all and back (2 ranks), and natural -> zigzag -> contiguous ->
// natural conversions with zigzag pieces cut per sequence (4 ranks). Each
// P-rank program equals the one-rank identity bit for bit.
// RUN: gdn-run --compare %s %s --entry=ulysses --compare-entry=identity_heads | FileCheck %s
// RUN: gdn-run --compare %s %s --entry=zigzag --compare-entry=identity_tokens --seqlens=8,16,0,24 | FileCheck %s
// RUN: not gdn-run %s --entry=zigzag --seqlens=8,12 2>&1 | FileCheck %s --check-prefix=ODD

// CHECK:     result #0: {{.*}}rel_rms = 0.000e+00  max_abs = 0.000e+00  ok
// ODD: zigzag sharding over 4 ranks needs every sequence's length to be a multiple of 8, but sequence 1 has length 12

func.func @ulysses(%x: tensor<4x4x2xf64, #gdn.seq<contiguous, ranks = 2>>)
    -> (tensor<4x4x2xf64, #gdn.seq<contiguous, ranks = 2>>, tensor<8x2x2xf64, #gdn.heads<ranks = 2>>) {
  %h = gdn_comm.all_to_all %x {group = #gdn_comm.group<cp, 2>, split_dim = 1 : i64, concat_dim = 0 : i64}
      : tensor<4x4x2xf64, #gdn.seq<contiguous, ranks = 2>> -> tensor<8x2x2xf64, #gdn.heads<ranks = 2>>
  %back = gdn_comm.all_to_all %h {group = #gdn_comm.group<cp, 2>, split_dim = 0 : i64, concat_dim = 1 : i64}
      : tensor<8x2x2xf64, #gdn.heads<ranks = 2>> -> tensor<4x4x2xf64, #gdn.seq<contiguous, ranks = 2>>
  return %back, %h : tensor<4x4x2xf64, #gdn.seq<contiguous, ranks = 2>>, tensor<8x2x2xf64, #gdn.heads<ranks = 2>>
}

func.func @identity_heads(%x: tensor<8x4x2xf64>) -> (tensor<8x4x2xf64>, tensor<8x4x2xf64>) {
  return %x, %x : tensor<8x4x2xf64>, tensor<8x4x2xf64>
}

func.func @zigzag(%x: tensor<?x3xf64>, %cu: tensor<?xi32>) -> tensor<?x3xf64> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %z = gdn.convert_layout %x, %p : (tensor<?x3xf64>, !gdn.packing<seqs = ?, tokens = ?>)
      -> tensor<?x3xf64, #gdn.seq<zigzag, ranks = 4>>
  %c = gdn.convert_layout %z, %p : (tensor<?x3xf64, #gdn.seq<zigzag, ranks = 4>>, !gdn.packing<seqs = ?, tokens = ?>)
      -> tensor<?x3xf64, #gdn.seq<contiguous, ranks = 4>>
  %n = gdn.convert_layout %c, %p : (tensor<?x3xf64, #gdn.seq<contiguous, ranks = 4>>, !gdn.packing<seqs = ?, tokens = ?>)
      -> tensor<?x3xf64>
  return %n : tensor<?x3xf64>
}

func.func @identity_tokens(%x: tensor<?x3xf64>, %cu: tensor<?xi32>) -> tensor<?x3xf64> {
  return %x : tensor<?x3xf64>
}
