#!/usr/bin/env python3
"""A clock64 timeline of the forward's scan blocks: the wgmma scan
(delta_rule_wgmma.cuh) and the fused block with a producer of P alone
(delta_rule_fused.cuh, the default at V tile 128).

Copies kernels/include (or SOURCE_INCLUDE) to OUT_INCLUDE and adds marks
that store clock64() into `gdnTimeline[warpgroup][chunk][mark]` (a
__device__ array that test/Integration/harness/scan_timeline.cu defines and
prints): in block 0, the first thread of each warpgroup, the block's first
256 chunks. Unlike utils/fused-phase-profile.py (sums per phase) it keeps
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

    utils/scan-timeline.py /tmp/timeline-include [SOURCE_INCLUDE]
    nvcc -ccbin g++-12 -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a \\
      -I /tmp/timeline-include -I kernels/include -I runtime/include \\
      test/Integration/harness/scan_timeline.cu -o scan_timeline
    ./scan_timeline        # on the H200
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from marked_headers import copy_headers, patch_header  # noqa: E402

out = copy_headers(sys.argv, __doc__)

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
    patch_header('scan-timeline', out, relative, pairs)


def mark(n):
    return 'GDN_TIMELINE_MARK(%d);' % n


def block(indent, *lines):
    # Source lines at one indentation (empty lines stay empty).
    return '\n'.join(indent + line if line else '' for line in lines)


def after(indent, lines, n):
    # Mark n after `lines` (at `indent`).
    return (block(indent, *lines), block(indent, *lines, mark(n)))


def loop_top(indent, first, comment):
    # The top of a fused-block loop (consumers' or producer's): the chunk's
    # number from `first`, mark 0, the wait for the chunk's tiles, mark 1;
    # `comment` opens the partial-chunk branch that follows.
    head = ['char *at = base + stage * W::kStageBytes;']
    wait = ['mbarrierWait(full + stage, phase);']
    tail = ['if (rows < kC) {', '  ' + comment]
    return (block(indent, *head, *wait, *tail),
            block(indent, *head, 'const int profChunk = c - %s;' % first,
                  mark(0), *wait, mark(1), *tail))


def chunk_marks(indent, first):
    # The marks the wgmma scan's loop body and wgmmaScanChunk (its copy)
    # share, numbered from `first`: S K^T and O issued, the decays'
    # barrier, S K^T done, Vn issued, Vn done.
    return [
        after(indent, ['wgmmaSwizzled<64, kK / 16, 0>(out, stateA, '
                       'at + W::kStageQ, false);', 'wgmmaCommit();'], first),
        (block(indent, 'warpgroupBarrier(group);', '', '// R = V^T'),
         block(indent, 'warpgroupBarrier(group);', mark(first + 1), '',
               '// R = V^T')),
        after(indent, ['wgmmaWait<1>();', 'wgmmaSettle(keyProduct);'],
              first + 2),
        after(indent, ['wgmmaSwizzled<64, 4, 0>(fresh, residualA, '
                       'at + W::kStageM, false);', 'wgmmaCommit();'],
              first + 3),
        after(indent, ['wgmmaWait<0>();', 'wgmmaSettle(out);',
                       'wgmmaSettle(fresh);'], first + 4),
    ]


def scan_chunk_marks(indent, first):
    # chunk_marks' places in the wgmma scan itself, whose O products and
    # waits sit under `if (!kSave)` (the backward's recomputation skips o).
    return [
        after(indent, ['if (!kSave) {',
                       '  wgmmaSwizzled<64, kK / 16, 0>(out, stateA, '
                       'at + W::kStageQ, false);', '  wgmmaCommit();', '}'],
              first),
        (block(indent, 'warpgroupBarrier(group);',
               'if (kSave && c >= segment.first && tid % 128 == 0) {'),
         block(indent, 'warpgroupBarrier(group);', mark(first + 1),
               'if (kSave && c >= segment.first && tid % 128 == 0) {')),
        after(indent, ['wgmmaWait<kSave ? 0 : 1>();',
                       'wgmmaSettle(keyProduct);'], first + 2),
        after(indent, ['wgmmaSwizzled<64, 4, 0>(fresh, residualA, '
                       'at + W::kStageM, false);', 'wgmmaCommit();'],
              first + 3),
        after(indent, ['wgmmaWait<0>();', 'if (!kSave)', '  wgmmaSettle(out);',
                       'wgmmaSettle(fresh);'], first + 4),
    ]


NAMESPACE = 'namespace gdn {\nnamespace device {\n'
patch('gdn/device/delta_rule_fused.cuh', [
    (NAMESPACE, MACRO),
    # wgmmaScanChunk takes the chunk's number.
    ('''               const char *at, int rows, float *decays, int group, int tid) {''',
     '''               const char *at, int rows, float *decays, int group, int tid,
               int profChunk) {'''),
] + chunk_marks('  ', 3) + [
    after('  ', ['wgmmaSwizzled<64, 4, 0>(out, freshA, at + W::kStageP, '
                 'true);', 'wgmmaCommit();'], 8),
    (block('  ', 'wgmmaWait<0>();', 'wgmmaSettle(state);', 'wgmmaSettle(out);')
     + '\n}',
     block('  ', 'wgmmaWait<0>();', 'wgmmaSettle(state);', 'wgmmaSettle(out);',
           mark(9)) + '\n}'),
    # The consumers' loop.
    loop_top('    ', 'start', '// Rows of this'),
    after('    ', ['mbarrierWait(produced + stage, phase);'], 2),
    ('''                           group, tid);
    // This warp is done with the stage''', '''                           group, tid, profChunk);
    // This warp is done with the stage'''),
    after('    ', ['if (kOwnStaging)', '  release();'], 10),
    after('    ', ['} else {',
                    '  // The decays are read: the next chunk\'s may '
                    'overwrite them.',
                    '  warpgroupBarrier(group);', '}'], 11),
    # The producer.
    loop_top('      ', 'first', '// TMA read past'),
    ('''      fenceSharedForAsyncProxy(); // M, P, G and zeroed rows, for wgmma
      producerBarrier<kConsumers>();''', '''      %s
      fenceSharedForAsyncProxy(); // M, P, G and zeroed rows, for wgmma
      producerBarrier<kConsumers>();
      %s''' % (mark(2), mark(3))),
    after('      ', ['if (p == 0)', '  mbarrierArrive(produced + stage);'], 4),
    ('''        mbarrierWait(consumed + previous, stage == 0 ? phase ^ 1u : phase);
        fetchByWarp(c + kStages - 1, previous);''', '''        mbarrierWait(consumed + previous, stage == 0 ? phase ^ 1u : phase);
        %s
        fetchByWarp(c + kStages - 1, previous);
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
] + scan_chunk_marks('    ', 3) + [
    after('    ', ['      out, freshA, W::kScoresInScan ? scoreTile : '
                    'at + W::kStageP, true);', 'wgmmaCommit();'], 8),
    (block('    ', 'wgmmaWait<0>();', 'wgmmaSettle(state);', 'if (!kSave)',
           '  wgmmaSettle(out);', 'if (c < segment.first)'),
     block('    ', 'wgmmaWait<0>();', 'wgmmaSettle(state);', 'if (!kSave)',
           '  wgmmaSettle(out);', mark(9), 'if (c < segment.first)')),
    (block('    ', 'warpgroupBarrier(group);', 'storeStagedRows(kSave'),
     block('    ', 'warpgroupBarrier(group);', mark(10), 'storeStagedRows(kSave')),
    after('    ', ['                group, tid, stagedAt);'], 11),
])
print('scan-timeline: marked ' + out)
