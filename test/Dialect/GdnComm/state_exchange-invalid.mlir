// Diagnostics of gdn_comm.state_exchange: one case per error path of its
// verifier.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @zero_rank_group(%m: tensor<4x8x8xf32>, %s: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
  // expected-error @+1 {{a process group needs at least one rank, found 0}}
  %h = gdn_comm.state_exchange %m, %s {group = #gdn_comm.group<cp, 0>} : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %h : tensor<4x8x16xf32>
}

// -----

func.func @chain_not_an_enum(%m: tensor<4x8x8xf32>, %s: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
  // expected-error @+1 {{attribute 'chain' failed to satisfy constraint: how the chunkwise-CP state summaries are chained across ranks}}
  %h = gdn_comm.state_exchange %m, %s {group = #gdn_comm.group<cp, 4>, chain = 1 : i32} : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %h : tensor<4x8x16xf32>
}

// -----

func.func @not_rank_3(%m: tensor<8x8xf32>, %s: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
  // expected-error @+1 {{expects transition [HV, K, K] and partial_state [HV, K, V], found 'tensor<8x8xf32>' and 'tensor<4x8x16xf32>'}}
  %h = gdn_comm.state_exchange %m, %s {group = #gdn_comm.group<cp, 4>} : (tensor<8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %h : tensor<4x8x16xf32>
}

// -----

func.func @bf16_state(%m: tensor<4x8x8xf32>, %s: tensor<4x8x16xbf16>) -> tensor<4x8x16xbf16> {
  // expected-error @+1 {{chains states in fp32: every operand and the result must be f32 (or f64), found 'tensor<4x8x16xbf16>'}}
  %h = gdn_comm.state_exchange %m, %s {group = #gdn_comm.group<cp, 4>} : (tensor<4x8x8xf32>, tensor<4x8x16xbf16>) -> tensor<4x8x16xbf16>
  return %h : tensor<4x8x16xbf16>
}

// -----

func.func @mixed_precision(%m: tensor<4x8x8xf64>, %s: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
  // expected-error @+1 {{transition element type ('f64') must match partial_state's ('f32'); chain both in one precision}}
  %h = gdn_comm.state_exchange %m, %s {group = #gdn_comm.group<cp, 4>} : (tensor<4x8x8xf64>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %h : tensor<4x8x16xf32>
}

// -----

func.func @sharded_state(%m: tensor<4x8x8xf32>, %s: tensor<4x8x16xf32, #gdn.seq<contiguous, ranks = 4>>) -> tensor<4x8x16xf32, #gdn.seq<contiguous, ranks = 4>> {
  // expected-error @+1 {{partial_state is a per-rank summary, not a token-indexed activation; it must carry no sequence layout, found #gdn.seq<contiguous, ranks = 4>}}
  %h = gdn_comm.state_exchange %m, %s {group = #gdn_comm.group<cp, 4>} : (tensor<4x8x8xf32>, tensor<4x8x16xf32, #gdn.seq<contiguous, ranks = 4>>) -> tensor<4x8x16xf32, #gdn.seq<contiguous, ranks = 4>>
  return %h : tensor<4x8x16xf32, #gdn.seq<contiguous, ranks = 4>>
}

// -----

func.func @incoming_type(%m: tensor<4x8x8xf32>, %s: tensor<4x8x16xf32>) -> tensor<4x8x8xf32> {
  // expected-error @+1 {{the incoming state must have the partial state's type 'tensor<4x8x16xf32>', found 'tensor<4x8x8xf32>'}}
  %h = gdn_comm.state_exchange %m, %s {group = #gdn_comm.group<cp, 4>} : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x8xf32>
  return %h : tensor<4x8x8xf32>
}

// -----

func.func @transition_not_k_by_k(%m: tensor<4x8x16xf32>, %s: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
  // expected-error @+1 {{transition 'tensor<4x8x16xf32>' must be [HV, K, K] = [4, 8, 8] for the partial state 'tensor<4x8x16xf32>' [HV, K, V]}}
  %h = gdn_comm.state_exchange %m, %s {group = #gdn_comm.group<cp, 4>} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %h : tensor<4x8x16xf32>
}

// -----

func.func @head_count_mismatch(%m: tensor<2x8x8xf32>, %s: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
  // expected-error @+1 {{transition 'tensor<2x8x8xf32>' must be [HV, K, K] = [4, 8, 8] for the partial state 'tensor<4x8x16xf32>' [HV, K, V]}}
  %h = gdn_comm.state_exchange %m, %s {group = #gdn_comm.group<cp, 4>} : (tensor<2x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %h : tensor<4x8x16xf32>
}
