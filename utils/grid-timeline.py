#!/usr/bin/env python3
"""A globaltimer timeline of the whole forward: every prepare block and
every scan block of one launch (the two-kernel forward with the producer-of-P
block, the default at V tile 128), to read off what a launch pays beyond its
chunks: when the prepare kernel's blocks start and end, when the scan
blocks become resident on the SMs that the prepare blocks leave, when the
producer's wait for the prepare grid returns, and when each block's chain
starts and ends.

Copies kernels/include (or SOURCE_INCLUDE) to OUT_INCLUDE and adds marks that
store %globaltimer (ns, one clock for the whole GPU) and the SM's number into
arrays that test/Integration/harness/grid_timeline.cu defines and summarises.
Each mark is one thread's store per block and event; the prepare block's end
mark adds a barrier of the block. (On the H200 one marked forward took 123.9 us
at gqa16x32 2048x4 and 437.4 at 8192x4, against the unmarked bench's medians of
0.1176 and 0.4184 ms.)

Prepare block (gdnGridPrepare[block][4]): 0 its start, 1 its end (after a
barrier of the block), 2 the SM. Scan block (gdnGridScan[block][12]): 0
resident (its first instruction after the segment's validity), 1 the
producer's wait for the prepare grid returned, 2 the consumers' loop
entered (after their initial-state loads), 3 the first chunk's P
received (the chain's start), 4 the last chunk done and o's stores
complete, 5 the final state stored (the block's end), 6 the SM, 7 the
producer's first warp past its setmaxnreg.dec, 8 the first consumer warp
past its setmaxnreg.inc, 9 the block's barrier after the mbarriers' set-up.

    utils/grid-timeline.py /tmp/grid-include [SOURCE_INCLUDE]
    nvcc -ccbin g++-12 -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a \\
      -I /tmp/grid-include -I kernels/include -I runtime/include \\
      test/Integration/harness/grid_timeline.cu -o grid_timeline
    ./grid_timeline        # on the H200
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from marked_headers import copy_headers, patch_header  # noqa: E402

out = copy_headers(sys.argv, __doc__)

MACRO = '''
__device__ __forceinline__ unsigned long long gdnGlobalTime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned gdnSmId() {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}
#define GDN_GRID_PREPARE_MARK(mark)                                            \\
  do {                                                                         \\
    const unsigned gdnBlock = blockIdx.x + gridDim.x * blockIdx.y;            \\
    if (gdnBlock < kGdnGridPrepareBlocks) {                                    \\
      gdnGridPrepare[gdnBlock][mark] = gdnGlobalTime();                        \\
      gdnGridPrepare[gdnBlock][2] = gdnSmId();                                 \\
    }                                                                          \\
  } while (0)
#define GDN_GRID_SCAN_MARK(mark)                                               \\
  do {                                                                         \\
    if (blockIdx.x < kGdnGridScanBlocks) {                                     \\
      gdnGridScan[blockIdx.x][mark] = gdnGlobalTime();                         \\
      gdnGridScan[blockIdx.x][6] = gdnSmId();                                  \\
    }                                                                          \\
  } while (0)
namespace gdn {
namespace device {
'''


def patch(relative, pairs):
    patch_header('grid-timeline', out, relative, pairs)


NAMESPACE = 'namespace gdn {\nnamespace device {\n'
patch('gdn/device/delta_rule_wgmma.cuh', [
    (NAMESPACE, MACRO),
    ('''  allowDependentLaunch();
  if constexpr (PrepareDelayOf<Config>::value > 0) {''',
     '''  allowDependentLaunch();
  if (threadIdx.x == 0)
    GDN_GRID_PREPARE_MARK(0);
  if constexpr (PrepareDelayOf<Config>::value > 0) {'''),
    ('''  prepareChunk<Config, kStoreScores>(args, operands, base);
}''', '''  prepareChunk<Config, kStoreScores>(args, operands, base);
  __syncthreads();
  if (threadIdx.x == 0)
    GDN_GRID_PREPARE_MARK(1);
}'''),
])
patch('gdn/device/delta_rule_fused.cuh', [
    ('''  extern __shared__ uint4 fusedShared[];''',
     '''  if (threadIdx.x == 0)
    GDN_GRID_SCAN_MARK(0);
  extern __shared__ uint4 fusedShared[];'''),
    ('''      if (!kInverse)
        waitForPrerequisiteGrid();
      if (elected)''', '''      if (!kInverse)
        waitForPrerequisiteGrid();
      if (threadIdx.x == 128 * kConsumers)
        GDN_GRID_SCAN_MARK(1);
      if (elected)'''),
    ('''  __syncthreads();

  // One warp copies chunk c's Q, K''', '''  __syncthreads();
  if (threadIdx.x == 0)
    GDN_GRID_SCAN_MARK(9);

  // One warp copies chunk c's Q, K'''),
    ('''          "setmaxnreg.dec.sync.aligned.u32 %0;\\n" ::"n"(F::kProducerRegisters));
#endif''', '''          "setmaxnreg.dec.sync.aligned.u32 %0;\\n" ::"n"(F::kProducerRegisters));
#endif
    if (threadIdx.x == 128 * kConsumers)
      GDN_GRID_SCAN_MARK(7);'''),
    ('''        "setmaxnreg.inc.sync.aligned.u32 %0;\\n" ::"n"(F::kConsumerRegisters));
#endif''', '''        "setmaxnreg.inc.sync.aligned.u32 %0;\\n" ::"n"(F::kConsumerRegisters));
#endif
  if (threadIdx.x == 0)
    GDN_GRID_SCAN_MARK(8);'''),
    ('''  for (int32_t c = start; c < end; ++c) {
    // Thread-derived offsets anew each chunk''',
     '''  if (threadIdx.x == 0)
    GDN_GRID_SCAN_MARK(2);
  for (int32_t c = start; c < end; ++c) {
    // Thread-derived offsets anew each chunk'''),
    ('''    mbarrierWait(produced + stage, phase);
    float out[32];''', '''    mbarrierWait(produced + stage, phase);
    if (threadIdx.x == 0 && c == start)
      GDN_GRID_SCAN_MARK(3);
    float out[32];'''),
    ('''  if (threadIdx.x % 128 == 0)
    bulkWaitAll(); // o's stores complete before the block ends''',
     '''  if (threadIdx.x % 128 == 0)
    bulkWaitAll(); // o's stores complete before the block ends
  if (threadIdx.x == 0)
    GDN_GRID_SCAN_MARK(4);'''),
    ('''        args.finalState[stateOffset(j, e)] = state[4 * j + e];
  }
}''', '''        args.finalState[stateOffset(j, e)] = state[4 * j + e];
  }
  if (threadIdx.x == 0)
    GDN_GRID_SCAN_MARK(5);
}'''),
])
print('grid-timeline: marked %s' % out)
