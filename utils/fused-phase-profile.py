#!/usr/bin/env python3
"""Per-phase cycle counts of the fused delta-rule forward's producer and
consumers (docs/delta-rule.md, "The fused forward").

Copies kernels/include (or SOURCE_INCLUDE) to OUT_INCLUDE and adds
clock64() marks to
delta_rule_fused.cuh: in block 0, one producer thread and one consumer
thread add the cycles since their previous mark to a slot of `gdnProf`
(a __device__ array that test/Integration/harness/fused_phase_profile.cu
defines and prints per chunk). The marks cost about 10% of the kernel's
time; read the phases against each other, not as absolute times.

The marks are placed by matching source text: when the kernel changes,
this script stops with the text it no longer finds, and the anchors below
need updating with it.

    utils/fused-phase-profile.py /tmp/profile-include [SOURCE_INCLUDE]
    nvcc -ccbin g++-12 -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a \\
      -I /tmp/profile-include -I kernels/include -I runtime/include \\
      test/Integration/harness/fused_phase_profile.cu -o fused_phase_profile
    ./fused_phase_profile        # on the H200
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from marked_headers import PROFILE_MARK_MACRO, copy_headers, replace_once  # noqa: E402

out = copy_headers(sys.argv, __doc__)
path = os.path.join(out, 'gdn/device/delta_rule_fused.cuh')
text = open(path).read()


def insert(anchor, replacement):
    """Replaces the one occurrence of `anchor`."""
    global text
    text = replace_once('fused-phase-profile', path, text, anchor, replacement)


# Slots (kept in step with kPhaseNames in fused_phase_profile.cu).
insert('namespace gdn {\nnamespace device {\n', PROFILE_MARK_MACRO)
# The producer.
insert('''    for (int32_t c = first; c < last; ++c) {
      // The thread's index, read anew each chunk''', '''    const bool profLeader = tid == 128 * kConsumers;
    unsigned long long profT = clock64();
    int profBarrier = 0;
    for (int32_t c = first; c < last; ++c) {
      GDN_PROFILE_MARK(0);
      if (blockIdx.x == 0 && profLeader)
        atomicAdd(&gdnProf[31], 1ull); // chunks
      profBarrier = 0;
      // The thread's index, read anew each chunk''')
insert('''      mbarrierWait(full + stage, phase);
      if (rows < kC) {
        // TMA read past the sequence end: zero those rows of Q and K''',
       '''      mbarrierWait(full + stage, phase);
      GDN_PROFILE_MARK(1);
      if (rows < kC) {
        // TMA read past the sequence end: zero those rows of Q and K''')
insert('''        if (pWarp == 1)
          cumulative += warpTotals[0];''', '''        GDN_PROFILE_MARK(2);
        if (pWarp == 1)
          cumulative += warpTotals[0];''')
insert('''          wgmmaSettle(keys);
          wgmmaSettle(scores);
''', '''          wgmmaSettle(keys);
          wgmmaSettle(scores);
          GDN_PROFILE_MARK(3 + 2 * half);
''')
insert('''              });
        }
        producerBarrier<kConsumers>(); // L whole
''', '''              });
          GDN_PROFILE_MARK(4 + 2 * half);
        }
        producerBarrier<kConsumers>(); // L whole
        GDN_PROFILE_MARK(7);
''')
insert('''            lower, p, [] { producerBarrier<kConsumers>(); });''',
       '''            lower, p, [&] {
              producerBarrier<kConsumers>();
              GDN_PROFILE_MARK(8 + profBarrier);
              ++profBarrier;
            });''')
insert('''      fenceSharedForAsyncProxy(); // M, P, G and zeroed rows, for wgmma
      producerBarrier<kConsumers>();
''', '''      fenceSharedForAsyncProxy(); // M, P, G and zeroed rows, for wgmma
      producerBarrier<kConsumers>();
      GDN_PROFILE_MARK(12);
''')
# The consumers.
insert('''  for (int32_t c = start; c < end; ++c) {
    // Thread-derived offsets anew each chunk (see the producer's loop)''',
       '''  const bool profLeader = tid == 0;
  unsigned long long profT = clock64();
  for (int32_t c = start; c < end; ++c) {
    GDN_PROFILE_MARK(16);
    // Thread-derived offsets anew each chunk (see the producer's loop)''')
insert('''    mbarrierWait(produced + stage, phase);
    float out[32];''', '''    GDN_PROFILE_MARK(17);
    mbarrierWait(produced + stage, phase);
    GDN_PROFILE_MARK(18);
    float out[32];''')
insert('''                           group, tid);
    // This warp is done with the stage''', '''                           group, tid);
    GDN_PROFILE_MARK(19);
    // This warp is done with the stage''')
# (The fused forward stages O^T in the V tile: it releases the stage after
# o's stores, here.)
insert('''    if (!kOwnStaging)
      release();
''', '''    GDN_PROFILE_MARK(20);
    if (!kOwnStaging)
      release();
''')
open(path, 'w').write(text)
print('fused-phase-profile: marked ' + path)
