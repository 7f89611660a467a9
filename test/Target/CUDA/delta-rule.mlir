// gdn-translate --gdn-to-cuda on a whole forward core: the prologue and the
// chunked delta-rule kernel. The delta rule's banner and Config (tile chosen
// by gdn-select-kernels), its scratch query, its checks (per-token and
// per-sequence tensors, 16-byte alignment) and launch with the packing's
// status, and the whole-function workspace slot that holds its scratch.
// RUN: gdn-opt --gdn-pipeline %S/../../Integration/Inputs/core_gqa2x4_padded.mlir | gdn-translate --gdn-to-cuda | FileCheck %s
// RUN: gdn-opt --gdn-pipeline %S/../../Integration/Inputs/core_gqa16x32.mlir | gdn-translate --gdn-to-cuda | FileCheck %s --check-prefix=STATE
// Without split chains: the run-time choice of a narrow tile.
// RUN: gdn-opt --gdn-pipeline --gdn-select-kernels=split-chains=false %S/../../Integration/Inputs/core_gqa16x32.mlir | gdn-translate --gdn-to-cuda | FileCheck %s --check-prefix=NARROW
// Exact segments (warmup-bits=0).
// RUN: gdn-opt --gdn-pipeline --gdn-select-kernels=warmup-bits=0 %S/../../Integration/Inputs/core_gqa16x32.mlir | gdn-translate --gdn-to-cuda | FileCheck %s --check-prefix=EXACT
// The mma.sync scan (for GPUs without wgmma): its banner and Config.
// RUN: gdn-opt --gdn-pipeline --gdn-select-kernels=wgmma=false %S/../../Integration/Inputs/core_gqa2x4_padded.mlir | gdn-translate --gdn-to-cuda | FileCheck %s --check-prefix=MMA
// P computed in the scan (gdn-select-kernels' scores=scan). At V tile 128,
// by default, whatever the heads: P from the producer warpgroup of the
// scan's warp-specialised block.
// RUN: gdn-opt --gdn-pipeline --gdn-select-kernels=scores=scan %S/../../Integration/Inputs/core_mha4.mlir | gdn-translate --gdn-to-cuda | FileCheck %s --check-prefix=SCORES
// RUN: gdn-opt --gdn-pipeline %S/../../Integration/Inputs/core_gqa16x32.mlir | gdn-translate --gdn-to-cuda | FileCheck %s --check-prefix=PRODUCER
// RUN: gdn-opt --gdn-pipeline %S/../../Integration/Inputs/core_mha4.mlir | gdn-translate --gdn-to-cuda | FileCheck %s --check-prefix=PRODUCER

// CHECK: // Kernel gdn_core_gqa2x4_padded_k1_delta_rule: gdn_kernel.delta_rule at
// CHECK-NEXT: //   from gdn.delta_rule; chunked (64 tokens), prepare + scan kernels
// CHECK-NEXT: //   key heads 2 x 64, value heads 4 x 64, scale 1.250000e-01
// CHECK-NEXT: //   scan: wgmma (sm_90a: warpgroup products, TMA copies); tile: V tile 64 (1 scan block(s) per sequence and value head), 3 chunk(s) staged per scan block
// CHECK-NEXT: //   P (gated Q K^T): computed by the prepare kernel, through the workspace
// CHECK-NEXT: //   chains split at run time: when the sequences make at most 66 scan blocks, segments sized for about 132 blocks; warm-ups leave out at most 2^-24 of the state
// CHECK-NEXT: //   initial state no, final state yes
// CHECK-NEXT: struct gdn_core_gqa2x4_padded_k1_delta_rule_config {
// CHECK-NEXT:   using Element = __nv_bfloat16;
// CHECK-NEXT:   static constexpr int kKeyHeads = 2;
// CHECK-NEXT:   static constexpr int kValueHeads = 4;
// CHECK-NEXT:   static constexpr int kHeadDimK = 64;
// CHECK-NEXT:   static constexpr int kHeadDimV = 64;
// CHECK-NEXT:   static constexpr int kValueTile = 64;
// CHECK-NEXT:   static constexpr bool kScanWgmma = true;
// CHECK-NEXT:   static constexpr int kWgmmaStages = 3;
// CHECK-NEXT:   static constexpr bool kWgmmaScanScores = false;
// CHECK-NEXT:   static constexpr bool kHasInitialState = false;

// SCORES: //   scan: wgmma (sm_90a: warpgroup products, TMA copies); tile: V tile 128
// SCORES-NEXT: //   P (gated Q K^T): computed in the scan (the prepare kernel reads no q)
// SCORES: static constexpr bool kWgmmaScanScores = true;
// SCORES-NOT: kFused

// PRODUCER: //   scan: wgmma (sm_90a: warpgroup products, TMA copies); tile: V tile 128
// PRODUCER-NEXT: //   P (gated Q K^T): computed by the producer warpgroup of the scan's warp-specialised block (the prepare kernel reads no q)
// PRODUCER: static constexpr bool kWgmmaScanScores = false;
// PRODUCER-NEXT: static constexpr bool kFusedForward = true;
// PRODUCER-NEXT: static constexpr bool kFusedInverse = false;
// PRODUCER-NEXT: static constexpr bool kHasInitialState = true;

// MMA: //   scan: mma_sync (sm_80+: warp products, cp.async copies); tile: V tile 64 (1 scan block(s) per sequence and value head), 1 chunk(s) staged per scan block
// MMA-NEXT: //   P (gated Q K^T): computed by the prepare kernel, through the workspace
// MMA: static constexpr int kValueTile = 64;
// MMA-NEXT: static constexpr int kScanStages = 1;
// MMA-NEXT: static constexpr bool kHasInitialState = false;
// CHECK-NEXT:   static constexpr bool kHasFinalState = true;
// CHECK-NEXT: };

// CHECK: extern "C" size_t gdn_core_gqa2x4_padded_k1_delta_rule_scratch_bytes(const gdn_packing_t *packing) {
// CHECK: return gdn::device::deltaRuleWorkspaceBytes<gdn_core_gqa2x4_padded_k1_delta_rule_config>(
// CHECK: static int gdn_core_gqa2x4_padded_k1_delta_rule_validate(const gdn_tensor_t *operands, const gdn_tensor_t *results,
// CHECK-NEXT: const gdn_packing_t *packing, void *scratch) {
// CHECK: if (!gdn::checkTensor(operands[0], GDN_BF16, {tokens, 2, 64}))
// CHECK: if (!gdn::checkTensor(operands[2], GDN_BF16, {tokens, 4, 64}))
// CHECK: if (!gdn::checkTensor(operands[3], GDN_F32, {tokens, 4}))
// CHECK: if (!gdn::checkTensor(results[0], GDN_BF16, {tokens, 4, 64}))
// CHECK: if (!gdn::checkTensor(results[1], GDN_F32, {seqs, 4, 64, 64}))
// CHECK: !gdn::isVectorAligned(results[0])
// CHECK: extern "C" int gdn_core_gqa2x4_padded_k1_delta_rule(const gdn_tensor_t *operands, const gdn_tensor_t *results,
// CHECK-NEXT: const gdn_packing_t *packing, void *scratch, cudaStream_t stream) {
// CHECK: args.finalState = static_cast<float *>(results[1].data);
// CHECK: args.scale = 1.250000e-01f;
// CHECK: args.status =
// CHECK-NEXT: gdn::device::PackingWorkspace::carve(packing->workspace).status;
// CHECK-NEXT: args.segmentChunks =
// CHECK-NEXT: gdn::device::deltaRuleSegmentChunks<Config>(args.packing, 132);
// CHECK-NEXT: args.warmupLogBound = -1.663553e+01f /* -24 ln 2 */;
// CHECK-NEXT: return gdn::device::launchDeltaRule<Config>(args, scratch, stream) ==

// The function's workspace: packing metadata, the q/k/v/g/beta temporaries
// between the kernels, then the delta rule's scratch.
// CHECK: static const gdn_role_t gdn_core_gqa2x4_padded_result_roles[] = {GDN_ROLE_TOKENS, GDN_ROLE_PER_SEQUENCE};
// CHECK: offsets[6] = bytes; // scratch of gdn_core_gqa2x4_padded_k1_delta_rule
// CHECK-NEXT: {
// CHECK-NEXT: const gdn_packing_t counts = {nullptr, nullptr, static_cast<int32_t>((args[6].shape[0] - 1)), static_cast<int32_t>(args[0].shape[0]), nullptr};
// CHECK-NEXT: bytes += gdn::alignWorkspace(gdn_core_gqa2x4_padded_k1_delta_rule_scratch_bytes(&counts));
// CHECK: void *scratch0 = base + offsets[6];
// CHECK: gdn_core_gqa2x4_padded_k1_delta_rule_validate(operands, outputs, &p0, scratch0)
// CHECK: gdn_core_gqa2x4_padded_k1_delta_rule(operands, outputs, &p0, scratch0, stream)

// With an initial state: a per-sequence operand. The widest tile, one
// config, chains split at run time.
// STATE: //   chains split at run time
// STATE: struct gdn_core_gqa16x32_k1_delta_rule_config {
// STATE: static constexpr int kValueTile = 128;
// STATE: static constexpr bool kFusedInverse = false;
// STATE: static constexpr bool kHasInitialState = true;
// STATE-NOT: _config_narrow
// STATE: if (!gdn::checkTensor(operands[5], GDN_F32, {seqs, 32, 128, 128}))
// STATE: args.initialState = static_cast<const float *>(operands[5].data);
// STATE: gdn::device::deltaRuleSegmentChunks<Config>(args.packing, 132);
// STATE: return gdn::device::launchDeltaRule<Config>(args, scratch, stream) ==
// NARROW: //   V tile 64 at run time when the packing makes fewer than 116 scan blocks
// NARROW-NOT: chains split
// NARROW: struct gdn_core_gqa16x32_k1_delta_rule_config {
// NARROW: static constexpr int kValueTile = 128;
// NARROW: struct gdn_core_gqa16x32_k1_delta_rule_config_narrow {
// NARROW: static constexpr int kValueTile = 64;
// NARROW-NOT: segmentChunks
// NARROW: return gdn::device::launchDeltaRuleAdaptive<Config, gdn_core_gqa16x32_k1_delta_rule_config_narrow>(args, scratch, stream, 116) ==
// EXACT: //   chains split at run time: when the sequences make at most 66 scan blocks, segments sized for about 132 blocks; every segment runs from its sequence's start (exact)
// EXACT: args.warmupLogBound = -INFINITY /* exact segments */;
// STATE: static const gdn_role_t gdn_core_gqa16x32_arg_roles[] = {GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER, GDN_ROLE_TOKENS, GDN_ROLE_TOKENS, GDN_ROLE_PARAMETER, GDN_ROLE_PARAMETER, GDN_ROLE_PER_SEQUENCE, GDN_ROLE_CU_SEQLENS};
