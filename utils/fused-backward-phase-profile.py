#!/usr/bin/env python3
"""Per-phase cycle counts of the fused delta-rule backward's math,
carrier and producer warpgroups (docs/performance.md, "The fused reverse
kernel").

Copies kernels/include (or SOURCE_INCLUDE) to OUT_INCLUDE and adds
clock64() marks to delta_rule_backward_fused_wgmma.cuh: in block 0, the
first thread of math warpgroup 0, of the carrier and of the producer each
add the cycles since their previous mark to a slot of `gdnProf` (a
__device__ array that
test/Integration/harness/fused_backward_phase_profile.cu defines and
prints per chunk). Read the phases against each other: the marks cost
some of the kernel's time.

The marks are placed by matching source text: when the kernel changes,
this script stops with the text it no longer finds, and the anchors below
need updating with it.

    utils/fused-backward-phase-profile.py /tmp/profile-include [SOURCE_INCLUDE]
    nvcc -ccbin g++-12 -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a \\
      -I /tmp/profile-include -I kernels/include -I runtime/include \\
      -I unittests/DeviceEmulation \\
      test/Integration/harness/fused_backward_phase_profile.cu -o profile
    ./profile        # on the GPU
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from marked_headers import PROFILE_MARK_MACRO, copy_headers, patch_header  # noqa: E402

out = copy_headers(sys.argv, __doc__)

# Slots, kept in step with kPhaseNames in fused_backward_phase_profile.cu:
# math 0-15 (15 before 13), carrier 16-24, producer 26, math's chunk count
# 31.
pairs = [
    ('namespace gdn {\nnamespace device {\n', PROFILE_MARK_MACRO),
    # Producer.
    ('''    for (int32_t c = stop - 1; c >= first; --c) {
      const Chunk k = chunkAt(c);
      const int y = static_cast<int>(k.row0);''',
     '''    const bool profLeader = p == 96; // the thread that copies S, Vn, Q
    unsigned long long profT = clock64();
    for (int32_t c = stop - 1; c >= first; --c) {
      const Chunk k = chunkAt(c);
      const int y = static_cast<int>(k.row0);'''),
    ('''        release(queryBuffer(k.local), k.local / 2);
        tokenTile(queryBuffer(k.local), queriesOf(k.local), &maps.q, keyHead * kK, kK);
      }''', '''        release(queryBuffer(k.local), k.local / 2);
        tokenTile(queryBuffer(k.local), queriesOf(k.local), &maps.q, keyHead * kK, kK);
        GDN_PROFILE_MARK(26);
      }'''),
    # Carrier.
    ('''    for (int32_t c = stop - 1; c >= first; --c) {
      const Chunk k = chunkAt(c);
      if (k.rows < kC)
        zeroPartialChunk(k);
      const int gates = kFusedGates0 + k.local % 2;
      mbarrierWait(full + gates, (k.local / 2) & 1);
      const float *gate = gateBuffers + (k.local % 2) * kC;
      const float *betas = betaBuffers + (k.local % 2) * kC;
      // dS' of this chunk''', '''    const bool profLeader = thread == F::kCarrier;
    unsigned long long profT = clock64();
    for (int32_t c = stop - 1; c >= first; --c) {
      GDN_PROFILE_MARK(16);
      const Chunk k = chunkAt(c);
      if (k.rows < kC)
        zeroPartialChunk(k);
      const int gates = kFusedGates0 + k.local % 2;
      mbarrierWait(full + gates, (k.local / 2) & 1);
      GDN_PROFILE_MARK(17);
      const float *gate = gateBuffers + (k.local % 2) * kC;
      const float *betas = betaBuffers + (k.local % 2) * kC;
      // dS' of this chunk'''),
    ('''        mbarrierWait(full + kFusedStateGradFree, (k.local - 1) & 1);
      stageOutputTransposed<kK / 8>(grad[0], 1.0f, 0, tid, stateGradAt);''',
     '''        mbarrierWait(full + kFusedStateGradFree, (k.local - 1) & 1);
      GDN_PROFILE_MARK(18);
      stageOutputTransposed<kK / 8>(grad[0], 1.0f, 0, tid, stateGradAt);'''),
    ('''      mbarrierArrive(full + kFusedStateGradReady);
      const float chunkDecay''', '''      mbarrierArrive(full + kFusedStateGradReady);
      GDN_PROFILE_MARK(19);
      const float chunkDecay'''),
    ('''      warpgroupBarrier(2);
      // dS^T += X^T Q.
      mbarrierWait(full + kFusedOutput, k.local & 1);
      mbarrierWait(full + queryBuffer(k.local), (k.local / 2) & 1);''', '''      warpgroupBarrier(2);
      GDN_PROFILE_MARK(20);
      // dS^T += X^T Q.
      mbarrierWait(full + kFusedOutput, k.local & 1);
      mbarrierWait(full + queryBuffer(k.local), (k.local / 2) & 1);
      GDN_PROFILE_MARK(21);'''),
    ('''      mbarrierArrive(empty + kFusedOutput);
      // dS^T += Y^T K once W is staged.
      mbarrierWait(full + kFusedWeightedReady, k.local & 1);''', '''      mbarrierArrive(empty + kFusedOutput);
      GDN_PROFILE_MARK(22);
      // dS^T += Y^T K once W is staged.
      mbarrierWait(full + kFusedWeightedReady, k.local & 1);
      GDN_PROFILE_MARK(23);'''),
    ('''      wgmmaSettle(grad[0]);
      wgmmaSettle(grad[1]);''', '''      wgmmaSettle(grad[0]);
      wgmmaSettle(grad[1]);
      GDN_PROFILE_MARK(24);'''),
    # Math warpgroup 0.
    ('''  for (int32_t c = stop - 1; c >= first; --c) {
    const Chunk k = chunkAt(c);
    const int rows = k.rows;''', '''  const bool profLeader = thread == 0;
  unsigned long long profT = clock64();
  for (int32_t c = stop - 1; c >= first; --c) {
    GDN_PROFILE_MARK(0);
    if (blockIdx.x == 0 && profLeader)
      atomicAdd(&gdnProf[31], 1ull); // chunks
    const Chunk k = chunkAt(c);
    const int rows = k.rows;'''),
    ('''    const float lastGate = gate[rows - 1];
    const char *keys = keysOf(k.local);
    const char *output = base + F::kOutput;''', '''    const float lastGate = gate[rows - 1];
    const char *keys = keysOf(k.local);
    const char *output = base + F::kOutput;
    GDN_PROFILE_MARK(1);'''),
    ('''      mbarrierWait(full + kFusedStateGradReady, k.local & 1);
      wgmmaFence();''', '''      mbarrierWait(full + kFusedStateGradReady, k.local & 1);
      GDN_PROFILE_MARK(2);
      wgmmaFence();'''),
    ('''      wgmmaSettle(keyProduct);
      wgmmaSettle(scoreProduct);''', '''      wgmmaSettle(keyProduct);
      wgmmaSettle(scoreProduct);
      GDN_PROFILE_MARK(3);'''),
    ('''      wgmmaSettle(weightedT);
      mbarrierArrive(empty + kFusedTransform);''', '''      wgmmaSettle(weightedT);
      GDN_PROFILE_MARK(4);
      mbarrierArrive(empty + kFusedTransform);'''),
    ('''    if (!k.emit) {
      // A warm-up chunk: nothing but the chain.''', '''    GDN_PROFILE_MARK(5);
    if (!k.emit) {
      // A warm-up chunk: nothing but the chain.'''),
    ('''    mathBarrier(); // both halves of W are staged
''', '''    mathBarrier(); // both halves of W are staged
    GDN_PROFILE_MARK(6);
'''),
    ('''    mbarrierWait(full + kFusedFresh, parity);
    const char *fresh = base + F::kFresh;''', '''    mbarrierWait(full + kFusedFresh, parity);
    const char *fresh = base + F::kFresh;
    GDN_PROFILE_MARK(7);'''),
    ('''      fenceSharedForAsyncProxy(); // E1 and F for the products below
    }''', '''      fenceSharedForAsyncProxy(); // E1 and F for the products below
    }
    GDN_PROFILE_MARK(8);'''),
    ('''    // <dS', S> over the whole K x V tile: per-warp partials.''',
     '''    GDN_PROFILE_MARK(9);
    // <dS', S> over the whole K x V tile: per-warp partials.'''),
    ('''    mbarrierArrive(empty + kFusedState);

    // T3''', '''    mbarrierArrive(empty + kFusedState);
    GDN_PROFILE_MARK(10);

    // T3'''),
    ('''    storeRowSums(kSumRowT + group, rowT);
    mathBarrier(); // E1, F and every partial sum are complete''', '''    storeRowSums(kSumRowT + group, rowT);
    GDN_PROFILE_MARK(11);
    mathBarrier(); // E1, F and every partial sum are complete
    GDN_PROFILE_MARK(12);'''),
    ('''                                                  Tile::kBlockBytes, true);
      wgmmaCommit();
    }
    // dg and dbeta under the products.''', '''                                                  Tile::kBlockBytes, true);
      wgmmaCommit();
    }
    GDN_PROFILE_MARK(15);
    // dg and dbeta under the products.'''),
    ('''    wgmmaWait<0>();
    wgmmaSettle(dq);
    wgmmaSettle(dk);

    // dq and dk of this value head''', '''    GDN_PROFILE_MARK(13);
    wgmmaWait<0>();
    wgmmaSettle(dq);
    wgmmaSettle(dk);

    // dq and dk of this value head'''),
    ('''    releaseChunk();
  }
  if (thread % 128 == 0)''', '''    GDN_PROFILE_MARK(14);
    releaseChunk();
  }
  if (thread % 128 == 0)'''),
]
patch_header('fused-backward-phase-profile', out,
             'gdn/device/delta_rule_backward_fused_wgmma.cuh', pairs)
print('fused-backward-phase-profile: marked ' +
      os.path.join(out, 'gdn/device/delta_rule_backward_fused_wgmma.cuh'))
