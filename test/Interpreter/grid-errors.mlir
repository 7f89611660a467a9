// In an S x P grid a collective runs per SP or CP group and counts ranks
// within it; its errors also say which global ranks the group holds.
// RUN: not gdn-run %s --seqlens=2,2 2>&1 | FileCheck %s
// CHECK: 'gdn_comm.gather_sequence_states' at {{.*}} on rank 0: the states have 3 entries but the packing 2 sequences (ranks are counted within the cp group of global ranks 0, 2)

func.func @grid(%x: tensor<?x2xf32, #gdn.seq<contiguous, ranks = 4>>,
                %states: tensor<3x4x2x2xf32>, %cu: tensor<?xi32>)
    -> (tensor<?x2xf32, #gdn.seq<contiguous, ranks = 2>>, tensor<3x4x2x2xf32>) {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  // The SP group of 2 inside the CP group of 2 makes the grid 2 x 2.
  %g = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 2>, dim = 0 : i64}
      : tensor<?x2xf32, #gdn.seq<contiguous, ranks = 4>> -> tensor<?x2xf32, #gdn.seq<contiguous, ranks = 2>>
  %s = gdn_comm.gather_sequence_states %states, %p {group = #gdn_comm.group<cp, 2>}
      : (tensor<3x4x2x2xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<3x4x2x2xf32>
  return %g, %s : tensor<?x2xf32, #gdn.seq<contiguous, ranks = 2>>, tensor<3x4x2x2xf32>
}
