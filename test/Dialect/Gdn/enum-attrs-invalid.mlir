// Parse errors of the enum attributes #gdn.act and #gdn.projections.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

// expected-error @+2 {{expected one of [none, silu] for activation after the causal conv, got: relu}}
// expected-error @+1 {{failed to parse Gdn_ActivationAttr parameter 'value'}}
func.func @unknown_activation() attributes {act = #gdn.act<relu>} {
  return
}

// -----

// expected-error @+2 {{expected one of [qwen3_next, qwen3_5] for input projection layout of a GDN layer, got: qwen2}}
// expected-error @+1 {{failed to parse Gdn_ProjectionsAttr parameter 'value'}}
func.func @unknown_projections() attributes {p = #gdn.projections<qwen2>} {
  return
}
