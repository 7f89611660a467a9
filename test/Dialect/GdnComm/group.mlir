// Round trip of #gdn_comm.group: both kinds, any positive rank count.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s

// CHECK-LABEL: func.func @groups
// CHECK-SAME: cp1 = #gdn_comm.group<cp, 1>
// CHECK-SAME: cp8 = #gdn_comm.group<cp, 8>
// CHECK-SAME: sp4 = #gdn_comm.group<sp, 4>
func.func @groups() attributes {
    sp4 = #gdn_comm.group<sp, 4>, cp8 = #gdn_comm.group<cp, 8>,
    cp1 = #gdn_comm.group<cp, 1>} {
  return
}

// The group on an op keeps its kind and size.
// CHECK-LABEL: func.func @group_on_op
// CHECK: gdn_comm.rank {group = #gdn_comm.group<sp, 64>} : index
func.func @group_on_op() -> index {
  %r = gdn_comm.rank {group = #gdn_comm.group<sp, 64>} : index
  return %r : index
}
