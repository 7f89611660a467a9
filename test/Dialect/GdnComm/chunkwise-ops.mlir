// Round trip of the per-rank ops of chunkwise context parallelism, static and
// dynamic sizes, with and without initial states.
// RUN: gdn-opt %s | gdn-opt | FileCheck %s

// CHECK-LABEL: func.func @rank_view
// CHECK: gdn_comm.local_packing %{{.*}} {group = #gdn_comm.group<cp, 4>} : !gdn.packing<seqs = 8, tokens = 8192> -> !gdn.packing<seqs = 8, tokens = 2048>
// CHECK: gdn_comm.continue_conv_state %{{.*}}, %{{.*}} initial_state(%{{.*}}) {group = #gdn_comm.group<cp, 4>}
// CHECK: gdn_comm.continue_conv_state %{{.*}}, %{{.*}} {group = #gdn_comm.group<cp, 4>}
// CHECK: gdn_comm.state_summary
// CHECK-SAME: -> (tensor<32x128x128xf32>, tensor<32x128x128xf32>)
// CHECK: gdn_comm.continue_state
// CHECK: gdn_comm.gather_sequence_states
func.func @rank_view(%p: !gdn.packing<seqs = 8, tokens = 8192>, %halo: tensor<3x8192xbf16>,
                     %h0: tensor<8x8192x3xbf16>,
                     %q: tensor<2048x16x128xbf16, #gdn.seq<contiguous, ranks = 4>>,
                     %v: tensor<2048x32x128xbf16, #gdn.seq<contiguous, ranks = 4>>,
                     %g: tensor<2048x32xf32, #gdn.seq<contiguous, ranks = 4>>,
                     %s0: tensor<8x32x128x128xf32>)
    -> (!gdn.packing<seqs = 8, tokens = 2048>, tensor<8x8192x3xbf16>, tensor<8x8192x3xbf16>,
        tensor<8x32x128x128xf32>, tensor<8x32x128x128xf32>) {
  %lp = gdn_comm.local_packing %p {group = #gdn_comm.group<cp, 4>}
      : !gdn.packing<seqs = 8, tokens = 8192> -> !gdn.packing<seqs = 8, tokens = 2048>
  %c = gdn_comm.continue_conv_state %halo, %p initial_state(%h0) {group = #gdn_comm.group<cp, 4>}
      : (tensor<3x8192xbf16>, !gdn.packing<seqs = 8, tokens = 8192>, tensor<8x8192x3xbf16>) -> tensor<8x8192x3xbf16>
  %c0 = gdn_comm.continue_conv_state %halo, %p {group = #gdn_comm.group<cp, 4>}
      : (tensor<3x8192xbf16>, !gdn.packing<seqs = 8, tokens = 8192>) -> tensor<8x8192x3xbf16>
  %m, %s = gdn_comm.state_summary %q, %q, %v, %g, %g, %p initial_state(%s0) {group = #gdn_comm.group<cp, 4>}
      : (tensor<2048x16x128xbf16, #gdn.seq<contiguous, ranks = 4>>, tensor<2048x16x128xbf16, #gdn.seq<contiguous, ranks = 4>>,
         tensor<2048x32x128xbf16, #gdn.seq<contiguous, ranks = 4>>, tensor<2048x32xf32, #gdn.seq<contiguous, ranks = 4>>,
         tensor<2048x32xf32, #gdn.seq<contiguous, ranks = 4>>, !gdn.packing<seqs = 8, tokens = 8192>, tensor<8x32x128x128xf32>)
      -> (tensor<32x128x128xf32>, tensor<32x128x128xf32>)
  %start = gdn_comm.continue_state %s, %p initial_state(%s0) {group = #gdn_comm.group<cp, 4>}
      : (tensor<32x128x128xf32>, !gdn.packing<seqs = 8, tokens = 8192>, tensor<8x32x128x128xf32>) -> tensor<8x32x128x128xf32>
  %final = gdn_comm.gather_sequence_states %start, %p {group = #gdn_comm.group<cp, 4>}
      : (tensor<8x32x128x128xf32>, !gdn.packing<seqs = 8, tokens = 8192>) -> tensor<8x32x128x128xf32>
  return %lp, %c, %c0, %start, %final : !gdn.packing<seqs = 8, tokens = 2048>, tensor<8x8192x3xbf16>,
      tensor<8x8192x3xbf16>, tensor<8x32x128x128xf32>, tensor<8x32x128x128xf32>
}

// CHECK-LABEL: func.func @dynamic
// CHECK: gdn_comm.local_packing %{{.*}} : !gdn.packing<seqs = ?, tokens = ?, padded> -> !gdn.packing<seqs = ?, tokens = ?, padded>
func.func @dynamic(%p: !gdn.packing<seqs = ?, tokens = ?, padded>) -> !gdn.packing<seqs = ?, tokens = ?, padded> {
  %lp = gdn_comm.local_packing %p {group = #gdn_comm.group<cp, 2>}
      : !gdn.packing<seqs = ?, tokens = ?, padded> -> !gdn.packing<seqs = ?, tokens = ?, padded>
  return %lp : !gdn.packing<seqs = ?, tokens = ?, padded>
}

// The state summary's packing and the initial states of its two delta-rule
// runs (gdn-lower-state-summaries).
// CHECK-LABEL: func.func @summary_runs
// CHECK: gdn_comm.summary_packing %{{.*}} {group = #gdn_comm.group<cp, 4>} : !gdn.packing<seqs = 8, tokens = 8192> -> !gdn.packing<seqs = 2, tokens = 2048, padded, max_len = 2048>
// CHECK: gdn_comm.summary_initial_states %{{.*}} initial_state(%{{.*}}) {group = #gdn_comm.group<cp, 4>}
// CHECK-SAME: -> (tensor<2x32x128x64xf32>, tensor<2x32x128x128xf32>)
// CHECK: gdn_comm.summary_initial_states %{{.*}} {group = #gdn_comm.group<cp, 4>} : (!gdn.packing<seqs = 8, tokens = 8192>) -> (tensor<2x32x128x64xf32>, tensor<2x32x128x128xf32>)
func.func @summary_runs(%p: !gdn.packing<seqs = 8, tokens = 8192>, %s0: tensor<8x32x128x64xf32>)
    -> (!gdn.packing<seqs = 2, tokens = 2048, padded, max_len = 2048>, tensor<2x32x128x64xf32>,
        tensor<2x32x128x128xf32>, tensor<2x32x128x64xf32>, tensor<2x32x128x128xf32>) {
  %sp = gdn_comm.summary_packing %p {group = #gdn_comm.group<cp, 4>}
      : !gdn.packing<seqs = 8, tokens = 8192> -> !gdn.packing<seqs = 2, tokens = 2048, padded, max_len = 2048>
  %hs, %hm = gdn_comm.summary_initial_states %p initial_state(%s0) {group = #gdn_comm.group<cp, 4>}
      : (!gdn.packing<seqs = 8, tokens = 8192>, tensor<8x32x128x64xf32>)
      -> (tensor<2x32x128x64xf32>, tensor<2x32x128x128xf32>)
  %zs, %zm = gdn_comm.summary_initial_states %p {group = #gdn_comm.group<cp, 4>}
      : (!gdn.packing<seqs = 8, tokens = 8192>) -> (tensor<2x32x128x64xf32>, tensor<2x32x128x128xf32>)
  return %sp, %hs, %hm, %zs, %zm : !gdn.packing<seqs = 2, tokens = 2048, padded, max_len = 2048>,
      tensor<2x32x128x64xf32>, tensor<2x32x128x128xf32>, tensor<2x32x128x64xf32>, tensor<2x32x128x128xf32>
}
