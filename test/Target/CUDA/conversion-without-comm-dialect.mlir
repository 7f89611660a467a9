// A layout conversion in a module that never mentions gdn_comm: the emitter
// names the conversion's CP group all the same (it loads the dialect
// first; found by gdn-compile-fuzzer, a crash before). Converting a shard
// to a whole tensor has no lowering, and says so.
// RUN: gdn-translate --gdn-to-cuda %s | FileCheck %s
// CHECK: // @gathers_to_all: 0 kernel(s)
// CHECK: // No whole-function entry point:
func.func @gathers_to_all(%x: tensor<2x3xf64, #gdn.seq<contiguous, ranks = 4>>, %cu: tensor<3xi32>)
    -> tensor<8x3xf64> {
  %p = gdn.packing %cu : tensor<3xi32> -> !gdn.packing<seqs = 2, tokens = 8>
  %y = gdn.convert_layout %x, %p
      : (tensor<2x3xf64, #gdn.seq<contiguous, ranks = 4>>, !gdn.packing<seqs = 2, tokens = 8>)
      -> tensor<8x3xf64>
  return %y : tensor<8x3xf64>
}
