// gdn-select-kernels. By default (split-chains) every delta rule takes its
// scan's widest tile (wgmma 128, three chunks in flight; mma.sync 128, two)
// and split_target_blocks = sm-count with warmup_bits: the entry point cuts
// long chains at run time, whatever the sequence count (SPLIT, SPLIT-MMA,
// SPLIT-EXACT for warmup-bits=0).
//
// Without splitting (split-chains=false, the other prefixes): the mma.sync
// scan (wgmma=false) takes the widest V tile
// whose scan blocks N * HV * V / tile still fill the SMs (within an eighth:
// 116 of 132). One sequence of 32 heads (32 / 64 / 128 blocks at tiles 128
// / 64 / 32) takes tiles of 32 with two staged chunks; four sequences (128
// blocks at tile 128) take tiles of 128; an unknown count counts as many
// unless expected-seqs says otherwise. With 512 SMs even four sequences
// need tiles of 32 (512 blocks). Two sequences with V = 64 take tiles of 64
// (128 blocks), one stage. The wgmma scan (the default, sm_90a): tiles of
// 128 when N * HV blocks fill the SMs, else 64, three chunks in flight. An
// unknown count also gets the run-time fallback to the narrow tile (64 for
// wgmma, 32 for mma.sync) below 116 scan blocks; a known one does not.
// Prologues: blocks of 512 threads when they divide the 16-byte channel
// lanes (8192 bf16 channels: 1024 lanes), else 256 (6144: 768 lanes), else
// the op's own (32 channels: 4 lanes).
// RUN: gdn-opt %s --gdn-select-kernels | FileCheck %s --check-prefix=SPLIT
// RUN: gdn-opt %s --gdn-select-kernels="wgmma=false sm-count=100" | FileCheck %s --check-prefix=SPLIT-MMA
// RUN: gdn-opt %s --gdn-select-kernels="warmup-bits=0" | FileCheck %s --check-prefix=SPLIT-EXACT
// RUN: gdn-opt %s --gdn-select-kernels="split-chains=false wgmma=false" | FileCheck %s
// RUN: gdn-opt %s --gdn-select-kernels="split-chains=false expected-seqs=1 wgmma=false" | FileCheck %s --check-prefix=EXPECT
// RUN: gdn-opt %s --gdn-select-kernels="split-chains=false sm-count=512 wgmma=false" | FileCheck %s --check-prefix=BIG
// RUN: gdn-opt %s --gdn-select-kernels="split-chains=false" | FileCheck %s --check-prefix=WGMMA
// RUN: gdn-opt %s --gdn-select-kernels="split-chains=false sm-count=512" | FileCheck %s --check-prefix=WGMMA-BIG
// RUN: not gdn-opt %s --gdn-select-kernels="sm-count=0" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not gdn-opt %s --gdn-select-kernels="warmup-bits=127" 2>&1 | FileCheck %s --check-prefix=BAD-BITS
// The mma.sync tiles within a target's shared memory: 99 KiB (sm_86 /
// sm_89) leaves V tile 32 with one stage (82.25 KiB at K = 128), 163 KiB
// (A100) V tile 64 with one stage (106.25 KiB); 64 KiB none.
// RUN: gdn-opt %s --gdn-select-kernels="wgmma=false shared-bytes=101376" | FileCheck %s --check-prefix=SHARED99
// RUN: gdn-opt %s --gdn-select-kernels="wgmma=false shared-bytes=166912" | FileCheck %s --check-prefix=SHARED163
// RUN: not gdn-opt %s --gdn-select-kernels="wgmma=false shared-bytes=65536" 2>&1 | FileCheck %s --check-prefix=SHARED64
// SHARED99-LABEL: func.func @one_sequence
// SHARED99: scan_stages = 1 : i64{{.*}}value_tile = 32 : i64
// SHARED99-LABEL: func.func @two_sequences_v64
// SHARED99: scan_stages = 1 : i64{{.*}}value_tile = 64 : i64
// SHARED163-LABEL: func.func @one_sequence
// SHARED163: scan_stages = 1 : i64{{.*}}value_tile = 64 : i64
// SHARED64: error: gdn-select-kernels: no mma.sync scan tile fits in 65536 bytes of shared memory (shared-bytes) at K = 128; the smallest (V tile 32, one stage) needs 84224
// BAD: gdn-select-kernels: sm-count (0) must be positive, expected-seqs (0) not negative and warmup-bits (24) in [0, 126], shared-bytes (232448) positive
// BAD-BITS: warmup-bits (127) in [0, 126]
// RUN: not gdn-opt %s --gdn-select-kernels="shared-bytes=0" 2>&1 | FileCheck %s --check-prefix=BAD-SHARED
// BAD-SHARED: shared-bytes (0) positive
// The scores option forces one choice; one the tile cannot take is the
// op verifier's error (the mma.sync scan computes no P itself).
// RUN: gdn-opt %s --gdn-select-kernels="scores=scan" | FileCheck %s --check-prefix=FORCE-SCAN
// RUN: gdn-opt %s --gdn-select-kernels="scores=prepare" | FileCheck %s --check-prefix=FORCE-PREPARE
// RUN: not gdn-opt %s --gdn-select-kernels="scores=scan wgmma=false" 2>&1 | FileCheck %s --check-prefix=FORCE-MMA
// RUN: not gdn-opt %s --gdn-select-kernels="scores=qk" 2>&1 | FileCheck %s --check-prefix=BAD-SCORES
// The producer forced where an unknown sequence count gets a narrow
// run-time tile (split-chains=false), which cannot share its workspace.
// RUN: not gdn-opt %s --gdn-select-kernels="scores=producer split-chains=false" 2>&1 | FileCheck %s --check-prefix=FORCE-NARROW
// FORCE-SCAN-LABEL: func.func @mha_one_sequence
// FORCE-SCAN: scan = "wgmma", scan_stages = 3 : i64, scores = "scan", split_target_blocks = 132 : i64, value_heads = 4 : i64, value_tile = 128 : i64
// FORCE-PREPARE-LABEL: func.func @mha_one_sequence
// FORCE-PREPARE: scan = "wgmma", scan_stages = 3 : i64, split_target_blocks = 132 : i64, value_heads = 4 : i64, value_tile = 128 : i64
// FORCE-MMA: error: 'gdn_kernel.delta_rule' op scores = "scan" needs scan = "wgmma"
// BAD-SCORES: gdn-select-kernels: scores must be auto, prepare, scan or producer, found 'qk'
// FORCE-NARROW: error: 'gdn_kernel.delta_rule' op scores = "producer" takes no narrow_value_tile (the narrow run-time fallback is a two-kernel config that would share the producer's workspace and P's source); use scores = "prepare" with it

// The widest tile and the split attributes on every delta rule, the old
// narrow fallback removed (@unknown). Two value heads per key head at V
// tile 128: P from the producer warpgroup of the scan's block (scores =
// "producer").
// SPLIT-LABEL: func.func @one_sequence
// SPLIT: scan = "wgmma", scan_stages = 3 : i64, scores = "producer", split_target_blocks = 132 : i64, value_heads = {{[0-9]+}} : i64, value_tile = 128 : i64, warmup_bits = 24 : i64
// SPLIT-LABEL: func.func @four_sequences
// SPLIT: scan = "wgmma", scan_stages = 3 : i64, scores = "producer", split_target_blocks = 132 : i64, value_heads = {{[0-9]+}} : i64, value_tile = 128 : i64, warmup_bits = 24 : i64
// SPLIT-LABEL: func.func @unknown
// SPLIT-NOT: narrow_
// SPLIT: scan = "wgmma", scan_stages = 3 : i64, scores = "producer", split_target_blocks = 132 : i64, value_heads = {{[0-9]+}} : i64, value_tile = 128 : i64, warmup_bits = 24 : i64
// At V tile 64 the op keeps the prepare kernel's P (no scores attribute
// between scan_stages and split_target_blocks).
// SPLIT-LABEL: func.func @two_sequences_v64
// SPLIT: scan = "wgmma", scan_stages = 3 : i64, split_target_blocks = 132 : i64, value_heads = {{[0-9]+}} : i64, value_tile = 64 : i64, warmup_bits = 24 : i64
// SPLIT-MMA-LABEL: func.func @one_sequence
// SPLIT-MMA: gdn_kernel.delta_rule
// SPLIT-MMA-NOT: wgmma
// SPLIT-MMA-SAME: scan_stages = 2 : i64, split_target_blocks = 100 : i64, value_heads = {{[0-9]+}} : i64, value_tile = 128 : i64, warmup_bits = 24 : i64
// SPLIT-EXACT-LABEL: func.func @one_sequence
// SPLIT-EXACT: split_target_blocks = 132 : i64, value_heads = {{[0-9]+}} : i64, value_tile = 128 : i64, warmup_bits = 0 : i64

!QK = tensor<?x16x128xbf16>
!V = tensor<?x32x128xbf16>
!G = tensor<?x32xf32>

// CHECK-LABEL: func.func @one_sequence
// CHECK: gdn_kernel.delta_rule
// CHECK-NOT: scan = "wgmma"
// CHECK-SAME: scan_stages = 2 : i64{{.*}}value_tile = 32 : i64
// WGMMA-LABEL: func.func @one_sequence
// WGMMA: gdn_kernel.delta_rule {{.*}}scan = "wgmma", scan_stages = 3 : i64{{.*}}value_tile = 64 : i64
// WGMMA-BIG-LABEL: func.func @one_sequence
// WGMMA-BIG: scan = "wgmma", scan_stages = 3 : i64{{.*}}value_tile = 64 : i64
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
// CHECK: gdn_kernel.delta_rule
// CHECK-NOT: narrow_value_tile
// CHECK-SAME: scan_stages = 2 : i64{{.*}}value_tile = 128 : i64
// WGMMA-LABEL: func.func @four_sequences
// WGMMA: scan = "wgmma", scan_stages = 3 : i64{{.*}}value_tile = 128 : i64
// WGMMA-BIG-LABEL: func.func @four_sequences
// WGMMA-BIG: scan = "wgmma", scan_stages = 3 : i64{{.*}}value_tile = 64 : i64
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
// CHECK: gdn_kernel.delta_rule {{.*}}narrow_below_blocks = 116 : i64, narrow_value_tile = 32 : i64{{.*}}scan_stages = 2 : i64{{.*}}value_tile = 128 : i64
// WGMMA-LABEL: func.func @unknown
// WGMMA: narrow_below_blocks = 116 : i64, narrow_value_tile = 64 : i64{{.*}}scan = "wgmma", scan_stages = 3 : i64{{.*}}value_tile = 128 : i64
// EXPECT-LABEL: func.func @unknown
// EXPECT: gdn_kernel.delta_rule
// EXPECT-NOT: narrow_value_tile
// EXPECT-SAME: scan_stages = 2 : i64{{.*}}value_tile = 32 : i64
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
// WGMMA-LABEL: func.func @two_sequences_v64
// WGMMA: scan = "wgmma", scan_stages = 3 : i64{{.*}}value_tile = 64 : i64
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

// As many key heads as value heads: P from the producer warpgroup at V
// tile 128 (SPLIT), as for two, not at V tile 64 (WGMMA with one known
// sequence), nor when a narrow V tile 64 shares the op (WGMMA, unknown
// count), nor on the mma.sync scan (SPLIT-MMA). The attribute lists are
// matched whole, so a stray scores shows.
// SPLIT-LABEL: func.func @mha_one_sequence
// SPLIT: scan = "wgmma", scan_stages = 3 : i64, scores = "producer", split_target_blocks = 132 : i64, value_heads = 4 : i64, value_tile = 128 : i64
// SPLIT-MMA-LABEL: func.func @mha_one_sequence
// SPLIT-MMA: scale = {{.*}} : f64, scan_stages = 2 : i64, split_target_blocks = 100 : i64, value_heads = 4 : i64
// WGMMA-LABEL: func.func @mha_one_sequence
// WGMMA: scan = "wgmma", scan_stages = 3 : i64, value_heads = 4 : i64, value_tile = 64 : i64}
func.func @mha_one_sequence(%q: tensor<?x4x128xbf16>, %v: tensor<?x4x128xbf16>, %g: tensor<?x4xf32>,
                            %p: !gdn.packing<seqs = 1, tokens = ?>) -> tensor<?x4x128xbf16> {
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 4 : i64, value_heads = 4 : i64, head_dim_k = 128 : i64,
       head_dim_v = 128 : i64, scale = 0.088388347648318433 : f64,
       value_tile = 32 : i64, scan_stages = 2 : i64}
      : (tensor<?x4x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4xf32>,
         tensor<?x4xf32>, !gdn.packing<seqs = 1, tokens = ?>) -> tensor<?x4x128xbf16>
  return %o : tensor<?x4x128xbf16>
}

// SPLIT-LABEL: func.func @mha_unknown
// SPLIT: scan = "wgmma", scan_stages = 3 : i64, scores = "producer", split_target_blocks = 132 : i64
// WGMMA-LABEL: func.func @mha_unknown
// WGMMA: narrow_value_tile = 64 : i64, scale = {{.*}} : f64, scan = "wgmma", scan_stages = 3 : i64, value_heads = 4 : i64, value_tile = 128 : i64}
func.func @mha_unknown(%q: tensor<?x4x128xbf16>, %v: tensor<?x4x128xbf16>, %g: tensor<?x4xf32>,
                       %p: !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16> {
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 4 : i64, value_heads = 4 : i64, head_dim_k = 128 : i64,
       head_dim_v = 128 : i64, scale = 0.088388347648318433 : f64,
       value_tile = 32 : i64, scan_stages = 2 : i64}
      : (tensor<?x4x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4xf32>,
         tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16>
  return %o : tensor<?x4x128xbf16>
}

// Three and four value heads per key head: the producer too.
// SPLIT-LABEL: func.func @group_of_three
// SPLIT: scan = "wgmma", scan_stages = 3 : i64, scores = "producer", split_target_blocks = 132 : i64, value_heads = 6 : i64, value_tile = 128 : i64
// SPLIT: scan = "wgmma", scan_stages = 3 : i64, scores = "producer", split_target_blocks = 132 : i64, value_heads = 8 : i64, value_tile = 128 : i64
func.func @group_of_three(%q: tensor<?x2x128xbf16>, %v: tensor<?x6x128xbf16>, %g: tensor<?x6xf32>,
                          %v8: tensor<?x8x128xbf16>, %g8: tensor<?x8xf32>,
                          %p: !gdn.packing<seqs = ?, tokens = ?>)
    -> (tensor<?x6x128xbf16>, tensor<?x8x128xbf16>) {
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 6 : i64, head_dim_k = 128 : i64,
       head_dim_v = 128 : i64, scale = 0.088388347648318433 : f64,
       value_tile = 32 : i64, scan_stages = 2 : i64}
      : (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x6x128xbf16>, tensor<?x6xf32>,
         tensor<?x6xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x6x128xbf16>
  %o8 = gdn_kernel.delta_rule %q, %q, %v8, %g8, %g8, %p
      {key_heads = 2 : i64, value_heads = 8 : i64, head_dim_k = 128 : i64,
       head_dim_v = 128 : i64, scale = 0.088388347648318433 : f64,
       value_tile = 32 : i64, scan_stages = 2 : i64}
      : (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x8x128xbf16>, tensor<?x8xf32>,
         tensor<?x8xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x8x128xbf16>
  return %o, %o8 : tensor<?x6x128xbf16>, tensor<?x8x128xbf16>
}

// The backward's scans split by the same rule: the op gets the SM count
// and the warm-up bits (SPLIT, SPLIT-EXACT), and nothing without splitting
// (the unprefixed checks: attributes already there are removed). Its
// forward recomputation takes the wgmma scan where the target has it
// (SPLIT), else the default mma.sync one (SPLIT-MMA and the unprefixed
// checks: no `scan`).
// SPLIT-LABEL: func.func @backward
// SPLIT: gdn_kernel.delta_rule_grad {{.*}}{head_dim_k = 64 : i64, head_dim_v = 64 : i64, key_heads = 1 : i64, scale = 1.250000e-01 : f64, scan = "wgmma", split_target_blocks = 132 : i64, value_heads = 2 : i64, warmup_bits = 24 : i64}
// SPLIT-MMA-LABEL: func.func @backward
// SPLIT-MMA: gdn_kernel.delta_rule_grad {{.*}}{head_dim_k = 64 : i64, head_dim_v = 64 : i64, key_heads = 1 : i64, scale = 1.250000e-01 : f64, split_target_blocks = 100 : i64, value_heads = 2 : i64, warmup_bits = 24 : i64}
// SPLIT-EXACT-LABEL: func.func @backward
// SPLIT-EXACT: gdn_kernel.delta_rule_grad {{.*}}split_target_blocks = 132 : i64, value_heads = 2 : i64, warmup_bits = 0 : i64}
// CHECK-LABEL: func.func @backward
// CHECK: gdn_kernel.delta_rule_grad {{.*}}{head_dim_k = 64 : i64, head_dim_v = 64 : i64, key_heads = 1 : i64, scale = 1.250000e-01 : f64, value_heads = 2 : i64}
func.func @backward(%do: tensor<?x2x64xbf16>, %q: tensor<?x1x64xbf16>, %v: tensor<?x2x64xbf16>,
                    %g: tensor<?x2xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>)
    -> tensor<?x1x64xbf16> {
  %dq, %dk, %dv, %dg, %db = gdn_kernel.delta_rule_grad %do, %q, %q, %v, %g, %g, %p
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 64 : i64,
       head_dim_v = 64 : i64, scale = 0.125 : f64, split_target_blocks = 7 : i64}
      : (tensor<?x2x64xbf16>, tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>,
         tensor<?x2xf32>, tensor<?x2xf32>, !gdn.packing<seqs = ?, tokens = ?>)
      -> (tensor<?x1x64xbf16>, tensor<?x1x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2xf32>,
          tensor<?x2xf32>)
  return %dq : tensor<?x1x64xbf16>
}

// CHECK-LABEL: func.func @prologue_lanes
// CHECK: gdn_kernel.prologue {{.*}}threads = 512 : i64
// CHECK: gdn_kernel.prologue {{.*}}threads = 256 : i64
// CHECK: gdn_kernel.prologue {{.*}}threads = 128 : i64
func.func @prologue_lanes(%x: tensor<?x8192xbf16>, %w: tensor<8192x4xbf16>,
    %a: tensor<?x32xbf16>, %b: tensor<?x32xbf16>, %alog: tensor<32xf32>,
    %dt: tensor<32xf32>, %x2: tensor<?x6144xbf16>, %w2: tensor<6144x4xbf16>,
    %a2: tensor<?x16xbf16>, %b2: tensor<?x16xbf16>, %alog2: tensor<16xf32>,
    %dt2: tensor<16xf32>, %x3: tensor<?x32xbf16>, %w3: tensor<32x4xbf16>,
    %a3: tensor<?x2xbf16>, %b3: tensor<?x2xbf16>, %alog3: tensor<2xf32>,
    %dt3: tensor<2xf32>, %p: !gdn.packing<seqs = 1, tokens = ?>)
    -> (tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x1x8xbf16>) {
  %q, %k, %v, %g, %beta = gdn_kernel.prologue %x, %w, %a, %b, %alog, %dt, %p
      {key_heads = 16 : i64, value_heads = 32 : i64, head_dim_k = 128 : i64,
       head_dim_v = 128 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>,
       l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false,
       threads = 256 : i64, tokens_per_block = 32 : i64, rows_in_flight = 8 : i64}
      : (tensor<?x8192xbf16>, tensor<8192x4xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>,
         tensor<32xf32>, tensor<32xf32>, !gdn.packing<seqs = 1, tokens = ?>)
      -> (tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x128xbf16>,
          tensor<?x32xf32>, tensor<?x32xf32>)
  %q2, %k2, %v2, %g2, %beta2 = gdn_kernel.prologue %x2, %w2, %a2, %b2, %alog2, %dt2, %p
      {key_heads = 16 : i64, value_heads = 16 : i64, head_dim_k = 128 : i64,
       head_dim_v = 128 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>,
       l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false,
       threads = 512 : i64, tokens_per_block = 32 : i64, rows_in_flight = 8 : i64}
      : (tensor<?x6144xbf16>, tensor<6144x4xbf16>, tensor<?x16xbf16>, tensor<?x16xbf16>,
         tensor<16xf32>, tensor<16xf32>, !gdn.packing<seqs = 1, tokens = ?>)
      -> (tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x16x128xbf16>,
          tensor<?x16xf32>, tensor<?x16xf32>)
  %q3, %k3, %v3, %g3, %beta3 = gdn_kernel.prologue %x3, %w3, %a3, %b3, %alog3, %dt3, %p
      {key_heads = 1 : i64, value_heads = 2 : i64, head_dim_k = 8 : i64,
       head_dim_v = 8 : i64, conv_width = 4 : i64, activation = #gdn.act<silu>,
       l2norm_eps = 1.0e-06 : f64, allow_neg_eigval = false,
       threads = 128 : i64, tokens_per_block = 32 : i64, rows_in_flight = 8 : i64}
      : (tensor<?x32xbf16>, tensor<32x4xbf16>, tensor<?x2xbf16>, tensor<?x2xbf16>,
         tensor<2xf32>, tensor<2xf32>, !gdn.packing<seqs = 1, tokens = ?>)
      -> (tensor<?x1x8xbf16>, tensor<?x1x8xbf16>, tensor<?x2x8xbf16>,
          tensor<?x2xf32>, tensor<?x2xf32>)
  return %q, %q2, %q3 : tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x1x8xbf16>
}
