// gdn_kernel.delta_rule: round trip with and without states and with the
// wgmma scan, then every verifier error (dims, tiles and scans the kernels
// do not take, dtypes, shapes, scale).
// RUN: gdn-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @states
// CHECK: %{{.*}}, %{{.*}} = gdn_kernel.delta_rule %{{.*}} initial_state(%{{.*}}) {head_dim_k = 64 : i64, head_dim_v = 64 : i64, key_heads = 2 : i64, scale = 1.250000e-01 : f64, scan_stages = 2 : i64, value_heads = 4 : i64, value_tile = 32 : i64}
func.func @states(%q: tensor<?x2x64xbf16>, %v: tensor<?x4x64xbf16>, %g: tensor<?x4xf32>,
                  %p: !gdn.packing<seqs = 3, tokens = ?, padded>, %s0: tensor<3x4x64x64xf32>)
    -> (tensor<?x4x64xbf16>, tensor<3x4x64x64xf32>) {
  %o, %s = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p initial_state(%s0)
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64,
       scale = 0.125 : f64, value_tile = 32 : i64, scan_stages = 2 : i64}
      : (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4xf32>, tensor<?x4xf32>,
         !gdn.packing<seqs = 3, tokens = ?, padded>, tensor<3x4x64x64xf32>)
      -> (tensor<?x4x64xbf16>, tensor<3x4x64x64xf32>)
  return %o, %s : tensor<?x4x64xbf16>, tensor<3x4x64x64xf32>
}

// -----

// CHECK-LABEL: func.func @wgmma
// CHECK: gdn_kernel.delta_rule {{.*}}scan = "wgmma", scan_stages = 3 : i64{{.*}}value_tile = 128 : i64
func.func @wgmma(%q: tensor<?x2x128xbf16>, %v: tensor<?x4x128xbf16>, %g: tensor<?x4xf32>,
                 %p: !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16> {
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64,
       scale = 0.125 : f64, value_tile = 128 : i64, scan_stages = 3 : i64, scan = "wgmma"}
      : (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4xf32>, tensor<?x4xf32>,
         !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16>
  return %o : tensor<?x4x128xbf16>
}

// -----

// CHECK-LABEL: func.func @narrow
// CHECK: gdn_kernel.delta_rule {{.*}}narrow_below_blocks = 116 : i64, narrow_value_tile = 64 : i64
func.func @narrow(%q: tensor<?x2x128xbf16>, %v: tensor<?x4x128xbf16>, %g: tensor<?x4xf32>,
                  %p: !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16> {
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64,
       scale = 0.125 : f64, value_tile = 128 : i64, scan_stages = 3 : i64, scan = "wgmma",
       narrow_value_tile = 64 : i64, narrow_below_blocks = 116 : i64}
      : (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4xf32>, tensor<?x4xf32>,
         !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16>
  return %o : tensor<?x4x128xbf16>
}

// -----

// Split chains: split_target_blocks with an optional warmup_bits.
// CHECK-LABEL: func.func @split
// CHECK: gdn_kernel.delta_rule {{.*}}split_target_blocks = 132 : i64{{.*}}warmup_bits = 0 : i64
func.func @split(%q: tensor<?x2x128xbf16>, %v: tensor<?x4x128xbf16>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16> {
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64, scale = 0.125 : f64, value_tile = 128 : i64, scan_stages = 3 : i64, scan = "wgmma", split_target_blocks = 132 : i64, warmup_bits = 0 : i64}
      : (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16>
  return %o : tensor<?x4x128xbf16>
}

// -----

func.func @split_and_narrow(%q: tensor<?x2x128xbf16>, %v: tensor<?x4x128xbf16>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16> {
  // expected-error @+1 {{split_target_blocks and narrow_value_tile are alternatives (split chains run the wide tile)}}
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64, scale = 0.125 : f64, value_tile = 128 : i64, scan_stages = 3 : i64, scan = "wgmma", split_target_blocks = 132 : i64, narrow_value_tile = 64 : i64, narrow_below_blocks = 116 : i64}
      : (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16>
  return %o : tensor<?x4x128xbf16>
}

// -----

func.func @warmup_alone(%q: tensor<?x2x128xbf16>, %v: tensor<?x4x128xbf16>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16> {
  // expected-error @+1 {{warmup_bits needs split_target_blocks (only split chains warm up)}}
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64, scale = 0.125 : f64, value_tile = 128 : i64, scan_stages = 3 : i64, scan = "wgmma", warmup_bits = 24 : i64}
      : (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16>
  return %o : tensor<?x4x128xbf16>
}

// -----

func.func @warmup_too_many_bits(%q: tensor<?x2x128xbf16>, %v: tensor<?x4x128xbf16>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16> {
  // expected-error @+1 {{warmup_bits (127) must be at most 126 (a bound below fp32's range); 0 makes every segment exact}}
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64, scale = 0.125 : f64, value_tile = 128 : i64, scan_stages = 3 : i64, scan = "wgmma", split_target_blocks = 132 : i64, warmup_bits = 127 : i64}
      : (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16>
  return %o : tensor<?x4x128xbf16>
}

// -----

func.func @narrow_alone(%q: tensor<?x2x128xbf16>, %v: tensor<?x4x128xbf16>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{narrow_value_tile and narrow_below_blocks go together (the run-time tile choice needs both)}}
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64, scale = 0.125 : f64, value_tile = 128 : i64, scan_stages = 3 : i64, scan = "wgmma", narrow_value_tile = 64 : i64}
      : (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16>
  return
}

// -----

func.func @narrow_tile(%q: tensor<?x2x128xbf16>, %v: tensor<?x4x128xbf16>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{narrow_value_tile (32) must be a tile the wgmma scan takes with scan_stages = 3, narrower than value_tile (128)}}
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64, scale = 0.125 : f64, value_tile = 128 : i64, scan_stages = 3 : i64, scan = "wgmma", narrow_value_tile = 32 : i64, narrow_below_blocks = 116 : i64}
      : (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16>
  return
}

// -----

func.func @narrow_not_narrower(%q: tensor<?x2x128xbf16>, %v: tensor<?x4x128xbf16>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{narrow_value_tile (128) must be a tile the wgmma scan takes with scan_stages = 3, narrower than value_tile (128)}}
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64, scale = 0.125 : f64, value_tile = 128 : i64, scan_stages = 3 : i64, scan = "wgmma", narrow_value_tile = 128 : i64, narrow_below_blocks = 116 : i64}
      : (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16>
  return
}

// -----

// CHECK-LABEL: func.func @scores_in_scan
// CHECK: gdn_kernel.delta_rule {{.*}}scan = "wgmma", scan_stages = 3 : i64, scores = "scan"
func.func @scores_in_scan(%q: tensor<?x2x128xbf16>, %v: tensor<?x2x128xbf16>, %g: tensor<?x2xf32>,
                          %p: !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x2x128xbf16> {
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 2 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64,
       scale = 0.125 : f64, value_tile = 128 : i64, scan_stages = 3 : i64, scan = "wgmma", scores = "scan"}
      : (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x2xf32>, tensor<?x2xf32>,
         !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x2x128xbf16>
  return %o : tensor<?x2x128xbf16>
}

// -----

// CHECK-LABEL: func.func @scores_from_producer
// CHECK: gdn_kernel.delta_rule {{.*}}scan = "wgmma", scan_stages = 3 : i64, scores = "producer"
func.func @scores_from_producer(%q: tensor<?x2x128xbf16>, %v: tensor<?x4x128xbf16>, %g: tensor<?x4xf32>,
                                %p: !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16> {
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64,
       scale = 0.125 : f64, value_tile = 128 : i64, scan_stages = 3 : i64, scan = "wgmma", scores = "producer"}
      : (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4xf32>, tensor<?x4xf32>,
         !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16>
  return %o : tensor<?x4x128xbf16>
}

// -----

func.func @producer_on_mma_sync_scan(%q: tensor<?x2x64xbf16>, %v: tensor<?x4x64xbf16>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{scores = "producer" needs scan = "wgmma"}}
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, scale = 0.125 : f64, value_tile = 64 : i64, scan_stages = 2 : i64, scores = "producer"}
      : (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x64xbf16>
  return
}

// -----

func.func @producer_with_narrow_tile(%q: tensor<?x2x128xbf16>, %v: tensor<?x4x128xbf16>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{scores = "producer" takes no narrow_value_tile (the narrow run-time fallback is a two-kernel config that would share the producer's workspace and P's source); use scores = "prepare" with it}}
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 128 : i64, head_dim_v = 128 : i64, scale = 0.125 : f64,
       value_tile = 128 : i64, scan_stages = 3 : i64, scan = "wgmma", scores = "producer",
       narrow_value_tile = 64 : i64, narrow_below_blocks = 116 : i64}
      : (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x128xbf16>
  return
}

// -----

func.func @scores_in_mma_sync_scan(%q: tensor<?x2x64xbf16>, %v: tensor<?x4x64xbf16>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{scores = "scan" needs scan = "wgmma" (only the wgmma scan and its warp-specialised block compute P themselves)}}
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, scale = 0.125 : f64, value_tile = 64 : i64, scan_stages = 2 : i64, scores = "scan"}
      : (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x64xbf16>
  return
}

// -----

func.func @unknown_scores(%q: tensor<?x2x64xbf16>, %v: tensor<?x4x64xbf16>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{scores must be "prepare", "scan" or "producer", found "both"}}
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, scale = 0.125 : f64, value_tile = 64 : i64, scan_stages = 2 : i64, scan = "wgmma", scores = "both"}
      : (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x64xbf16>
  return
}

// -----

func.func @unknown_scan(%q: tensor<?x2x64xbf16>, %v: tensor<?x4x64xbf16>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{scan must be "mma_sync" or "wgmma", found "tma"}}
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, scale = 0.125 : f64, value_tile = 64 : i64, scan_stages = 2 : i64, scan = "tma"}
      : (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x64xbf16>
  return
}

// -----

func.func @wgmma_tile(%q: tensor<?x2x64xbf16>, %v: tensor<?x4x64xbf16>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{the wgmma scan takes K and V in {64, 128}, value_tile 64 or 128 dividing V and scan_stages 2 or 3; found K = 64, V = 64, value_tile = 32, scan_stages = 3}}
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, scale = 0.125 : f64, value_tile = 32 : i64, scan_stages = 3 : i64, scan = "wgmma"}
      : (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x64xbf16>
  return
}

// -----

func.func @wgmma_stages(%q: tensor<?x2x64xbf16>, %v: tensor<?x4x64xbf16>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{found K = 64, V = 64, value_tile = 64, scan_stages = 1}}
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, scale = 0.125 : f64, value_tile = 64 : i64, scan_stages = 1 : i64, scan = "wgmma"}
      : (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x64xbf16>
  return
}

// -----

func.func @head_dim(%q: tensor<?x2x32xbf16>, %v: tensor<?x4x64xbf16>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{the mma_sync scan takes K and V in {64, 128}, value_tile 32, 64 or 128 dividing V and scan_stages 1 or 2; found K = 32, V = 64, value_tile = 64, scan_stages = 1}}
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 32 : i64, head_dim_v = 64 : i64, scale = 0.125 : f64, value_tile = 64 : i64, scan_stages = 1 : i64}
      : (tensor<?x2x32xbf16>, tensor<?x2x32xbf16>, tensor<?x4x64xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x64xbf16>
  return
}

// -----

func.func @stages(%q: tensor<?x2x64xbf16>, %v: tensor<?x4x64xbf16>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{found K = 64, V = 64, value_tile = 64, scan_stages = 3}}
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, scale = 0.125 : f64, value_tile = 64 : i64, scan_stages = 3 : i64}
      : (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x64xbf16>
  return
}

// -----

func.func @gqa(%q: tensor<?x3x64xbf16>, %v: tensor<?x4x64xbf16>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{value heads (4) must be a multiple of key heads (3)}}
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 3 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, scale = 0.125 : f64, value_tile = 64 : i64, scan_stages = 1 : i64}
      : (tensor<?x3x64xbf16>, tensor<?x3x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x64xbf16>
  return
}

// -----

func.func @f32(%q: tensor<?x2x64xf32>, %v: tensor<?x4x64xf32>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{q, k, v and o must be bf16 (the products use mma.sync .bf16), found 'tensor<?x2x64xf32>'}}
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, scale = 0.125 : f64, value_tile = 64 : i64, scan_stages = 1 : i64}
      : (tensor<?x2x64xf32>, tensor<?x2x64xf32>, tensor<?x4x64xf32>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x64xf32>
  return
}

// -----

func.func @tokens(%q: tensor<16x2x64xbf16>, %v: tensor<16x4x64xbf16>, %g: tensor<16x4xf32>, %p: !gdn.packing<seqs = ?, tokens = 32>) {
  // expected-error @+1 {{q must have shape [32, 2, 64], found 'tensor<16x2x64xbf16>'}}
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, scale = 0.125 : f64, value_tile = 64 : i64, scan_stages = 1 : i64}
      : (tensor<16x2x64xbf16>, tensor<16x2x64xbf16>, tensor<16x4x64xbf16>, tensor<16x4xf32>, tensor<16x4xf32>, !gdn.packing<seqs = ?, tokens = 32>) -> tensor<16x4x64xbf16>
  return
}

// -----

func.func @state_seqs(%q: tensor<?x2x64xbf16>, %v: tensor<?x4x64xbf16>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = 2, tokens = ?>) {
  // expected-error @+1 {{a state must have shape [2, 4, 64, 64], found 'tensor<3x4x64x64xf32>'}}
  %o, %s = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, scale = 0.125 : f64, value_tile = 64 : i64, scan_stages = 1 : i64}
      : (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = 2, tokens = ?>) -> (tensor<?x4x64xbf16>, tensor<3x4x64x64xf32>)
  return
}

// -----

func.func @scale(%q: tensor<?x2x64xbf16>, %v: tensor<?x4x64xbf16>, %g: tensor<?x4xf32>, %p: !gdn.packing<seqs = ?, tokens = ?>) {
  // expected-error @+1 {{scale must be > 0, found 0}}
  %o = gdn_kernel.delta_rule %q, %q, %v, %g, %g, %p
      {key_heads = 2 : i64, value_heads = 4 : i64, head_dim_k = 64 : i64, head_dim_v = 64 : i64, scale = 0.0 : f64, value_tile = 64 : i64, scan_stages = 1 : i64}
      : (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, !gdn.packing<seqs = ?, tokens = ?>) -> tensor<?x4x64xbf16>
  return
}
