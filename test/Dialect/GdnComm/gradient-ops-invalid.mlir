// The transposed communication's verifiers: no token layout on what every
// rank holds whole, shapes the forward op's read in reverse, cotangents in
// their values' types.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @all_reduce_shard(%x: tensor<4x8xf32, #gdn.seq<contiguous, ranks = 2>>) {
  // expected-error @+1 {{the input is held whole or per sequence by every rank, not a shard; it must carry no layout}}
  %0 = gdn_comm.all_reduce %x {group = #gdn_comm.group<cp, 2>} : tensor<4x8xf32, #gdn.seq<contiguous, ranks = 2>>
  return
}

// -----

func.func @unshard_size(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{result dimension 0 must be 8 (the input's times the group's ranks), found 6}}
  %0 = gdn_comm.local_unshard %x {group = #gdn_comm.group<cp, 4>, dim = 0 : i64} : tensor<2x4xf32> -> tensor<6x4xf32>
  return
}

// -----

func.func @halo_columns(%dhalo: tensor<3x32xf32>, %dx: tensor<?x64xf32>) {
  // expected-error @+1 {{halo_grad dimension 1 (32) must match dest's (64)}}
  %0 = gdn_comm.return_halo %dhalo, %dx {group = #gdn_comm.group<cp, 4>} : tensor<3x32xf32>, tensor<?x64xf32>
  return
}

// -----

func.func @halo_zigzag(%dhalo: tensor<3x64xf32>, %dx: tensor<?x64xf32, #gdn.seq<zigzag, ranks = 4>>) {
  // expected-error @+1 {{dest must be a contiguous token shard of the group's 4 ranks, found #gdn.seq<zigzag, ranks = 4>}}
  %0 = gdn_comm.return_halo %dhalo, %dx {group = #gdn_comm.group<cp, 4>} : tensor<3x64xf32>, tensor<?x64xf32, #gdn.seq<zigzag, ranks = 4>>
  return
}

// -----

func.func @reverse_chain_types(%dsin: tensor<4x8x16xf32>, %m: tensor<4x8x8xf32>, %s: tensor<4x8x8xf32>) {
  // expected-error @+1 {{incoming_state_grad must have the type of partial_state ('tensor<4x8x8xf32>'), found 'tensor<4x8x16xf32>'}}
  %dm, %ds = gdn_comm.reverse_state_exchange %dsin, %m, %s {group = #gdn_comm.group<cp, 4>}
      : (tensor<4x8x16xf32>, tensor<4x8x8xf32>, tensor<4x8x8xf32>) -> (tensor<4x8x8xf32>, tensor<4x8x8xf32>)
  return
}

// -----

func.func @reduce_states_count(%d: tensor<4x2x2x2xf32>, %p: !gdn.packing<seqs = 5, tokens = ?>) {
  // expected-error @+1 {{the input must be per sequence [N, ...] with N = 5, found 'tensor<4x2x2x2xf32>'}}
  %0 = gdn_comm.reduce_sequence_states %d, %p {group = #gdn_comm.group<cp, 4>}
      : (tensor<4x2x2x2xf32>, !gdn.packing<seqs = 5, tokens = ?>) -> tensor<4x2x2x2xf32>
  return
}

// -----

func.func @summary_grad_initial(%dm: tensor<4x8x8xf32>, %ds: tensor<4x8x8xf32>, %k: tensor<?x2x8xf32>,
                                %v: tensor<?x4x8xf32>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>,
                                %p: !gdn.packing<seqs = 5, tokens = ?>) {
  // expected-error @+1 {{returns initial_state_grad exactly when it has an initial_state}}
  %dk, %dv, %dg, %dbeta, %ds0 = gdn_comm.state_summary_grad %dm, %ds, %k, %v, %g, %beta, %p
      {group = #gdn_comm.group<cp, 4>}
      : (tensor<4x8x8xf32>, tensor<4x8x8xf32>, tensor<?x2x8xf32>, tensor<?x4x8xf32>, tensor<?x4xf32>,
         tensor<?x4xf32>, !gdn.packing<seqs = 5, tokens = ?>)
      -> (tensor<?x2x8xf32>, tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<5x4x8x8xf32>)
  return
}

// -----

func.func @conv_state_grad_halo(%d: tensor<5x64x3xf32>, %p: !gdn.packing<seqs = 5, tokens = ?>) {
  // expected-error @+1 {{halo_grad must be [W-1, C] of state_grad's element type or a narrower float for state_grad 'tensor<5x64x3xf32>', found 'tensor<2x64xf32>'}}
  %dh = gdn_comm.continue_conv_state_grad %d, %p {group = #gdn_comm.group<cp, 4>}
      : (tensor<5x64x3xf32>, !gdn.packing<seqs = 5, tokens = ?>) -> tensor<2x64xf32>
  return
}

// -----

func.func @state_grad_incoming(%d: tensor<5x4x8x8xf32>, %p: !gdn.packing<seqs = 5, tokens = ?>) {
  // expected-error @+1 {{incoming_grad must be [HV, K, V] of state_grad 'tensor<5x4x8x8xf32>', found 'tensor<4x8x4xf32>'}}
  %din = gdn_comm.continue_state_grad %d, %p {group = #gdn_comm.group<cp, 4>}
      : (tensor<5x4x8x8xf32>, !gdn.packing<seqs = 5, tokens = ?>) -> tensor<4x8x4xf32>
  return
}

// -----

func.func @summary_states_grad_pair(%d: tensor<3x4x8x8xf32>, %p: !gdn.packing<seqs = 5, tokens = ?>) {
  // expected-error @+1 {{partial_grad must be the cotangent of a summary run's initial states, [2, HV, K, V], found 'tensor<3x4x8x8xf32>'}}
  %dh0 = gdn_comm.summary_initial_states_grad %d, %p {group = #gdn_comm.group<cp, 4>}
      : (tensor<3x4x8x8xf32>, !gdn.packing<seqs = 5, tokens = ?>) -> tensor<5x4x8x8xf32>
  return
}

// -----

func.func @summary_states_grad_result(%d: tensor<2x4x8x8xf32>, %p: !gdn.packing<seqs = 5, tokens = ?>) {
  // expected-error @+1 {{the result must be per-sequence states [N, HV, K, V] with N = 5 and partial_grad's element type, found 'tensor<4x4x8x8xf32>'}}
  %dh0 = gdn_comm.summary_initial_states_grad %d, %p {group = #gdn_comm.group<cp, 4>}
      : (tensor<2x4x8x8xf32>, !gdn.packing<seqs = 5, tokens = ?>) -> tensor<4x4x8x8xf32>
  return
}
