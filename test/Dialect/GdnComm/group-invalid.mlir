// Diagnostics of #gdn_comm.group: the rank count and the parsed kind.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{a process group needs at least one rank, found 0}}
func.func @zero_ranks() attributes {g = #gdn_comm.group<sp, 0>} {
  return
}

// -----

// expected-error @+2 {{expected one of [sp, cp] for role of a process group, got: tp}}
// expected-error @+1 {{failed to parse GdnComm_GroupAttr parameter 'kind'}}
func.func @unknown_kind() attributes {g = #gdn_comm.group<tp, 4>} {
  return
}

// -----

// expected-error @+1 {{expected ','}}
func.func @missing_ranks() attributes {g = #gdn_comm.group<cp>} {
  return
}
