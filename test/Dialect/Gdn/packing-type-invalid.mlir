// Every error of the !gdn.packing type: its parser and its parameter verifier.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{!gdn.packing needs seqs >= 0, found -1}}
func.func @negative_seqs(%p: !gdn.packing<seqs = -1, tokens = 4>) {
  return
}

// -----

// expected-error @+1 {{!gdn.packing needs 0 <= tokens <= 2147483647, found -3}}
func.func @negative_tokens(%p: !gdn.packing<seqs = 1, tokens = -3>) {
  return
}

// -----

// Offsets are int32, so a pack cannot hold 2^31 tokens.
// expected-error @+1 {{!gdn.packing needs 0 <= tokens <= 2147483647, found 2147483648}}
func.func @too_many_tokens(%p: !gdn.packing<seqs = 1, tokens = 2147483648>) {
  return
}

// -----

// expected-error @+1 {{!gdn.packing needs max_len >= 1, found 0}}
func.func @zero_max_len(%p: !gdn.packing<seqs = 1, tokens = 4, max_len = 0>) {
  return
}

// -----

// expected-error @+1 {{expected 'padded' or 'max_len = N' in !gdn.packing}}
func.func @unknown_flag(%p: !gdn.packing<seqs = 1, tokens = 4, causal>) {
  return
}

// -----

// expected-error @+1 {{'padded' is given twice in !gdn.packing}}
func.func @padded_twice(%p: !gdn.packing<seqs = 1, tokens = 4, padded, padded>) {
  return
}

// -----

// expected-error @+1 {{'max_len' is given twice in !gdn.packing}}
func.func @max_len_twice(%p: !gdn.packing<seqs = 1, tokens = 4, max_len = 2, max_len = 4>) {
  return
}

// -----

// max_len is a static bound: it cannot be `?`.
// expected-error @+1 {{expected integer value}}
func.func @dynamic_max_len(%p: !gdn.packing<seqs = 1, tokens = 4, max_len = ?>) {
  return
}

// -----

// expected-error @+1 {{expected ','}}
func.func @missing_tokens(%p: !gdn.packing<seqs = 1>) {
  return
}

// -----

// expected-error @+1 {{expected 'seqs'}}
func.func @counts_swapped(%p: !gdn.packing<tokens = 4, seqs = 1>) {
  return
}

// -----

// The flags are part of the type: a padded packing is not an unpadded one.
func.func @flag_is_part_of_type(%p: !gdn.packing<seqs = 2, tokens = 16, padded>)
    -> !gdn.packing<seqs = 2, tokens = 16> {
  // expected-error @+1 {{type of return operand 0 ('!gdn.packing<seqs = 2, tokens = 16, padded>') doesn't match function result type ('!gdn.packing<seqs = 2, tokens = 16>')}}
  return %p : !gdn.packing<seqs = 2, tokens = 16, padded>
}
