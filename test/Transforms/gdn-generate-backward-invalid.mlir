// gdn-generate-backward's diagnostics, one case each: an op with no
// gradient op on the path from an argument to a result (naming the op and
// the fix), an unexpanded layer, a fused kernel op, a call, a conversion
// between a shard and a whole tensor, a name already taken; an unknown
// save= value and a functions= name that is no function.
// RUN: gdn-opt --gdn-generate-backward %s -split-input-file -verify-diagnostics
// RUN: not gdn-opt --gdn-generate-backward=save=everything %S/Inputs/cp_core.mlir 2>&1 | FileCheck %s --check-prefix=SAVE
// RUN: not gdn-opt --gdn-generate-backward=functions=nothing %S/Inputs/cp_core.mlir 2>&1 | FileCheck %s --check-prefix=FUNCTIONS
// SAVE: error: gdn-generate-backward: unknown save='everything'; expected activations, operands, inputs or none
// FUNCTIONS: error: gdn-generate-backward: functions= names @nothing, which is not a function with a body in this module

func.func @unsupported(%x: tensor<4x2xf64>, %w: tensor<2x2xf64>) -> tensor<4x2xf64> {
  %y = gdn.linear %x, %w : (tensor<4x2xf64>, tensor<2x2xf64>) -> tensor<4x2xf64>
  // expected-error@+1 {{'arith.mulf' op has no gradient op, and a differentiable value reaches a result through it}}
  %z = arith.mulf %y, %y : tensor<4x2xf64>
  return %z : tensor<4x2xf64>
}

// -----

// An op off the differentiable path is fine: the integer offsets' sum is
// neither differentiable nor reaches a float result.
func.func @inactive_ops_are_fine(%x: tensor<4x2xf64>, %w: tensor<2x2xf64>, %cu: tensor<3xi32>)
    -> (tensor<4x2xf64>, tensor<3xi32>) {
  %twice = arith.addi %cu, %cu : tensor<3xi32>
  %y = gdn.linear %x, %w : (tensor<4x2xf64>, tensor<2x2xf64>) -> tensor<4x2xf64>
  return %y, %twice : tensor<4x2xf64>, tensor<3xi32>
}

// -----

func.func @layer(%x: tensor<?x8xf64>, %cu: tensor<?xi32>,
                 %w_qkvz: tensor<48x8xf64>, %w_ba: tensor<16x8xf64>,
                 %conv: tensor<32x4xf64>, %a_log: tensor<8xf64>,
                 %dt_bias: tensor<8xf64>, %norm: tensor<2xf64>,
                 %w_out: tensor<8x16xf64>) -> tensor<?x8xf64> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // expected-error@+1 {{'gdn.layer' op is a composite layer; run --gdn-expand-layer before --gdn-generate-backward}}
  %y = gdn.layer %x, %p weights(%w_qkvz, %w_ba, %conv, %a_log, %dt_bias, %norm, %w_out)
      {projections = #gdn.projections<qwen3_next>, key_heads = 4 : i64,
       value_heads = 8 : i64, head_dim_k = 2 : i64, head_dim_v = 2 : i64,
       conv_width = 4 : i64}
      : (tensor<?x8xf64>, !gdn.packing<seqs = ?, tokens = ?>, tensor<48x8xf64>,
         tensor<16x8xf64>, tensor<32x4xf64>, tensor<8xf64>, tensor<8xf64>,
         tensor<2xf64>, tensor<8x16xf64>) -> tensor<?x8xf64>
  return %y : tensor<?x8xf64>
}

// -----

func.func @fused(%x: tensor<?x4x32xbf16>, %z: tensor<?x4x32xbf16>, %w: tensor<32xbf16>)
    -> tensor<?x4x32xbf16> {
  // expected-error@+1 {{'gdn_kernel.gated_rmsnorm' op is a fused kernel op; run --gdn-generate-backward before --gdn-fuse}}
  %y = gdn_kernel.gated_rmsnorm %x, %z, %w {eps = 1.0e-06 : f64, threads = 256 : i64}
      : (tensor<?x4x32xbf16>, tensor<?x4x32xbf16>, tensor<32xbf16>) -> tensor<?x4x32xbf16>
  return %y : tensor<?x4x32xbf16>
}

// -----

func.func private @helper(tensor<4x2xf64>) -> tensor<4x2xf64>

func.func @calls(%x: tensor<4x2xf64>) -> tensor<4x2xf64> {
  // expected-error@+1 {{'func.call' op calls another function, which gdn-generate-backward does not differentiate through; inline it first (--inline)}}
  %y = func.call @helper(%x) : (tensor<4x2xf64>) -> tensor<4x2xf64>
  return %y : tensor<4x2xf64>
}

// -----

func.func @gathers_to_all(%x: tensor<2x3xf64, #gdn.seq<contiguous, ranks = 4>>, %cu: tensor<3xi32>)
    -> tensor<8x3xf64> {
  %p = gdn.packing %cu : tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 8>
  // expected-error@+1 {{'gdn.convert_layout' op converts between a shard and a tensor every rank holds whole (from #gdn.seq<contiguous, ranks = 4> to natural); gdn-generate-backward transposes conversions between shards only}}
  %y = gdn.convert_layout %x, %p
      : (tensor<2x3xf64, #gdn.seq<contiguous, ranks = 4>>, !gdn.packing<seqs = 2, tokens = 8>)
      -> tensor<8x3xf64>
  return %y : tensor<8x3xf64>
}

// -----

// expected-error@+1 {{'func.func' op cannot get a backward: the module already has @taken_backward}}
func.func @taken(%x: tensor<4x2xf64>, %w: tensor<2x2xf64>) -> tensor<4x2xf64> {
  %y = gdn.linear %x, %w : (tensor<4x2xf64>, tensor<2x2xf64>) -> tensor<4x2xf64>
  return %y : tensor<4x2xf64>
}

func.func @taken_backward() {
  return
}
