// Diagnostics of #gdn_comm.chain: only all_gather and scan exist.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

// expected-error @+2 {{expected one of [all_gather, scan] for how the chunkwise-CP state summaries are chained across ranks, got: ring}}
// expected-error @+1 {{failed to parse GdnComm_ChainKindAttr parameter 'value'}}
func.func @unknown_chain() attributes {c = #gdn_comm.chain<ring>} {
  return
}

// -----

// expected-error @+1 {{expected '<'}}
func.func @bare_chain() attributes {c = #gdn_comm.chain} {
  return
}
