// Run-time errors of the per-rank chunkwise-CP ops in gdn-run: a buffer that
// does not cut into equal shards (with the fix), per-sequence initial states
// that do not match the packing, and activations that are not the rank's
// shard. Each names the op, the rank and the sizes.
// RUN: not gdn-run %s --entry=odd_buffer --seqlens=2,3 2>&1 | FileCheck %s --check-prefix=ODD
// RUN: not gdn-run %s --entry=initial_count --seqlens=2,2 2>&1 | FileCheck %s --check-prefix=INITIAL
// RUN: not gdn-run %s --entry=not_a_shard --seqlens=3,5 2>&1 | FileCheck %s --check-prefix=ROWS
// ODD: 'gdn_comm.continue_state' at {{.*}} on rank 0: chunkwise context parallelism cuts the buffer into 2 equal contiguous shards, but it has 5 rows; pad the pack to a multiple of 2
// INITIAL: 'gdn_comm.continue_state' at {{.*}} on rank 0: initial_state has shape 3x4x2x2xf32 at run time but must be 2x4x2x2xf32
// ROWS: 'gdn_comm.state_summary' at {{.*}} on rank 0: q has 8 rows but the shard has 4

func.func @odd_buffer(%in: tensor<4x2x2xf32>, %cu: tensor<?xi32>) -> tensor<?x4x2x2xf32> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %s = gdn_comm.continue_state %in, %p {group = #gdn_comm.group<cp, 2>}
      : (tensor<4x2x2xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x2x2xf32>
  return %s : tensor<?x4x2x2xf32>
}

func.func @initial_count(%in: tensor<4x2x2xf32>, %s0: tensor<3x4x2x2xf32>, %cu: tensor<?xi32>) -> tensor<3x4x2x2xf32> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %s = gdn_comm.continue_state %in, %p initial_state(%s0) {group = #gdn_comm.group<cp, 2>}
      : (tensor<4x2x2xf32>, !gdn.packing<seqs = ?, tokens = ?>, tensor<3x4x2x2xf32>) -> tensor<3x4x2x2xf32>
  return %s : tensor<3x4x2x2xf32>
}

// q, k, v, g, beta hold all 8 tokens instead of this rank's 4.
func.func @not_a_shard(%q: tensor<?x2x2xf32>, %v: tensor<?x4x2xf32>, %g: tensor<?x4xf32>,
                       %cu: tensor<?xi32>) -> tensor<4x2x2xf32> {
  %p = gdn.packing %cu : tensor<?xi32> -> !gdn.packing<seqs = ?, tokens = ?>
  %m, %s = gdn_comm.state_summary %q, %q, %v, %g, %g, %p {group = #gdn_comm.group<cp, 2>}
      : (tensor<?x2x2xf32>, tensor<?x2x2xf32>, tensor<?x4x2xf32>, tensor<?x4xf32>, tensor<?x4xf32>,
         !gdn.packing<seqs = ?, tokens = ?>) -> (tensor<4x2x2xf32>, tensor<4x2x2xf32>)
  return %s : tensor<4x2x2xf32>
}
