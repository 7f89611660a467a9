// Diagnostics of the per-rank ops of chunkwise context parallelism: one case
// per error path of their verifiers.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @local_packing_seqs(%p: !gdn.packing<seqs = 8, tokens = 64>) {
  // expected-error @+1 {{the local packing keeps the sequences, padding and max_len of '!gdn.packing<seqs = 8, tokens = 64>'}}
  %lp = gdn_comm.local_packing %p {group = #gdn_comm.group<cp, 4>} : !gdn.packing<seqs = 8, tokens = 64> -> !gdn.packing<seqs = 4, tokens = 16>
  return
}

// -----

func.func @local_packing_indivisible(%p: !gdn.packing<seqs = 8, tokens = 30>) {
  // expected-error @+1 {{30 buffer rows do not split into contiguous shards over 4 ranks; pad the pack to a multiple of 4}}
  %lp = gdn_comm.local_packing %p {group = #gdn_comm.group<cp, 4>} : !gdn.packing<seqs = 8, tokens = 30> -> !gdn.packing<seqs = 8, tokens = ?>
  return
}

// -----

func.func @local_packing_rows(%p: !gdn.packing<seqs = 8, tokens = 64>) {
  // expected-error @+1 {{a shard of 64 rows over 4 ranks has 16 rows}}
  %lp = gdn_comm.local_packing %p {group = #gdn_comm.group<cp, 4>} : !gdn.packing<seqs = 8, tokens = 64> -> !gdn.packing<seqs = 8, tokens = 32>
  return
}

// -----

func.func @conv_state_shape(%halo: tensor<3x64xf32>, %p: !gdn.packing<seqs = 8, tokens = ?>) {
  // expected-error @+1 {{the result must be [N, C, W-1] with dimension 2 = 3}}
  %c = gdn_comm.continue_conv_state %halo, %p {group = #gdn_comm.group<cp, 4>} : (tensor<3x64xf32>, !gdn.packing<seqs = 8, tokens = ?>) -> tensor<8x64x2xf32>
  return
}

// -----

func.func @conv_state_seqs(%halo: tensor<3x64xf32>, %p: !gdn.packing<seqs = 8, tokens = ?>) {
  // expected-error @+1 {{the result must be [N, C, W-1] with dimension 0 = 8}}
  %c = gdn_comm.continue_conv_state %halo, %p {group = #gdn_comm.group<cp, 4>} : (tensor<3x64xf32>, !gdn.packing<seqs = 8, tokens = ?>) -> tensor<4x64x3xf32>
  return
}

// -----

func.func @conv_state_element(%halo: tensor<3x64xf32>, %p: !gdn.packing<seqs = 8, tokens = ?>) {
  // expected-error @+1 {{the result's element type must be the halo's ('f32')}}
  %c = gdn_comm.continue_conv_state %halo, %p {group = #gdn_comm.group<cp, 4>} : (tensor<3x64xf32>, !gdn.packing<seqs = 8, tokens = ?>) -> tensor<8x64x3xbf16>
  return
}

// -----

func.func @conv_state_initial(%halo: tensor<3x64xf32>, %p: !gdn.packing<seqs = 8, tokens = ?>, %h0: tensor<?x64x3xf32>) {
  // expected-error @+1 {{initial_state must have the result's type 'tensor<8x64x3xf32>', found 'tensor<?x64x3xf32>'}}
  %c = gdn_comm.continue_conv_state %halo, %p initial_state(%h0) {group = #gdn_comm.group<cp, 4>} : (tensor<3x64xf32>, !gdn.packing<seqs = 8, tokens = ?>, tensor<?x64x3xf32>) -> tensor<8x64x3xf32>
  return
}

// -----

func.func @conv_state_layout(%halo: tensor<3x64xf32, #gdn.seq<contiguous, ranks = 4>>, %p: !gdn.packing<seqs = 8, tokens = ?>) {
  // expected-error @+1 {{halo is per sequence or per head, not a token shard; it must carry no layout}}
  %c = gdn_comm.continue_conv_state %halo, %p {group = #gdn_comm.group<cp, 4>} : (tensor<3x64xf32, #gdn.seq<contiguous, ranks = 4>>, !gdn.packing<seqs = 8, tokens = ?>) -> tensor<8x64x3xf32>
  return
}

// -----

func.func @summary_transition(%q: tensor<16x2x4xf32>, %v: tensor<16x4x4xf32>, %g: tensor<16x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{transition must be [HV, K, K] with dimension 2 = 4}}
  %m, %s = gdn_comm.state_summary %q, %q, %v, %g, %g, %p {group = #gdn_comm.group<cp, 4>} : (tensor<16x2x4xf32>, tensor<16x2x4xf32>, tensor<16x4x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>, !gdn.packing<seqs = 2, tokens = ?>) -> (tensor<4x4x8xf32>, tensor<4x4x4xf32>)
  return
}

// -----

func.func @summary_gqa(%q: tensor<16x3x4xf32>, %v: tensor<16x4x4xf32>, %g: tensor<16x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{value heads (4) must be a multiple of key heads (3)}}
  %m, %s = gdn_comm.state_summary %q, %q, %v, %g, %g, %p {group = #gdn_comm.group<cp, 4>} : (tensor<16x3x4xf32>, tensor<16x3x4xf32>, tensor<16x4x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>, !gdn.packing<seqs = 2, tokens = ?>) -> (tensor<4x4x4xf32>, tensor<4x4x4xf32>)
  return
}

// -----

func.func @summary_tokens(%q: tensor<16x2x4xf32>, %v: tensor<8x4x4xf32>, %g: tensor<16x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{v must be [T, HV, V] with dimension 0 = 16}}
  %m, %s = gdn_comm.state_summary %q, %q, %v, %g, %g, %p {group = #gdn_comm.group<cp, 4>} : (tensor<16x2x4xf32>, tensor<16x2x4xf32>, tensor<8x4x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>, !gdn.packing<seqs = 2, tokens = ?>) -> (tensor<4x4x4xf32>, tensor<4x4x4xf32>)
  return
}

// -----

func.func @summary_bf16(%q: tensor<16x2x4xbf16>, %v: tensor<16x4x4xbf16>, %g: tensor<16x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{transition is a delta-rule state, kept in fp32 (or f64 in reference programs), found 'bf16'}}
  %m, %s = gdn_comm.state_summary %q, %q, %v, %g, %g, %p {group = #gdn_comm.group<cp, 4>} : (tensor<16x2x4xbf16>, tensor<16x2x4xbf16>, tensor<16x4x4xbf16>, tensor<16x4xf32>, tensor<16x4xf32>, !gdn.packing<seqs = 2, tokens = ?>) -> (tensor<4x4x4xbf16>, tensor<4x4x4xbf16>)
  return
}

// -----

func.func @summary_initial(%q: tensor<16x2x4xf32>, %v: tensor<16x4x4xf32>, %g: tensor<16x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>, %s0: tensor<3x4x4x4xf32>) {
  // expected-error @+1 {{initial_state must be [N, HV, K, V] with dimension 0 = 2}}
  %m, %s = gdn_comm.state_summary %q, %q, %v, %g, %g, %p initial_state(%s0) {group = #gdn_comm.group<cp, 4>} : (tensor<16x2x4xf32>, tensor<16x2x4xf32>, tensor<16x4x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>, !gdn.packing<seqs = 2, tokens = ?>, tensor<3x4x4x4xf32>) -> (tensor<4x4x4xf32>, tensor<4x4x4xf32>)
  return
}

// -----

func.func @summary_initial_element(%q: tensor<16x2x4xf32>, %v: tensor<16x4x4xf32>, %g: tensor<16x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>, %s0: tensor<2x4x4x4xf64>) {
  // expected-error @+1 {{initial_state must hold the partial state's element type ('f32'), found 'tensor<2x4x4x4xf64>'}}
  %m, %s = gdn_comm.state_summary %q, %q, %v, %g, %g, %p initial_state(%s0) {group = #gdn_comm.group<cp, 4>} : (tensor<16x2x4xf32>, tensor<16x2x4xf32>, tensor<16x4x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>, !gdn.packing<seqs = 2, tokens = ?>, tensor<2x4x4x4xf64>) -> (tensor<4x4x4xf32>, tensor<4x4x4xf32>)
  return
}

// -----

func.func @continue_state_shape(%in: tensor<4x4x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{the result must be [N, HV, K, V] with dimension 1 = 4}}
  %s = gdn_comm.continue_state %in, %p {group = #gdn_comm.group<cp, 4>} : (tensor<4x4x4xf32>, !gdn.packing<seqs = 2, tokens = ?>) -> tensor<2x8x4x4xf32>
  return
}

// -----

func.func @continue_state_initial(%in: tensor<4x4x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>, %s0: tensor<2x4x4x4xf64>) {
  // expected-error @+1 {{initial_state must have the result's type 'tensor<2x4x4x4xf32>', found 'tensor<2x4x4x4xf64>'}}
  %s = gdn_comm.continue_state %in, %p initial_state(%s0) {group = #gdn_comm.group<cp, 4>} : (tensor<4x4x4xf32>, !gdn.packing<seqs = 2, tokens = ?>, tensor<2x4x4x4xf64>) -> tensor<2x4x4x4xf32>
  return
}

// -----

func.func @gather_seqs(%s: tensor<3x4x4x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{expects per-sequence states [N, ...] with N = 2, found 'tensor<3x4x4x4xf32>'}}
  %g = gdn_comm.gather_sequence_states %s, %p {group = #gdn_comm.group<cp, 4>} : (tensor<3x4x4x4xf32>, !gdn.packing<seqs = 2, tokens = ?>) -> tensor<3x4x4x4xf32>
  return
}

// -----

func.func @gather_type(%s: tensor<2x4x4x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{the result must have the input's type 'tensor<2x4x4x4xf32>', found 'tensor<2x4x4x4xf64>'}}
  %g = gdn_comm.gather_sequence_states %s, %p {group = #gdn_comm.group<cp, 4>} : (tensor<2x4x4x4xf32>, !gdn.packing<seqs = 2, tokens = ?>) -> tensor<2x4x4x4xf64>
  return
}

// -----

func.func @summary_packing_seqs(%p: !gdn.packing<seqs = 8, tokens = 64>) {
  // expected-error @+1 {{the summary packing holds two sequences, the second the leaving sequence's rows, and is padded: !gdn.packing<seqs = 2, tokens = T/P, padded>, found '!gdn.packing<seqs = 3, tokens = 16, padded>'}}
  %sp = gdn_comm.summary_packing %p {group = #gdn_comm.group<cp, 4>} : !gdn.packing<seqs = 8, tokens = 64> -> !gdn.packing<seqs = 3, tokens = 16, padded>
  return
}

// -----

func.func @summary_packing_unpadded(%p: !gdn.packing<seqs = 8, tokens = 64>) {
  // expected-error @+1 {{found '!gdn.packing<seqs = 2, tokens = 16>'}}
  %sp = gdn_comm.summary_packing %p {group = #gdn_comm.group<cp, 4>} : !gdn.packing<seqs = 8, tokens = 64> -> !gdn.packing<seqs = 2, tokens = 16>
  return
}

// -----

func.func @summary_packing_shards(%p: !gdn.packing<seqs = 8, tokens = 66>) {
  // expected-error @+1 {{66 buffer rows do not split into contiguous shards over 4 ranks; pad the pack to a multiple of 4}}
  %sp = gdn_comm.summary_packing %p {group = #gdn_comm.group<cp, 4>} : !gdn.packing<seqs = 8, tokens = 66> -> !gdn.packing<seqs = 2, tokens = 16, padded>
  return
}

// -----

func.func @summary_packing_rows(%p: !gdn.packing<seqs = 8, tokens = 64>) {
  // expected-error @+1 {{a shard of 64 rows over 4 ranks has 16 rows, found '!gdn.packing<seqs = 2, tokens = 32, padded>'}}
  %sp = gdn_comm.summary_packing %p {group = #gdn_comm.group<cp, 4>} : !gdn.packing<seqs = 8, tokens = 64> -> !gdn.packing<seqs = 2, tokens = 32, padded>
  return
}

// -----

func.func @summary_states_pair(%p: !gdn.packing<seqs = 8, tokens = 64>) {
  // expected-error @+1 {{partial must be [2, HV, K, V] with dimension 0 = 2, found 'tensor<3x4x8x8xf32>'}}
  %hs, %hm = gdn_comm.summary_initial_states %p {group = #gdn_comm.group<cp, 4>} : (!gdn.packing<seqs = 8, tokens = 64>) -> (tensor<3x4x8x8xf32>, tensor<2x4x8x8xf32>)
  return
}

// -----

func.func @summary_states_transition(%p: !gdn.packing<seqs = 8, tokens = 64>) {
  // expected-error @+1 {{transition must be [2, HV, K, K] with dimension 3 = 8, found 'tensor<2x4x8x4xf32>'}}
  %hs, %hm = gdn_comm.summary_initial_states %p {group = #gdn_comm.group<cp, 4>} : (!gdn.packing<seqs = 8, tokens = 64>) -> (tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>)
  return
}

// -----

func.func @summary_states_element(%p: !gdn.packing<seqs = 8, tokens = 64>) {
  // expected-error @+1 {{partial is a delta-rule state, kept in fp32 (or f64 in reference programs), found 'bf16'}}
  %hs, %hm = gdn_comm.summary_initial_states %p {group = #gdn_comm.group<cp, 4>} : (!gdn.packing<seqs = 8, tokens = 64>) -> (tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>)
  return
}

// -----

func.func @summary_states_mixed(%p: !gdn.packing<seqs = 8, tokens = 64>) {
  // expected-error @+1 {{partial and transition must share one element type}}
  %hs, %hm = gdn_comm.summary_initial_states %p {group = #gdn_comm.group<cp, 4>} : (!gdn.packing<seqs = 8, tokens = 64>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf64>)
  return
}

// -----

func.func @summary_states_initial(%p: !gdn.packing<seqs = 8, tokens = 64>, %s0: tensor<7x4x8x8xf32>) {
  // expected-error @+1 {{initial_state must be [N, HV, K, V] with dimension 0 = 8, found 'tensor<7x4x8x8xf32>'}}
  %hs, %hm = gdn_comm.summary_initial_states %p initial_state(%s0) {group = #gdn_comm.group<cp, 4>} : (!gdn.packing<seqs = 8, tokens = 64>, tensor<7x4x8x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>)
  return
}

// -----

func.func @summary_states_initial_element(%p: !gdn.packing<seqs = 8, tokens = 64>, %s0: tensor<8x4x8x8xf64>) {
  // expected-error @+1 {{initial_state must hold partial's element type ('f32'), found 'tensor<8x4x8x8xf64>'}}
  %hs, %hm = gdn_comm.summary_initial_states %p initial_state(%s0) {group = #gdn_comm.group<cp, 4>} : (!gdn.packing<seqs = 8, tokens = 64>, tensor<8x4x8x8xf64>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>)
  return
}
