// Round trip of #gdn_comm.chain: both chaining strategies.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s

// CHECK-LABEL: func.func @chains
// CHECK-SAME: a = #gdn_comm.chain<all_gather>
// CHECK-SAME: b = #gdn_comm.chain<scan>
func.func @chains() attributes {
    a = #gdn_comm.chain<all_gather>, b = #gdn_comm.chain<scan>} {
  return
}
