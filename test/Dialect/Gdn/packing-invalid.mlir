// Every error of gdn.packing: operand types, entry counts, the padded flag and the rules on constant offsets.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @i64_offsets(%cu: tensor<3xi64>) {
  // expected-error @+1 {{operand #0 must be 1D tensor of 32-bit signless integer values, but got 'tensor<3xi64>'}}
  %p = "gdn.packing"(%cu) : (tensor<3xi64>) -> !gdn.packing<seqs = 2, tokens = ?>
  return
}

// -----

func.func @rank2_offsets(%cu: tensor<1x3xi32>) {
  // expected-error @+1 {{operand #0 must be 1D tensor of 32-bit signless integer values, but got 'tensor<1x3xi32>'}}
  %p = "gdn.packing"(%cu) : (tensor<1x3xi32>) -> !gdn.packing<seqs = 2, tokens = ?>
  return
}

// -----

func.func @result_not_packing(%cu: tensor<3xi32>) {
  // expected-error @+1 {{result #0 must be packed-sequence metadata (cu_seqlens, optional padded offsets), but got 'tensor<3xi32>'}}
  %p = "gdn.packing"(%cu) : (tensor<3xi32>) -> tensor<3xi32>
  return
}

// -----

func.func @seqlens_entries(%cu: tensor<4xi32>) {
  // expected-error @+1 {{cu_seqlens has 4 entries but the packing has seqs = 2, which needs 3}}
  %p = gdn.packing %cu : tensor<4xi32> -> !gdn.packing<seqs = 2, tokens = ?>
  return
}

// -----

func.func @padded_type_without_cu_padded(%cu: tensor<3xi32>) {
  // expected-error @+1 {{the packing type is padded but no cu_padded operand is given}}
  %p = gdn.packing %cu : tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 16, padded>
  return
}

// -----

func.func @cu_padded_without_padded_type(%cu: tensor<3xi32>, %cup: tensor<3xi32>) {
  // expected-error @+1 {{cu_padded is given but the packing type lacks 'padded'}}
  %p = gdn.packing %cu padded %cup : tensor<3xi32>, tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 16>
  return
}

// -----

func.func @padded_entries(%cu: tensor<3xi32>, %cup: tensor<5xi32>) {
  // expected-error @+1 {{cu_padded has 5 entries but the packing has seqs = 2, which needs 3}}
  %p = gdn.packing %cu padded %cup : tensor<3xi32>, tensor<5xi32> -> !gdn.packing<seqs = 2, tokens = 16, padded>
  return
}

// -----

// With seqs = ?, only the constant offsets can show the counts disagree.
func.func @constant_entry_counts_differ() {
  %cu = arith.constant dense<[0, 3, 7]> : tensor<3xi32>
  %cup = arith.constant dense<[0, 8, 16, 16]> : tensor<4xi32>
  // expected-error @+1 {{cu_padded has 4 entries but cu_seqlens has 3; both need N + 1}}
  %p = gdn.packing %cu padded %cup : tensor<3xi32>, tensor<4xi32> -> !gdn.packing<seqs = ?, tokens = 16, padded>
  return
}

// -----

func.func @constant_empty() {
  %cu = arith.constant dense<> : tensor<0xi32>
  // expected-error @+1 {{cu_seqlens must have at least one entry (N + 1 for N sequences)}}
  %p = gdn.packing %cu : tensor<0xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  return
}

// -----

func.func @constant_not_starting_at_zero() {
  %cu = arith.constant dense<[1, 3, 7]> : tensor<3xi32>
  // expected-error @+1 {{cu_seqlens[0] must be 0, found 1}}
  %p = gdn.packing %cu : tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 7>
  return
}

// -----

func.func @constant_decreasing() {
  %cu = arith.constant dense<[0, 5, 3, 7]> : tensor<4xi32>
  // expected-error @+1 {{cu_seqlens must be non-decreasing, but cu_seqlens[2] = 3 < cu_seqlens[1] = 5}}
  %p = gdn.packing %cu : tensor<4xi32> -> !gdn.packing<seqs = 3, tokens = 7>
  return
}

// -----

// A negative entry is a decrease from the previous one.
func.func @constant_negative() {
  %cu = arith.constant dense<[0, -2, 7]> : tensor<3xi32>
  // expected-error @+1 {{cu_seqlens must be non-decreasing, but cu_seqlens[1] = -2 < cu_seqlens[0] = 0}}
  %p = gdn.packing %cu : tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = ?>
  return
}

// -----

func.func @constant_total_mismatch() {
  %cu = arith.constant dense<[0, 3, 7]> : tensor<3xi32>
  // expected-error @+1 {{cu_seqlens[2] = 7 must equal the token count 8; if the buffer holds alignment padding, give its padded offsets (cu_padded)}}
  %p = gdn.packing %cu : tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 8>
  return
}

// -----

func.func @constant_above_max_len() {
  %cu = arith.constant dense<[0, 3, 8]> : tensor<3xi32>
  // expected-error @+1 {{sequence 1 has length 5, above max_len = 4; raise max_len or split the sequence}}
  %p = gdn.packing %cu : tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 8, max_len = 4>
  return
}

// -----

// max_len bounds the real lengths of a padded packing, not its slots.
func.func @padded_above_max_len() {
  %cu = arith.constant dense<[0, 3, 8]> : tensor<3xi32>
  %cup = arith.constant dense<[0, 8, 16]> : tensor<3xi32>
  // expected-error @+1 {{sequence 1 has length 5, above max_len = 4}}
  %p = gdn.packing %cu padded %cup : tensor<3xi32>, tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 16, padded, max_len = 4>
  return
}

// -----

func.func @padded_real_longer_than_slot() {
  %cu = arith.constant dense<[0, 3, 12]> : tensor<3xi32>
  %cup = arith.constant dense<[0, 8, 16]> : tensor<3xi32>
  // expected-error @+1 {{sequence 1 has 9 real tokens but its padded slot holds only 8}}
  %p = gdn.packing %cu padded %cup : tensor<3xi32>, tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 16, padded>
  return
}

// -----

func.func @padded_seqlens_decreasing() {
  %cu = arith.constant dense<[0, 3, 2]> : tensor<3xi32>
  %cup = arith.constant dense<[0, 8, 16]> : tensor<3xi32>
  // expected-error @+1 {{cu_seqlens must be non-decreasing, but cu_seqlens[2] = 2 < cu_seqlens[1] = 3}}
  %p = gdn.packing %cu padded %cup : tensor<3xi32>, tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 16, padded>
  return
}

// -----

func.func @padded_slots_not_starting_at_zero() {
  %cu = arith.constant dense<[0, 3, 7]> : tensor<3xi32>
  %cup = arith.constant dense<[2, 8, 16]> : tensor<3xi32>
  // expected-error @+1 {{cu_padded[0] must be 0, found 2}}
  %p = gdn.packing %cu padded %cup : tensor<3xi32>, tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 16, padded>
  return
}

// -----

func.func @padded_slots_decreasing() {
  %cu = arith.constant dense<[0, 3, 3]> : tensor<3xi32>
  %cup = arith.constant dense<[0, 8, 4]> : tensor<3xi32>
  // expected-error @+1 {{cu_padded must be non-decreasing, but cu_padded[2] = 4 < cu_padded[1] = 8}}
  %p = gdn.packing %cu padded %cup : tensor<3xi32>, tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = ?, padded>
  return
}

// -----

// For a padded packing, tokens is the buffer size cu_padded[N].
func.func @padded_buffer_mismatch() {
  %cu = arith.constant dense<[0, 3, 7]> : tensor<3xi32>
  %cup = arith.constant dense<[0, 8, 16]> : tensor<3xi32>
  // expected-error @+1 {{cu_padded[2] = 16 must equal the token count 7}}
  %p = gdn.packing %cu padded %cup : tensor<3xi32>, tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 7, padded>
  return
}

// -----

// Constant cu_seqlens are checked even when cu_padded is only known at run time.
func.func @padded_dynamic_slots_seqlens_not_zero(%cup: tensor<3xi32>) {
  %cu = arith.constant dense<[4, 5, 7]> : tensor<3xi32>
  // expected-error @+1 {{cu_seqlens[0] must be 0, found 4}}
  %p = gdn.packing %cu padded %cup : tensor<3xi32>, tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 16, padded>
  return
}

// -----

// The real tokens must fit in the buffer, whatever the slots are.
func.func @padded_dynamic_slots_too_many_tokens(%cup: tensor<3xi32>) {
  %cu = arith.constant dense<[0, 10, 20]> : tensor<3xi32>
  // expected-error @+1 {{cu_seqlens[2] = 20 exceeds the padded buffer size tokens = 16; the real tokens must fit in the buffer}}
  %p = gdn.packing %cu padded %cup : tensor<3xi32>, tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 16, padded>
  return
}

// -----

// Constant cu_padded are checked even when cu_seqlens is only known at run time.
func.func @padded_dynamic_seqlens_bad_slots(%cu: tensor<3xi32>) {
  %cup = arith.constant dense<[0, 8, 12]> : tensor<3xi32>
  // expected-error @+1 {{cu_padded[2] = 12 must equal the token count 16}}
  %p = gdn.packing %cu padded %cup : tensor<3xi32>, tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 16, padded>
  return
}
