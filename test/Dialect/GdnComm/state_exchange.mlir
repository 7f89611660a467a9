// Round trip of gdn_comm.state_exchange: both chain strategies (all_gather is
// the default and is elided), f32 and f64, static and dynamic state shapes.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s

// CHECK-LABEL: func.func @chain_all_gather
// CHECK: gdn_comm.state_exchange %{{.*}}, %{{.*}} {group = #gdn_comm.group<cp, 4>}
// CHECK-SAME: : (tensor<32x128x128xf32>, tensor<32x128x128xf32>) -> tensor<32x128x128xf32>
func.func @chain_all_gather(%m: tensor<32x128x128xf32>, %s: tensor<32x128x128xf32>)
    -> tensor<32x128x128xf32> {
  %h0 = gdn_comm.state_exchange %m, %s {group = #gdn_comm.group<cp, 4>, chain = #gdn_comm.chain<all_gather>}
      : (tensor<32x128x128xf32>, tensor<32x128x128xf32>) -> tensor<32x128x128xf32>
  return %h0 : tensor<32x128x128xf32>
}

// Omitting chain means all_gather.
// CHECK-LABEL: func.func @default_chain
// CHECK: gdn_comm.state_exchange %{{.*}}, %{{.*}} {group = #gdn_comm.group<cp, 2>}
// CHECK-SAME: : (tensor<4x16x16xf32>, tensor<4x16x32xf32>) -> tensor<4x16x32xf32>
func.func @default_chain(%m: tensor<4x16x16xf32>, %s: tensor<4x16x32xf32>) -> tensor<4x16x32xf32> {
  %h0 = gdn_comm.state_exchange %m, %s {group = #gdn_comm.group<cp, 2>}
      : (tensor<4x16x16xf32>, tensor<4x16x32xf32>) -> tensor<4x16x32xf32>
  return %h0 : tensor<4x16x32xf32>
}

// CHECK-LABEL: func.func @chain_scan
// CHECK: gdn_comm.state_exchange %{{.*}}, %{{.*}} {chain = #gdn_comm.chain<scan>, group = #gdn_comm.group<cp, 8>}
// CHECK-SAME: : (tensor<32x128x128xf32>, tensor<32x128x64xf32>) -> tensor<32x128x64xf32>
func.func @chain_scan(%m: tensor<32x128x128xf32>, %s: tensor<32x128x64xf32>) -> tensor<32x128x64xf32> {
  %h0 = gdn_comm.state_exchange %m, %s {group = #gdn_comm.group<cp, 8>, chain = #gdn_comm.chain<scan>}
      : (tensor<32x128x128xf32>, tensor<32x128x64xf32>) -> tensor<32x128x64xf32>
  return %h0 : tensor<32x128x64xf32>
}

// f64 reference programs chain in f64; dynamic head counts and dims agree
// with anything.
// CHECK-LABEL: func.func @f64_dynamic
// CHECK: gdn_comm.state_exchange %{{.*}}, %{{.*}} {group = #gdn_comm.group<cp, 4>}
// CHECK-SAME: : (tensor<?x?x8xf64>, tensor<4x8x?xf64>) -> tensor<4x8x?xf64>
func.func @f64_dynamic(%m: tensor<?x?x8xf64>, %s: tensor<4x8x?xf64>) -> tensor<4x8x?xf64> {
  %h0 = gdn_comm.state_exchange %m, %s {group = #gdn_comm.group<cp, 4>}
      : (tensor<?x?x8xf64>, tensor<4x8x?xf64>) -> tensor<4x8x?xf64>
  return %h0 : tensor<4x8x?xf64>
}
