// Round trip of the transposed communication and of chunkwise CP's
// gradient ops (what gdn-generate-backward emits for a P-rank program).
// RUN: gdn-opt %s | gdn-opt | FileCheck %s
// RUN: gdn-opt %s --mlir-print-op-generic | gdn-opt | FileCheck %s

// CHECK-LABEL: func.func @replicated_and_partial
// CHECK: gdn_comm.all_reduce %{{.*}} {group = #gdn_comm.group<cp, 4>} : tensor<128xf32>
// CHECK: gdn_comm.replicated_to_partial %{{.*}} {group = #gdn_comm.group<sp, 2>} : tensor<?x32x128x128xf32>
// CHECK: gdn_comm.local_unshard %{{.*}} {dim = 0 : i64, group = #gdn_comm.group<cp, 4>} : tensor<2048x4xbf16> -> tensor<8192x4xbf16>
func.func @replicated_and_partial(%dw: tensor<128xf32>, %dht: tensor<?x32x128x128xf32>,
                                  %block: tensor<2048x4xbf16>) {
  %0 = gdn_comm.all_reduce %dw {group = #gdn_comm.group<cp, 4>} : tensor<128xf32>
  %1 = gdn_comm.replicated_to_partial %dht {group = #gdn_comm.group<sp, 2>} : tensor<?x32x128x128xf32>
  %2 = gdn_comm.local_unshard %block {group = #gdn_comm.group<cp, 4>, dim = 0 : i64}
      : tensor<2048x4xbf16> -> tensor<8192x4xbf16>
  return
}

// CHECK-LABEL: func.func @chunkwise
// CHECK: gdn_comm.return_halo %{{.*}}, %{{.*}} {group = #gdn_comm.group<cp, 4>} : tensor<3x64xbf16>, tensor<?x64xbf16, #gdn.seq<contiguous, ranks = 4>>
// CHECK: gdn_comm.reverse_state_exchange %{{.*}} {chain = #gdn_comm.chain<scan>, group = #gdn_comm.group<cp, 4>}
// CHECK: gdn_comm.reduce_sequence_states %{{.*}} {group = #gdn_comm.group<cp, 4>}
// CHECK: gdn_comm.state_summary_grad %{{.*}} initial_state(%{{.*}}) {group = #gdn_comm.group<cp, 4>}
// CHECK: gdn_comm.continue_conv_state_grad %{{.*}} {group = #gdn_comm.group<cp, 4>} : (tensor<5x64x3xbf16>, !gdn.packing<seqs = 5, tokens = ?>) -> (tensor<3x64xbf16>, tensor<5x64x3xbf16>)
// CHECK: gdn_comm.continue_state_grad %{{.*}} {group = #gdn_comm.group<cp, 4>} : (tensor<5x4x8x8xf32>, !gdn.packing<seqs = 5, tokens = ?>) -> tensor<4x8x8xf32>
func.func @chunkwise(%dhalo: tensor<3x64xbf16>, %dx: tensor<?x64xbf16, #gdn.seq<contiguous, ranks = 4>>,
                     %dsin: tensor<4x8x8xf32>, %m: tensor<4x8x8xf32>, %s: tensor<4x8x8xf32>,
                     %dht: tensor<5x4x8x8xf32>, %p: !gdn.packing<seqs = 5, tokens = ?>,
                     %k: tensor<?x2x8xbf16, #gdn.seq<contiguous, ranks = 4>>,
                     %v: tensor<?x4x8xbf16, #gdn.seq<contiguous, ranks = 4>>,
                     %g: tensor<?x4xf32, #gdn.seq<contiguous, ranks = 4>>,
                     %beta: tensor<?x4xf32, #gdn.seq<contiguous, ranks = 4>>,
                     %s0: tensor<5x4x8x8xf32>, %dconv: tensor<5x64x3xbf16>) {
  %0 = gdn_comm.return_halo %dhalo, %dx {group = #gdn_comm.group<cp, 4>}
      : tensor<3x64xbf16>, tensor<?x64xbf16, #gdn.seq<contiguous, ranks = 4>>
  %dm, %ds = gdn_comm.reverse_state_exchange %dsin, %m, %s
      {group = #gdn_comm.group<cp, 4>, chain = #gdn_comm.chain<scan>}
      : (tensor<4x8x8xf32>, tensor<4x8x8xf32>, tensor<4x8x8xf32>) -> (tensor<4x8x8xf32>, tensor<4x8x8xf32>)
  %1 = gdn_comm.reduce_sequence_states %dht, %p {group = #gdn_comm.group<cp, 4>}
      : (tensor<5x4x8x8xf32>, !gdn.packing<seqs = 5, tokens = ?>) -> tensor<5x4x8x8xf32>
  %dk, %dv, %dg, %dbeta, %ds0 = gdn_comm.state_summary_grad %dm, %ds, %k, %v, %g, %beta, %p
      initial_state(%s0) {group = #gdn_comm.group<cp, 4>}
      : (tensor<4x8x8xf32>, tensor<4x8x8xf32>, tensor<?x2x8xbf16, #gdn.seq<contiguous, ranks = 4>>,
         tensor<?x4x8xbf16, #gdn.seq<contiguous, ranks = 4>>, tensor<?x4xf32, #gdn.seq<contiguous, ranks = 4>>,
         tensor<?x4xf32, #gdn.seq<contiguous, ranks = 4>>, !gdn.packing<seqs = 5, tokens = ?>, tensor<5x4x8x8xf32>)
      -> (tensor<?x2x8xbf16, #gdn.seq<contiguous, ranks = 4>>, tensor<?x4x8xbf16, #gdn.seq<contiguous, ranks = 4>>,
          tensor<?x4xf32, #gdn.seq<contiguous, ranks = 4>>, tensor<?x4xf32, #gdn.seq<contiguous, ranks = 4>>,
          tensor<5x4x8x8xf32>)
  %dh, %dh0 = gdn_comm.continue_conv_state_grad %dconv, %p {group = #gdn_comm.group<cp, 4>}
      : (tensor<5x64x3xbf16>, !gdn.packing<seqs = 5, tokens = ?>) -> (tensor<3x64xbf16>, tensor<5x64x3xbf16>)
  %din = gdn_comm.continue_state_grad %dht, %p {group = #gdn_comm.group<cp, 4>}
      : (tensor<5x4x8x8xf32>, !gdn.packing<seqs = 5, tokens = ?>) -> tensor<4x8x8xf32>
  return
}

// CHECK-LABEL: func.func @summary_initial_states_grad
// CHECK: gdn_comm.summary_initial_states_grad %{{.*}}, %{{.*}} {group = #gdn_comm.group<cp, 4>} : (tensor<2x4x8x8xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x8x8xf32>
func.func @summary_initial_states_grad(%d: tensor<2x4x8x8xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x8x8xf32> {
  %dh0 = gdn_comm.summary_initial_states_grad %d, %p {group = #gdn_comm.group<cp, 4>}
      : (tensor<2x4x8x8xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x8x8xf32>
  return %dh0 : tensor<?x4x8x8xf32>
}
