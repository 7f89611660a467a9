// Diagnostics of gdn_comm.rank: its group attribute and its result type.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @zero_ranks() -> index {
  // expected-error @+1 {{a process group needs at least one rank, found 0}}
  %r = gdn_comm.rank {group = #gdn_comm.group<cp, 0>} : index
  return %r : index
}

// -----

func.func @missing_group() -> index {
  // expected-error @+1 {{requires attribute 'group'}}
  %r = gdn_comm.rank : index
  return %r : index
}

// -----

func.func @not_index_custom() -> i32 {
  // expected-error @+1 {{expected builtin.index, but found 'i32'}}
  %r = gdn_comm.rank {group = #gdn_comm.group<cp, 4>} : i32
  return %r : i32
}

// -----

// The generic form reaches the ODS result constraint.
func.func @not_index_generic() -> i32 {
  // expected-error @+1 {{result #0 must be index, but got 'i32'}}
  %r = "gdn_comm.rank"() <{group = #gdn_comm.group<cp, 4>}> : () -> i32
  return %r : i32
}
