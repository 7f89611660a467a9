// A file of garbage text gives a located parse error and a non-zero exit, never a crash.
// RUN: not gdn-opt %s 2>&1 | FileCheck %s
// CHECK: {{.*}}malformed-garbage.mlir:[[@LINE+3]]:1: error: custom op 'this' is unknown
// CHECK-NOT: PLEASE submit a bug report
// CHECK-NOT: Stack dump
this is not MLIR }{ ### %%% !gdn.packing<<<
