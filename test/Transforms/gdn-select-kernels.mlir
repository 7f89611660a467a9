// gdn-select-kernels: the widest V tile whose scan blocks N * HV * V / tile
// still fill the SMs (within an eighth: 116 of 132). One sequence of 32
// heads (32 / 64 / 128 blocks at tiles 128 / 64 / 32) takes tiles of 32
// with two staged chunks; four sequences (128 blocks at tile 128) take
// tiles of 128; an unknown count counts as many unless expected-seqs says
// otherwise. With 512 SMs even four sequences need tiles of 32 (512 blocks).
// Two sequences with V = 64 take tiles of 64 (128 blocks), one stage.
// RUN: gdn-opt %s --gdn-select-kernels | FileCheck %s
// RUN: gdn-opt %s --gdn-select-kernels="expected-seqs=1" | FileCheck %s --check-prefix=EXPECT
// RUN: gdn-opt %s --gdn-select-kernels="sm-count=512" | FileCheck %s --check-prefix=BIG
// RUN: not gdn-opt %s --gdn-select-kernels="sm-count=0" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: gdn-select-kernels: sm-count (0) must be positive and expected-seqs (0) not negative

!QK = tensor<?x16x128xbf16>
!V = tensor<?x32x128xbf16>
!G = tensor<?x32xf32>

// CHECK-LABEL: func.func @one_sequence
// CHECK: gdn_kernel.delta_rule {{.*}}scan_stages = 2 : i64{{.*}}value_tile = 32 : i64
// EXPECT-LABEL: func.func @one_sequence
// EXPECT: scan_stages = 2 : i64{{.*}}value_tile = 32 : i64
// BIG-LABEL: func.func @one_sequence
// BIG: scan_stages = 2 : i64{{.*}}value_tile = 32 : i64
func.func @one_sequence(%q: !QK, %k: !QK, %v: !V, %g: !G, %beta: !G,
                        %p: !gdn.packing<seqs = 1, tokens = ?>) -> !V {
  %o = gdn_kernel.delta_rule %q, %k, %v, %g, %beta, %p
      {key_heads = 16 : i64, value_heads = 32 : i64, head_dim_k = 128 : i64,
       head_dim_v = 128 : i64, scale = 0.088388347648318433 : f64,
       value_tile = 64 : i64, scan_stages = 1 : i64}
      : (!QK, !QK, !V, !G, !G, !gdn.packing<seqs = 1, tokens = ?>) -> !V
  return %o : !V
}

// CHECK-LABEL: func.func @four_sequences
// CHECK: gdn_kernel.delta_rule {{.*}}scan_stages = 2 : i64{{.*}}value_tile = 128 : i64
// BIG-LABEL: func.func @four_sequences
// BIG: scan_stages = 2 : i64{{.*}}value_tile = 32 : i64
func.func @four_sequences(%q: !QK, %k: !QK, %v: !V, %g: !G, %beta: !G,
                          %p: !gdn.packing<seqs = 4, tokens = ?>) -> !V {
  %o = gdn_kernel.delta_rule %q, %k, %v, %g, %beta, %p
      {key_heads = 16 : i64, value_heads = 32 : i64, head_dim_k = 128 : i64,
       head_dim_v = 128 : i64, scale = 0.088388347648318433 : f64,
       value_tile = 32 : i64, scan_stages = 2 : i64}
      : (!QK, !QK, !V, !G, !G, !gdn.packing<seqs = 4, tokens = ?>) -> !V
  return %o : !V
}

// CHECK-LABEL: func.func @unknown
// CHECK: gdn_kernel.delta_rule {{.*}}scan_stages = 2 : i64{{.*}}value_tile = 128 : i64
// EXPECT-LABEL: func.func @unknown
// EXPECT: scan_stages = 2 : i64{{.*}}value_tile = 32 : i64
func.func @unknown(%q: !QK, %k: !QK, %v: !V, %g: !G, %beta: !G,
                   %p: !gdn.packing<seqs = ?, tokens = ?>) -> !V {
  %o = gdn_kernel.delta_rule %q, %k, %v, %g, %beta, %p
      {key_heads = 16 : i64, value_heads = 32 : i64, head_dim_k = 128 : i64,
       head_dim_v = 128 : i64, scale = 0.088388347648318433 : f64,
       value_tile = 32 : i64, scan_stages = 2 : i64}
      : (!QK, !QK, !V, !G, !G, !gdn.packing<seqs = ?, tokens = ?>) -> !V
  return %o : !V
}

// CHECK-LABEL: func.func @two_sequences_v64
// CHECK: gdn_kernel.delta_rule {{.*}}scan_stages = 1 : i64{{.*}}value_tile = 64 : i64
func.func @two_sequences_v64(%q: tensor<?x64x64xbf16>, %k: tensor<?x64x64xbf16>,
                             %v: tensor<?x64x64xbf16>, %g: tensor<?x64xf32>, %beta: tensor<?x64xf32>,
                             %p: !gdn.packing<seqs = 2, tokens = ?>) -> tensor<?x64x64xbf16> {
  %o = gdn_kernel.delta_rule %q, %k, %v, %g, %beta, %p
      {key_heads = 64 : i64, value_heads = 64 : i64, head_dim_k = 64 : i64,
       head_dim_v = 64 : i64, scale = 0.125 : f64, value_tile = 32 : i64, scan_stages = 2 : i64}
      : (tensor<?x64x64xbf16>, tensor<?x64x64xbf16>, tensor<?x64x64xbf16>, tensor<?x64xf32>,
         tensor<?x64xf32>, !gdn.packing<seqs = 2, tokens = ?>) -> tensor<?x64x64xbf16>
  return %o : tensor<?x64x64xbf16>
}
