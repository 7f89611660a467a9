#!/usr/bin/env python3
"""A clock64 timeline of the forward's scan blocks: the wgmma scan
(delta_rule_wgmma.cuh) and the fused block with a producer of P alone
(delta_rule_fused.cuh, gqa16x32's default).

Copies runtime/include (or SOURCE_INCLUDE) to OUT_INCLUDE and adds marks
that store clock64() into `gdnTimeline[warpgroup][chunk][mark]` (a
__device__ array that test/Integration/harness/scan_timeline.cu defines and
prints): in block 0, the first thread of each warpgroup, the block's first
256 chunks. Unlike scripts/fused-phase-profile.py (sums per phase) it keeps
absolute times, so the print shows how the warpgroups and the producer
interleave as well as each phase's mean. Each mark is one global store;
the marked kernels ran 10-20% slower on the H200: read the phases against
each other.

Marks of the producer-of-P block's consumers: 0 the loop's top, 1 the
chunk's tiles (full), 2 its P (produced), 3 S K^T and O's product issued,
4 the decays' barrier, 5 S K^T done, 6 Vn issued, 7 Vn done, 8 the
state's and O's products issued, 9 done, 10 the stage released, 11 o
stored. Its producer: 0 the loop's top, 1 the tiles,
2 P made, 3 P published (barrier), 4 `produced` arrived, 5 the released
stage (consumed), 6 its refill issued. The wgmma scan: 0 the loop's top, 1
the tiles, 2 the block barrier, 3 S K^T and O's product issued, 4 the
decays' barrier, 5 S K^T done, 6 Vn issued, 7 Vn done, 8 the state's and
O's products issued, 9 done, 10 O staged, 11 o stored.

The marks are placed by matching source text: when a kernel changes, the
script stops with the text it no longer finds.

    scripts/scan-timeline.py /tmp/timeline-include [SOURCE_INCLUDE]
    nvcc -ccbin g++-12 -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a \\
      -I /tmp/timeline-include -I runtime/include \\
      test/Integration/harness/scan_timeline.cu -o scan_timeline
    ./scan_timeline        # on the H200
"""
import os
import shutil
import sys

if len(sys.argv) not in (2, 3):
    sys.exit(__doc__)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
out = sys.argv[1]
source = sys.argv[2] if len(sys.argv) == 3 else os.path.join(
    ROOT, 'runtime/include')
if os.path.exists(out):
    shutil.rmtree(out)
shutil.copytree(source, out)

MACRO = '''
#define GDN_TIMELINE_MARK(mark)                                                \\
  do {                                                                         \\
    if (blockIdx.x == 0 && threadIdx.x % 128 == 0 && profChunk >= 0 &&        \\
        profChunk < 256)                                                       \\
      gdnTimeline[(threadIdx.x / 128) * 4096 + profChunk * 16 + (mark)] =      \\
          clock64();                                                           \\
  } while (0)
namespace gdn {
namespace device {
'''


def patch(relative, pairs):
    """Replaces, in one header, each anchor (which must occur once)."""
    path = os.path.join(out, relative)
    text = open(path).read()
    for anchor, replacement in pairs:
        if text.count(anchor) != 1:
            sys.exit('scan-timeline: %s has %d occurrences of the text below, '
                     'not one; update this script\'s anchors to the kernel:\n%s'
                     % (path, text.count(anchor), anchor))
        text = text.replace(anchor, replacement)
    open(path, 'w').write(text)


def mark(n):
    return 'GDN_TIMELINE_MARK(%d);' % n


NAMESPACE = 'namespace gdn {\nnamespace device {\n'
patch('gdn/device/delta_rule_fused.cuh', [
    (NAMESPACE, MACRO),
    # wgmmaScanChunk takes the chunk's number.
    ('''               const char *at, int rows, float *decays, int group, int tid) {''',
     '''               const char *at, int rows, float *decays, int group, int tid,
               int profChunk) {'''),
    ('''  wgmmaSwizzled<64, kK / 16, 0>(out, stateA, at + W::kStageQ, false);
  wgmmaCommit();
''', '''  wgmmaSwizzled<64, kK / 16, 0>(out, stateA, at + W::kStageQ, false);
  wgmmaCommit();
  %s
''' % mark(3)),
    ('''  warpgroupBarrier(group);

  // R = V^T''', '''  warpgroupBarrier(group);
  %s

  // R = V^T''' % mark(4)),
    ('''  wgmmaWait<1>();
  wgmmaSettle(keyProduct);''', '''  wgmmaWait<1>();
  wgmmaSettle(keyProduct);
  %s''' % mark(5)),
    ('''  wgmmaSwizzled<64, 4, 0>(fresh, residualA, at + W::kStageM, false);
  wgmmaCommit();''', '''  wgmmaSwizzled<64, 4, 0>(fresh, residualA, at + W::kStageM, false);
  wgmmaCommit();
  %s''' % mark(6)),
    ('''  wgmmaWait<0>();
  wgmmaSettle(out);
  wgmmaSettle(fresh);''', '''  wgmmaWait<0>();
  wgmmaSettle(out);
  wgmmaSettle(fresh);
  %s''' % mark(7)),
    ('''  wgmmaSwizzled<64, 4, 0>(out, freshA, at + W::kStageP, true);
  wgmmaCommit();''', '''  wgmmaSwizzled<64, 4, 0>(out, freshA, at + W::kStageP, true);
  wgmmaCommit();
  %s''' % mark(8)),
    ('''  wgmmaWait<0>();
  wgmmaSettle(state);
  wgmmaSettle(out);
}''', '''  wgmmaWait<0>();
  wgmmaSettle(state);
  wgmmaSettle(out);
  %s
}''' % mark(9)),
    # The consumers' loop.
    ('''    char *at = base + stage * W::kStageBytes;
    mbarrierWait(full + stage, phase);
    if (rows < kC) {
      // Rows of this''', '''    char *at = base + stage * W::kStageBytes;
    const int profChunk = c - start;
    %s
    mbarrierWait(full + stage, phase);
    %s
    if (rows < kC) {
      // Rows of this''' % (mark(0), mark(1))),
    ('''    mbarrierWait(produced + stage, phase);
''', '''    mbarrierWait(produced + stage, phase);
    %s
''' % mark(2)),
    ('''                           group, tid);
    // This warp is done with the stage''', '''                           group, tid, profChunk);
    // This warp is done with the stage'''),
    ('''    if (kOwnStaging)
      release();
''', '''    if (kOwnStaging)
      release();
    %s
''' % mark(10)),
    ('''    } else {
      // The decays are read: the next chunk's may overwrite them.
      warpgroupBarrier(group);
    }''', '''    } else {
      // The decays are read: the next chunk's may overwrite them.
      warpgroupBarrier(group);
    }
    %s''' % mark(11)),
    # The producer.
    ('''      char *at = base + stage * W::kStageBytes;
      mbarrierWait(full + stage, phase);
      if (rows < kC) {
        // TMA read past''', '''      char *at = base + stage * W::kStageBytes;
      const int profChunk = c - first;
      %s
      mbarrierWait(full + stage, phase);
      %s
      if (rows < kC) {
        // TMA read past''' % (mark(0), mark(1))),
    ('''      fenceSharedForAsyncProxy(); // M, P, G and zeroed rows, for wgmma
      producerBarrier<kConsumers>();''', '''      %s
      fenceSharedForAsyncProxy(); // M, P, G and zeroed rows, for wgmma
      producerBarrier<kConsumers>();
      %s''' % (mark(2), mark(3))),
    ('''      if (p == 0) {
        mbarrierArrive(produced + stage);''', '''      if (p == 0) {
        mbarrierArrive(produced + stage);
        %s''' % mark(4)),
    ('''          mbarrierWait(consumed + previous, stage == 0 ? phase ^ 1u : phase);
          fetch(c + kStages - 1, previous);''', '''          mbarrierWait(consumed + previous, stage == 0 ? phase ^ 1u : phase);
          %s
          fetch(c + kStages - 1, previous);
          %s''' % (mark(5), mark(6))),
])
patch('gdn/device/delta_rule_wgmma.cuh', [
    (NAMESPACE, MACRO),
    ('''    const int32_t local = c - start;
    mbarrierWait(full + local % W::kStages, (local / W::kStages) & 1);''',
     '''    const int32_t local = c - start;
    const int profChunk = local;
    %s
    mbarrierWait(full + local %% W::kStages, (local / W::kStages) & 1);
    %s''' % (mark(0), mark(1))),
    ('''    __syncthreads();
    if (tid == 0 && c + W::kStages - 1 < end)''', '''    __syncthreads();
    %s
    if (tid == 0 && c + W::kStages - 1 < end)''' % mark(2)),
    ('''    wgmmaSwizzled<64, kK / 16, 0>(out, stateA, at + W::kStageQ, false);
    wgmmaCommit();
''', '''    wgmmaSwizzled<64, kK / 16, 0>(out, stateA, at + W::kStageQ, false);
    wgmmaCommit();
    %s
''' % mark(3)),
    ('''    warpgroupBarrier(group);

    // R = V^T''', '''    warpgroupBarrier(group);
    %s

    // R = V^T''' % mark(4)),
    ('''    wgmmaWait<1>();
    wgmmaSettle(keyProduct);''', '''    wgmmaWait<1>();
    wgmmaSettle(keyProduct);
    %s''' % mark(5)),
    ('''    wgmmaSwizzled<64, 4, 0>(fresh, residualA, at + W::kStageM, false);
    wgmmaCommit();''', '''    wgmmaSwizzled<64, 4, 0>(fresh, residualA, at + W::kStageM, false);
    wgmmaCommit();
    %s''' % mark(6)),
    ('''    wgmmaWait<0>();
    wgmmaSettle(out);
    wgmmaSettle(fresh);''', '''    wgmmaWait<0>();
    wgmmaSettle(out);
    wgmmaSettle(fresh);
    %s''' % mark(7)),
    ('''        out, freshA, W::kScoresInScan ? scoreTile : at + W::kStageP, true);
    wgmmaCommit();''', '''        out, freshA, W::kScoresInScan ? scoreTile : at + W::kStageP, true);
    wgmmaCommit();
    %s''' % mark(8)),
    ('''    wgmmaWait<0>();
    wgmmaSettle(state);
    wgmmaSettle(out);
    if (c < segment.first)''', '''    wgmmaWait<0>();
    wgmmaSettle(state);
    wgmmaSettle(out);
    %s
    if (c < segment.first)''' % mark(9)),
    ('''    warpgroupBarrier(group);
    const int64_t chunkRow0''', '''    warpgroupBarrier(group);
    %s
    const int64_t chunkRow0''' % mark(10)),
    ('''            *reinterpret_cast<const uint4 *>(staging + row * W::kLdOut +
                                             column);
    }
  }''', '''            *reinterpret_cast<const uint4 *>(staging + row * W::kLdOut +
                                             column);
    }
    %s
  }''' % mark(11)),
])
print('scan-timeline: marked ' + out)
