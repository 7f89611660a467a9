// gdn-context-parallel's diagnostics: heads that do not split over the
// ranks (suggesting chunkwise), a mode or state chain that does not exist,
// cost-model rates that are not positive numbers, a
// static token count that does not split into equal shards, a core input computed by an
// op that is not token-local, and a core output read by one.
// RUN: not gdn-opt --gdn-context-parallel="ranks=3" %S/Inputs/cp_core.mlir 2>&1 | FileCheck %s --check-prefix=HEADS
// RUN: not gdn-opt --gdn-context-parallel="ranks=2 mode=ringwise" %S/Inputs/cp_core.mlir 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not gdn-opt --gdn-context-parallel="ranks=2 mode=chunkwise chain=ring" %S/Inputs/cp_core.mlir 2>&1 | FileCheck %s --check-prefix=CHAIN
// RUN: not gdn-opt --gdn-context-parallel="ranks=2 layout=zigzag" %s --split-input-file 2>&1 | FileCheck %s --check-prefix=ZIGZAG
// ZIGZAG: error: gdn-context-parallel: 30 tokens do not split into zigzag shards over 2 ranks; pad the pack to a multiple of 4
// RUN: not gdn-opt --gdn-context-parallel="ranks=2 layout=diagonal" %S/Inputs/cp_core.mlir 2>&1 | FileCheck %s --check-prefix=LAYOUT
// RUN: not gdn-opt --gdn-context-parallel="ranks=4" %s --split-input-file 2>&1 | FileCheck %s
// RUN: not gdn-opt --gdn-context-parallel="ranks=2" %S/Inputs/cp_layer.mlir 2>&1 | FileCheck %s --check-prefix=LAYER
// RUN: not gdn-opt --gdn-sequence-parallel="ranks=2" %S/Inputs/cp_layer.mlir 2>&1 | FileCheck %s --check-prefix=SP-LAYER
// LAYER: error: gdn-context-parallel: run gdn-expand-layer first; the pass distributes the layer's primitive ops
// SP-LAYER: error: gdn-sequence-parallel: run gdn-expand-layer first; the pass distributes the layer's primitive ops

// RUN: not gdn-opt --gdn-context-parallel="ranks=4 mode=auto tflops=nan" %S/Inputs/cp_core.mlir 2>&1 | FileCheck %s --check-prefix=TFLOPS
// RUN: not gdn-opt --gdn-context-parallel="ranks=4 mode=auto link-gbps=0" %S/Inputs/cp_core.mlir 2>&1 | FileCheck %s --check-prefix=LINK
// RUN: not gdn-opt --gdn-context-parallel="ranks=4 mode=auto collective-us=-1" %S/Inputs/cp_core.mlir 2>&1 | FileCheck %s --check-prefix=LATENCY
// RUN: not gdn-opt --gdn-context-parallel="ranks=4 mode=auto tokens=-5" %S/Inputs/cp_core.mlir 2>&1 | FileCheck %s --check-prefix=TOKENS
// TFLOPS: error: gdn-context-parallel: tflops=nan must be a finite number > 0 (mode=auto prices the modes with it)
// LINK: error: gdn-context-parallel: link-gbps=0 must be a finite number > 0
// LATENCY: error: gdn-context-parallel: collective-us=-1 must be a finite number >= 0
// TOKENS: error: gdn-context-parallel: tokens=-5 must be >= 0 (0: the program's own token count)
// RUN: not gdn-opt --gdn-context-parallel="ranks=0" %S/Inputs/cp_core.mlir 2>&1 | FileCheck %s --check-prefix=RANKS
// RUN: not gdn-opt --allow-unregistered-dialect --gdn-context-parallel="ranks=2" %S/Inputs/cp_two_blocks.mlir 2>&1 | FileCheck %s --check-prefix=BLOCKS
// RANKS: error: gdn-context-parallel: ranks must be >= 1, found 0
// BLOCKS: error: gdn-context-parallel: expects a function of one block
// HEADS: error: gdn-context-parallel: headwise needs the key heads (8) and value heads (16) divisible by ranks = 3; use mode=chunkwise, which has no head-count constraint
// LAYOUT: error: gdn-context-parallel: layout=diagonal is not a token sharding; use contiguous or zigzag
// MODE: error: gdn-context-parallel: mode=ringwise does not exist; use headwise, chunkwise or auto
// CHAIN: error: gdn-context-parallel: chain=ring is not a state chain; use all_gather, scan or auto

// CHECK: error: gdn-context-parallel: 30 tokens do not split into contiguous shards over 4 ranks; pad the pack to a multiple of 4
func.func @odd_tokens(%mixed: tensor<30x64xf64>, %w: tensor<64x4xf64>, %a: tensor<30x16xf64>,
                      %b: tensor<30x16xf64>, %a_log: tensor<16xf64>, %dt_bias: tensor<16xf64>,
                      %cu: tensor<3xi32>) -> tensor<30x16x2xf64> {
  %p = gdn.packing %cu : tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 30>
  %c = gdn.causal_conv1d %mixed, %w, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<30x64xf64>, tensor<64x4xf64>, !gdn.packing<seqs = 2, tokens = 30>) -> tensor<30x64xf64>
  %q, %k, %v = gdn.split_qkv %c : tensor<30x64xf64> -> tensor<30x8x2xf64>, tensor<30x8x2xf64>, tensor<30x16x2xf64>
  %qn = gdn.l2norm %q : tensor<30x8x2xf64>
  %kn = gdn.l2norm %k : tensor<30x8x2xf64>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<30x16xf64>, tensor<30x16xf64>, tensor<16xf64>, tensor<16xf64>) -> (tensor<30x16xf64>, tensor<30x16xf64>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<30x8x2xf64>, tensor<30x8x2xf64>, tensor<30x16x2xf64>, tensor<30x16xf64>,
         tensor<30x16xf64>, !gdn.packing<seqs = 2, tokens = 30>) -> (tensor<30x16x2xf64>, tensor<2x16x2x2xf64>)
  return %o : tensor<30x16x2xf64>
}

// -----

// CHECK: error: gdn-context-parallel: the core's token inputs must come from function arguments through gdn.linear, gdn.split_qkvz and gdn.gated_rmsnorm only
// CHECK: note: produced here by arith.addf
func.func @computed_input(%m: tensor<32x64xf64>, %w: tensor<64x4xf64>,
                          %a: tensor<32x16xf64>, %b: tensor<32x16xf64>, %a_log: tensor<16xf64>,
                          %dt_bias: tensor<16xf64>, %cu: tensor<3xi32>) -> tensor<32x16x2xf64> {
  %p = gdn.packing %cu : tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 32>
  %mixed = arith.addf %m, %m : tensor<32x64xf64>
  %c = gdn.causal_conv1d %mixed, %w, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<32x64xf64>, tensor<64x4xf64>, !gdn.packing<seqs = 2, tokens = 32>) -> tensor<32x64xf64>
  %q, %k, %v = gdn.split_qkv %c : tensor<32x64xf64> -> tensor<32x8x2xf64>, tensor<32x8x2xf64>, tensor<32x16x2xf64>
  %qn = gdn.l2norm %q : tensor<32x8x2xf64>
  %kn = gdn.l2norm %k : tensor<32x8x2xf64>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<32x16xf64>, tensor<32x16xf64>, tensor<16xf64>, tensor<16xf64>) -> (tensor<32x16xf64>, tensor<32x16xf64>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<32x8x2xf64>, tensor<32x8x2xf64>, tensor<32x16x2xf64>, tensor<32x16xf64>,
         tensor<32x16xf64>, !gdn.packing<seqs = 2, tokens = 32>) -> (tensor<32x16x2xf64>, tensor<2x16x2x2xf64>)
  return %o : tensor<32x16x2xf64>
}

// -----

// CHECK: error: gdn-context-parallel: reads a token-indexed value but is not one of the token-local ops the pass distributes (gdn.linear's input, gdn.split_qkvz, gdn.gated_rmsnorm)
func.func @output_used_elsewhere(%mixed: tensor<32x64xf64>, %w: tensor<64x4xf64>,
                                 %a: tensor<32x16xf64>, %b: tensor<32x16xf64>, %a_log: tensor<16xf64>,
                                 %dt_bias: tensor<16xf64>, %cu: tensor<3xi32>) -> tensor<32x16x2xf64> {
  %p = gdn.packing %cu : tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 32>
  %c = gdn.causal_conv1d %mixed, %w, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<32x64xf64>, tensor<64x4xf64>, !gdn.packing<seqs = 2, tokens = 32>) -> tensor<32x64xf64>
  %q, %k, %v = gdn.split_qkv %c : tensor<32x64xf64> -> tensor<32x8x2xf64>, tensor<32x8x2xf64>, tensor<32x16x2xf64>
  %qn = gdn.l2norm %q : tensor<32x8x2xf64>
  %kn = gdn.l2norm %k : tensor<32x8x2xf64>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<32x16xf64>, tensor<32x16xf64>, tensor<16xf64>, tensor<16xf64>) -> (tensor<32x16xf64>, tensor<32x16xf64>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<32x8x2xf64>, tensor<32x8x2xf64>, tensor<32x16x2xf64>, tensor<32x16xf64>,
         tensor<32x16xf64>, !gdn.packing<seqs = 2, tokens = 32>) -> (tensor<32x16x2xf64>, tensor<2x16x2x2xf64>)
  %twice = arith.addf %o, %o : tensor<32x16x2xf64>
  return %twice : tensor<32x16x2xf64>
}

// -----

// CHECK: error: gdn-context-parallel: reads a value inside a GDN core, which the pass replaces by its distributed form
func.func @gate_returned(%mixed: tensor<32x64xf64>, %w: tensor<64x4xf64>,
                         %a: tensor<32x16xf64>, %b: tensor<32x16xf64>, %a_log: tensor<16xf64>,
                         %dt_bias: tensor<16xf64>, %cu: tensor<3xi32>) -> (tensor<32x16x2xf64>, tensor<32x16xf64>) {
  %p = gdn.packing %cu : tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 32>
  %c = gdn.causal_conv1d %mixed, %w, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<32x64xf64>, tensor<64x4xf64>, !gdn.packing<seqs = 2, tokens = 32>) -> tensor<32x64xf64>
  %q, %k, %v = gdn.split_qkv %c : tensor<32x64xf64> -> tensor<32x8x2xf64>, tensor<32x8x2xf64>, tensor<32x16x2xf64>
  %qn = gdn.l2norm %q : tensor<32x8x2xf64>
  %kn = gdn.l2norm %k : tensor<32x8x2xf64>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<32x16xf64>, tensor<32x16xf64>, tensor<16xf64>, tensor<16xf64>) -> (tensor<32x16xf64>, tensor<32x16xf64>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<32x8x2xf64>, tensor<32x8x2xf64>, tensor<32x16x2xf64>, tensor<32x16xf64>,
         tensor<32x16xf64>, !gdn.packing<seqs = 2, tokens = 32>) -> (tensor<32x16x2xf64>, tensor<2x16x2x2xf64>)
  return %o, %g : tensor<32x16x2xf64>, tensor<32x16xf64>
}

// -----

// CHECK: error: gdn-context-parallel: expects the delta rule's q and k to be L2 norms of a split_qkv of the conv, its v that split's, and g and beta one gates op (run the pass before gdn-fuse)
func.func @no_l2norm(%q: tensor<32x8x2xf64>, %k: tensor<32x8x2xf64>, %v: tensor<32x16x2xf64>,
                     %g: tensor<32x16xf64>, %beta: tensor<32x16xf64>, %cu: tensor<3xi32>) -> tensor<32x16x2xf64> {
  %p = gdn.packing %cu : tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 32>
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta, %p
      : (tensor<32x8x2xf64>, tensor<32x8x2xf64>, tensor<32x16x2xf64>, tensor<32x16xf64>,
         tensor<32x16xf64>, !gdn.packing<seqs = 2, tokens = 32>) -> (tensor<32x16x2xf64>, tensor<2x16x2x2xf64>)
  return %o : tensor<32x16x2xf64>
}

// -----

// A core whose inputs are already token shards is not distributed again.
// CHECK: error: gdn-context-parallel: argument #3 is already distributed
func.func @already_sharded(%mixed: tensor<30x64xf64, #gdn.seq<contiguous, ranks = 4>>, %w: tensor<64x4xf64>, %a: tensor<30x16xf64, #gdn.seq<contiguous, ranks = 4>>,
                      %b: tensor<30x16xf64, #gdn.seq<contiguous, ranks = 4>>, %a_log: tensor<16xf64>, %dt_bias: tensor<16xf64>,
                      %cu: tensor<3xi32>) -> tensor<30x16x2xf64, #gdn.seq<contiguous, ranks = 4>> {
  %p = gdn.packing %cu : tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 30>
  %c = gdn.causal_conv1d %mixed, %w, %p {width = 4 : i64, activation = #gdn.act<silu>}
      : (tensor<30x64xf64, #gdn.seq<contiguous, ranks = 4>>, tensor<64x4xf64>, !gdn.packing<seqs = 2, tokens = 30>) -> tensor<30x64xf64, #gdn.seq<contiguous, ranks = 4>>
  %q, %k, %v = gdn.split_qkv %c : tensor<30x64xf64, #gdn.seq<contiguous, ranks = 4>> -> tensor<30x8x2xf64, #gdn.seq<contiguous, ranks = 4>>, tensor<30x8x2xf64, #gdn.seq<contiguous, ranks = 4>>, tensor<30x16x2xf64, #gdn.seq<contiguous, ranks = 4>>
  %qn = gdn.l2norm %q : tensor<30x8x2xf64, #gdn.seq<contiguous, ranks = 4>>
  %kn = gdn.l2norm %k : tensor<30x8x2xf64, #gdn.seq<contiguous, ranks = 4>>
  %g, %beta = gdn.gates %a, %b, %a_log, %dt_bias
      : (tensor<30x16xf64, #gdn.seq<contiguous, ranks = 4>>, tensor<30x16xf64, #gdn.seq<contiguous, ranks = 4>>, tensor<16xf64>, tensor<16xf64>) -> (tensor<30x16xf64, #gdn.seq<contiguous, ranks = 4>>, tensor<30x16xf64, #gdn.seq<contiguous, ranks = 4>>)
  %o, %s = gdn.delta_rule %qn, %kn, %v, %g, %beta, %p
      : (tensor<30x8x2xf64, #gdn.seq<contiguous, ranks = 4>>, tensor<30x8x2xf64, #gdn.seq<contiguous, ranks = 4>>, tensor<30x16x2xf64, #gdn.seq<contiguous, ranks = 4>>, tensor<30x16xf64, #gdn.seq<contiguous, ranks = 4>>,
         tensor<30x16xf64, #gdn.seq<contiguous, ranks = 4>>, !gdn.packing<seqs = 2, tokens = 30>) -> (tensor<30x16x2xf64, #gdn.seq<contiguous, ranks = 4>>, tensor<2x16x2x2xf64>)
  return %o : tensor<30x16x2xf64, #gdn.seq<contiguous, ranks = 4>>
}

