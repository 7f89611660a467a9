// Every error of gdn.l2norm: rank 0, negative or NaN eps, dtype, and result type.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @rank0(%x: tensor<f32>) {
  // expected-error @+1 {{x must have a dimension to normalise, found 'tensor<f32>'}}
  %0 = gdn.l2norm %x : tensor<f32>
  return
}

// -----

func.func @negative_eps(%x: tensor<?x16x128xbf16>) {
  // expected-error @+1 {{eps must be >= 0, found -1.000000e-06}}
  %0 = gdn.l2norm %x {eps = -1.0e-06 : f64} : tensor<?x16x128xbf16>
  return
}

// -----

func.func @nan_eps(%x: tensor<?x16x128xbf16>) {
  // expected-error @+1 {{eps must be >= 0, found nan}}
  %0 = gdn.l2norm %x {eps = 0x7FF8000000000000 : f64} : tensor<?x16x128xbf16>
  return
}

// -----

func.func @f32_eps_attr(%x: tensor<?x16x128xbf16>) {
  // expected-error @+1 {{attribute 'eps' failed to satisfy constraint: 64-bit float attribute}}
  %0 = gdn.l2norm %x {eps = 1.0e-06 : f32} : tensor<?x16x128xbf16>
  return
}

// -----

func.func @integer_input(%x: tensor<?x16x128xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float or 64-bit float values, but got 'tensor<?x16x128xi32>'}}
  %0 = gdn.l2norm %x : tensor<?x16x128xi32>
  return
}

// -----

func.func @unranked_input(%x: tensor<*xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float or 64-bit float values, but got 'tensor<*xf32>'}}
  %0 = "gdn.l2norm"(%x) : (tensor<*xf32>) -> tensor<*xf32>
  return
}

// -----

// The result has the input's type, layout included.
func.func @result_layout(%x: tensor<?x16x128xbf16, #gdn.seq<zigzag, ranks = 4>>) {
  // expected-error @+2 {{'gdn.l2norm' op inferred type(s) 'tensor<?x16x128xbf16, #gdn.seq<zigzag, ranks = 4>>' are incompatible with return type(s) of operation 'tensor<?x16x128xbf16>'}}
  // expected-error @+1 {{'gdn.l2norm' op failed to infer returned types}}
  %0 = "gdn.l2norm"(%x) : (tensor<?x16x128xbf16, #gdn.seq<zigzag, ranks = 4>>) -> tensor<?x16x128xbf16>
  return
}
