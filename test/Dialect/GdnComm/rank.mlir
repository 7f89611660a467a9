// Round trip of gdn_comm.rank: the group attribute and the index result.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s

// CHECK-LABEL: func.func @cp_rank
// CHECK: %[[R:.*]] = gdn_comm.rank {group = #gdn_comm.group<cp, 4>} : index
// CHECK: return %[[R]] : index
func.func @cp_rank() -> index {
  %r = gdn_comm.rank {group = #gdn_comm.group<cp, 4>} : index
  return %r : index
}

// CHECK-LABEL: func.func @sp_rank
// CHECK: gdn_comm.rank {group = #gdn_comm.group<sp, 8>} : index
func.func @sp_rank() -> index {
  %r = gdn_comm.rank {group = #gdn_comm.group<sp, 8>} : index
  return %r : index
}

// A group of one rank is legal (the trivial group).
// CHECK-LABEL: func.func @single_rank_group
// CHECK: gdn_comm.rank {group = #gdn_comm.group<cp, 1>} : index
func.func @single_rank_group() -> index {
  %r = gdn_comm.rank {group = #gdn_comm.group<cp, 1>} : index
  return %r : index
}
