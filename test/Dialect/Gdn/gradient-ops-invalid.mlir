// The gradient ops' verifiers: the forward op's invariants over the forward
// operands and the results' cotangents, every cotangent in the type of the
// value it belongs to (or its shape and layout with a narrower float type),
// and optional cotangents exactly for optional operands.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

// A cotangent may be narrower than its primal, never wider.
func.func @conv_cotangent_wider(%dy: tensor<?x8xbf16>, %x: tensor<?x8xbf16>, %w: tensor<8x4xbf16>,
                                %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{x_grad must have the type of x ('tensor<?x8xbf16>'), or its shape and layout with a narrower float type, found 'tensor<?x8xf32>'}}
  %dx, %dw = gdn.causal_conv1d_grad %dy, %x, %w, %p {width = 4 : i64}
      : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<8x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x8xf32>, tensor<8x4xbf16>)
  return
}

// -----

// Narrower, but not of x's shape.
func.func @conv_cotangent_shape(%dy: tensor<?x8xbf16>, %x: tensor<?x8xf32>, %w: tensor<8x4xbf16>,
                                %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{x_grad must have the type of x ('tensor<?x8xf32>'), or its shape and layout with a narrower float type, found 'tensor<4x8xbf16>'}}
  %dx, %dw = gdn.causal_conv1d_grad %dy, %x, %w, %p {width = 4 : i64}
      : (tensor<?x8xbf16>, tensor<?x8xf32>, tensor<8x4xbf16>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<4x8xbf16>, tensor<8x4xbf16>)
  return
}

// -----

func.func @conv_missing_bias_grad(%dy: tensor<?x8xf64>, %x: tensor<?x8xf64>, %w: tensor<8x4xf64>,
                                  %b: tensor<8xf64>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{returns 0 optional cotangents but has 1 of bias and initial_state}}
  %dx, %dw = gdn.causal_conv1d_grad %dy, %x, %w, %p bias(%b) {width = 4 : i64}
      : (tensor<?x8xf64>, tensor<?x8xf64>, tensor<8x4xf64>, !gdn.packing<seqs = ?, tokens = ?>, tensor<8xf64>)
      -> (tensor<?x8xf64>, tensor<8x4xf64>)
  return
}

// -----

// The forward op's invariants: the conv weight must match the width.
func.func @conv_width(%dy: tensor<?x8xf64>, %x: tensor<?x8xf64>, %w: tensor<8x3xf64>,
                      %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{weight dimension 1 (width) must be 4}}
  %dx, %dw = gdn.causal_conv1d_grad %dy, %x, %w, %p {width = 4 : i64}
      : (tensor<?x8xf64>, tensor<?x8xf64>, tensor<8x3xf64>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x8xf64>, tensor<8x3xf64>)
  return
}

// -----

func.func @delta_gqa(%do: tensor<?x3x8xf32>, %q: tensor<?x2x8xf32>, %k: tensor<?x2x8xf32>,
                     %v: tensor<?x3x8xf32>, %g: tensor<?x3xf32>, %beta: tensor<?x3xf32>,
                     %p: !gdn.packing<seqs = 3, tokens = ?>) {
  // expected-error @+1 {{value heads (3) must be a multiple of key heads (2)}}
  %dq, %dk, %dv, %dg, %dbeta = gdn.delta_rule_grad %do, %q, %k, %v, %g, %beta, %p
      : (tensor<?x3x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x3x8xf32>,
         tensor<?x3xf32>, tensor<?x3xf32>, !gdn.packing<seqs = 3, tokens = ?>)
      -> (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x3x8xf32>, tensor<?x3xf32>, tensor<?x3xf32>)
  return
}

// -----

func.func @delta_initial_grad_without_state(%do: tensor<?x4x8xf32>, %q: tensor<?x2x8xf32>,
                                            %k: tensor<?x2x8xf32>, %v: tensor<?x4x8xf32>,
                                            %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>,
                                            %p: !gdn.packing<seqs = 3, tokens = ?>) {
  // expected-error @+1 {{has initial_state_grad but no initial_state it would be the cotangent of}}
  %dq, %dk, %dv, %dg, %dbeta, %ds = gdn.delta_rule_grad %do, %q, %k, %v, %g, %beta, %p
      : (tensor<?x4x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x4x8xf32>,
         tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 3, tokens = ?>)
      -> (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>,
          tensor<3x4x8x8xf32>)
  return
}

// -----

func.func @gates_cotangents(%dg: tensor<?x4xf32>, %dbeta: tensor<?x4xf64>, %a: tensor<?x4xf32>,
                            %b: tensor<?x4xf32>, %a_log: tensor<4xf32>, %dt_bias: tensor<4xf32>) {
  // expected-error @+1 {{g_grad and beta_grad are cotangents of one op's two results of one type, found 'tensor<?x4xf32>' and 'tensor<?x4xf64>'}}
  %da, %db, %dalog, %ddt = gdn.gates_grad %dg, %dbeta, %a, %b, %a_log, %dt_bias
      : (tensor<?x4xf32>, tensor<?x4xf64>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @linear_weight_grad(%dy: tensor<?x6xf32>, %x: tensor<?x3xf32>, %w: tensor<6x3xf32>) {
  // expected-error @+1 {{weight_grad must have the type of weight ('tensor<6x3xf32>'), or its shape and layout with a narrower float type, found 'tensor<3x6xf32>'}}
  %dx, %dw = gdn.linear_grad %dy, %x, %w
      : (tensor<?x6xf32>, tensor<?x3xf32>, tensor<6x3xf32>) -> (tensor<?x3xf32>, tensor<3x6xf32>)
  return
}

// -----

func.func @rmsnorm_layouts(%dy: tensor<?x4x8xf32, #gdn.seq<contiguous, ranks = 2>>, %x: tensor<?x4x8xf32>,
                           %z: tensor<?x4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{x, z and y must share one sequence layout}}
  %dx, %dz, %dw = gdn.gated_rmsnorm_grad %dy, %x, %z, %w
      : (tensor<?x4x8xf32, #gdn.seq<contiguous, ranks = 2>>, tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<8xf32>)
      -> (tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @merge_qkv_channels(%q: tensor<?x2x2xf64>, %k: tensor<?x2x2xf64>, %v: tensor<?x4x2xf64>) {
  // expected-error @+1 {{mixed_qkv dimension 1 (2HK + HV*V) must be 16}}
  %c = gdn.merge_qkv %q, %k, %v : tensor<?x2x2xf64>, tensor<?x2x2xf64>, tensor<?x4x2xf64> -> tensor<?x12xf64>
  return
}
