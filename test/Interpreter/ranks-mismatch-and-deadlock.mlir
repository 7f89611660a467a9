// One function per rank (--entry a,b): ranks that reach different collectives,
// or a rank that returns while another waits, are reported with the ranks and
// ops involved, and the run stops instead of hanging.
// RUN: not gdn-run %s --entry=gathers,scatters 2>&1 | FileCheck %s --check-prefix=MISMATCH
// RUN: not gdn-run %s --entry=gathers,returns 2>&1 | FileCheck %s --check-prefix=DEADLOCK
// RUN: not gdn-run %s --entry=gathers --ranks=3 2>&1 | FileCheck %s --check-prefix=GROUP

// MISMATCH: gdn-run: error: collective mismatch: rank 0 waits at 'gdn_comm.all_gather' at {{.*}}.mlir":15{{.*}} but rank 1 waits at 'gdn_comm.reduce_scatter' at {{.*}}.mlir":20
// DEADLOCK: gdn-run: error: deadlock: rank 1 returned while rank 0 waits at 'gdn_comm.all_gather' at {{.*}}.mlir":15{{.*}}(group #gdn_comm.group<sp, 2>)
// GROUP: the group has 2 ranks but the program runs on 3; run with --ranks 2

!x = tensor<2x2xf64>

func.func @gathers(%x: !x) -> tensor<4x2xf64> {
  %y = gdn_comm.all_gather %x {group = #gdn_comm.group<sp, 2>, dim = 0 : i64} : !x -> tensor<4x2xf64>
  return %y : tensor<4x2xf64>
}

func.func @scatters(%x: !x) -> tensor<4x2xf64> {
  %y = gdn_comm.reduce_scatter %x {group = #gdn_comm.group<sp, 2>, dim = 0 : i64} : !x -> tensor<1x2xf64>
  %z = gdn_comm.all_gather %y {group = #gdn_comm.group<sp, 2>, dim = 0 : i64} : tensor<1x2xf64> -> tensor<2x2xf64>
  %w = gdn_comm.all_gather %z {group = #gdn_comm.group<sp, 2>, dim = 0 : i64} : tensor<2x2xf64> -> tensor<4x2xf64>
  return %w : tensor<4x2xf64>
}

func.func @returns(%x: !x) -> tensor<4x2xf64> {
  %c = arith.constant dense<0.0> : tensor<4x2xf64>
  return %c : tensor<4x2xf64>
}
