//===- chunkwise.cuh - the per-rank steps of chunkwise CP -------*- CUDA
//-*-===//
//
// Under chunkwise context parallelism every rank runs the core on its
// contiguous shard of the packed buffer (rows [r L, (r + 1) L) of T = P L).
// At most one sequence continues into the shard from the previous rank and
// at most one leaves it for the next (docs/parallel.md). These kernels do
// the per-rank bookkeeping the gdn_comm ops of that scheme define, from the
// global offsets on the device, without a host synchronisation:
//
//  - the shard's own packing (local_packing) and the two-sequence packing
//    of the leaving sequence's rows (summary_packing);
//  - the continuing sequence's initial conv and delta-rule states
//    (continue_conv_state, continue_state) and their gradients;
//  - the initial states of the leaving sequence's summary runs
//    (summary_initial_states) and their gradient;
//  - keeping the per-sequence entries a rank owns (the local half of
//    gather_sequence_states and reduce_sequence_states, whose sum runs on
//    gdnrt_all_reduce).
//
// Every kernel reads the global packing's status record (written by its
// validation, earlier in stream order): with invalid offsets it writes NaN
// into every float output and poisons derived offsets (cu_seqlens[0] = -1),
// so that nothing downstream computes from them and the kernels that
// validate the derived packing report it too.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_CHUNKWISE_CUH
#define GDN_DEVICE_CHUNKWISE_CUH

#include "gdn/device/common.cuh"
#include "gdn/device/packing.cuh"

#include <math.h>
#include <stdint.h>

namespace gdn {
namespace device {

/// Rank `rank`'s shard of a buffer cut into `ranks` equal contiguous
/// shards, and the sequences whose real tokens cross its edges (-1: none).
struct ShardSequences {
  int32_t begin, end;
  int32_t continuing; ///< real tokens begin before `begin` and reach into it
  int32_t leaving;    ///< real tokens reach past `end`
};

/// The last sequence whose slot starts before `row`, or -1. Sequences'
/// slots tile the buffer in order, so only that one can hold real tokens at
/// or after `row` among those that start before it.
__device__ inline int32_t lastStartingBefore(const PackingView &p,
                                             int32_t row) {
  int32_t low = 0, high = p.numSeqs - 1, found = -1;
  while (low <= high) {
    const int32_t middle = low + (high - low) / 2;
    if (p.begin(middle) < row) {
      found = middle;
      low = middle + 1;
    } else {
      high = middle - 1;
    }
  }
  return found;
}

/// The shard of `rank` and its crossing sequences; valid offsets only.
__device__ inline ShardSequences
findShardSequences(const PackingView &p, int32_t rank, int32_t ranks) {
  const int32_t rows = p.bufferTokens / ranks;
  ShardSequences shard{rank * rows, (rank + 1) * rows, -1, -1};
  auto reachesPast = [&](int32_t row) {
    const int32_t seq = lastStartingBefore(p, row);
    return seq >= 0 && p.begin(seq) + p.length(seq) > row ? seq : -1;
  };
  shard.continuing = reachesPast(shard.begin);
  shard.leaving = reachesPast(shard.end);
  return shard;
}

/// The rank whose shard holds sequence `seq`'s last real token (an empty
/// sequence's slot start; past the buffer, the last rank).
__device__ inline int32_t sequenceOwner(const PackingView &p, int32_t seq,
                                        int32_t ranks) {
  const int32_t rows = p.bufferTokens / ranks;
  if (rows == 0)
    return 0;
  const int32_t length = p.length(seq);
  const int32_t row = p.begin(seq) + (length > 0 ? length : 1) - 1;
  const int32_t owner = row / rows;
  return owner < ranks - 1 ? owner : ranks - 1;
}

__device__ __forceinline__ bool statusInvalid(const gdn_status_t *status) {
  return status->code != GDN_STATUS_OK;
}

/// Dynamic shared memory of the kernels below: the shard's sequences, or
/// the per-thread totals of localPackingBody.
constexpr unsigned kDerivedPackingThreads = 256;
constexpr size_t kChunkwiseSharedBytes = kDerivedPackingThreads * 4;

/// The shard's crossing sequences, found by thread 0 and shared through the
/// block's shared memory (every thread of the block must call it: one
/// barrier).
__device__ inline ShardSequences
blockShardSequences(const PackingView &p, int32_t rank, int32_t ranks) {
  extern __shared__ uint4 shared[];
  auto *found = reinterpret_cast<ShardSequences *>(shared);
  if (threadIdx.x == 0)
    *found = findShardSequences(p, rank, ranks);
  __syncthreads();
  return *found;
}

template <typename T> __device__ __forceinline__ T quietNaN() {
  return Element<T>::store(NAN);
}
template <> __device__ __forceinline__ double quietNaN<double>() { return NAN; }
template <typename T> __device__ __forceinline__ T zeroOf() {
  return Element<T>::store(0.0f);
}
template <> __device__ __forceinline__ double zeroOf<double>() { return 0.0; }

//===----------------------------------------------------------------------===//
// Derived packings
//===----------------------------------------------------------------------===//

/// The workspace of a packing computed on the device: its status record,
/// then its offsets (cu_seqlens, then cu_padded when padded).
struct DerivedPackingWorkspace {
  static constexpr size_t offsetsAt = PackingWorkspace::kStatusBytes;
  static size_t bytes(int64_t seqs, bool padded) {
    return offsetsAt + (padded ? 2 : 1) * (seqs + 1) * sizeof(int32_t);
  }
  static int32_t *cuSeqlens(void *workspace) {
    return reinterpret_cast<int32_t *>(static_cast<char *>(workspace) +
                                       offsetsAt);
  }
  static int32_t *cuPadded(void *workspace, int64_t seqs) {
    return cuSeqlens(workspace) + (seqs + 1);
  }
};

/// Offsets of a packing computed on the device: what a derived packing's
/// workspace holds after its status record.
struct DerivedPackingArgs {
  PackingView global;
  const gdn_status_t *globalStatus;
  int32_t rank, ranks;
  int32_t *cuSeqlens; ///< [n + 1]
  int32_t *cuPadded;  ///< [n + 1], or null when the result is not padded
  gdn_status_t *status;
};

/// The clip of a global row to rank's shard, relative to its first row.
__device__ __forceinline__ int32_t clipToShard(int32_t row, int32_t begin,
                                               int32_t end) {
  return (row < begin ? begin : row > end ? end : row) - begin;
}

/// gdn_comm.local_packing: every sequence's slot and real tokens clipped to
/// the shard. One block: the real counts are prefix-summed when the packing
/// is padded (each thread sums a contiguous run of sequences).
__device__ inline void localPackingBody(const DerivedPackingArgs &a) {
  extern __shared__ uint4 shared[];
  int32_t *totals = reinterpret_cast<int32_t *>(shared);
  const PackingView &p = a.global;
  const int32_t n = p.numSeqs;
  const bool invalid = statusInvalid(a.globalStatus);
  if (threadIdx.x == 0)
    *a.status = *a.globalStatus;
  if (invalid) {
    if (threadIdx.x == 0)
      a.cuSeqlens[0] = -1;
    return;
  }
  const int32_t rows = p.bufferTokens / a.ranks;
  const int32_t begin = a.rank * rows, end = begin + rows;
  if (!p.cuPadded) {
    // Unpadded slots are the real tokens: the clipped offsets are the
    // offsets clipped.
    for (int32_t i = threadIdx.x; i <= n; i += blockDim.x)
      a.cuSeqlens[i] = clipToShard(p.cuSeqlens[i], begin, end);
    return;
  }
  for (int32_t i = threadIdx.x; i <= n; i += blockDim.x)
    a.cuPadded[i] = clipToShard(p.cuPadded[i], begin, end);
  const int32_t per = (n + blockDim.x - 1) / blockDim.x;
  const int32_t first = threadIdx.x * per;
  const int32_t last = first + per < n ? first + per : n;
  auto realInShard = [&](int32_t seq) {
    const int32_t start = p.cuPadded[seq];
    return clipToShard(start + p.length(seq), begin, end) -
           clipToShard(start, begin, end);
  };
  int32_t sum = 0;
  for (int32_t seq = first; seq < last; ++seq)
    sum += realInShard(seq);
  totals[threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    int32_t running = 0;
    for (unsigned t = 0; t < blockDim.x; ++t) {
      const int32_t total = totals[t];
      totals[t] = running;
      running += total;
    }
  }
  __syncthreads();
  int32_t running = totals[threadIdx.x];
  if (threadIdx.x == 0)
    a.cuSeqlens[0] = 0;
  for (int32_t seq = first; seq < last; ++seq) {
    running += realInShard(seq);
    a.cuSeqlens[seq + 1] = running;
  }
}

/// gdn_comm.summary_packing: the leaving sequence's rows of the shard as
/// sequence 1 of a two-sequence packing of the shard, after a first
/// sequence of padding (the rows before it): cu_seqlens [0, 0, n] and
/// cu_padded [0, s, L], with n = L - s real rows from row s. Without a
/// leaving sequence both sequences are empty ([0, 0, 0], [0, L, L]).
__device__ inline void summaryPackingBody(const DerivedPackingArgs &a) {
  if (threadIdx.x != 0)
    return;
  *a.status = *a.globalStatus;
  if (statusInvalid(a.globalStatus)) {
    a.cuSeqlens[0] = -1;
    return;
  }
  const ShardSequences shard = findShardSequences(a.global, a.rank, a.ranks);
  const int32_t rows = shard.end - shard.begin;
  int32_t start = rows;
  if (shard.leaving >= 0) {
    const int32_t first = a.global.begin(shard.leaving);
    start = first > shard.begin ? first - shard.begin : 0;
  }
  a.cuSeqlens[0] = 0;
  a.cuSeqlens[1] = 0;
  a.cuSeqlens[2] = rows - start;
  a.cuPadded[0] = 0;
  a.cuPadded[1] = start;
  a.cuPadded[2] = rows;
}

//===----------------------------------------------------------------------===//
// Initial states of the shard's sequences
//===----------------------------------------------------------------------===//

/// gdn_comm.continue_conv_state: out [N, C, taps] is `initial` (or zero)
/// except for the continuing sequence, whose tap j is buffer row
/// begin - taps + j: the halo's row j where it belongs to the sequence, its
/// initial state before the sequence's first token.
template <typename T> struct ContinueConvStateArgs {
  PackingView global;
  const gdn_status_t *status;
  int32_t rank, ranks;
  const T *halo;    ///< [taps, C]
  const T *initial; ///< [N, C, taps] or null
  T *out;           ///< [N, C, taps]
  int32_t channels, taps;
};

template <typename T>
__device__ inline void
continueConvStateBody(const ContinueConvStateArgs<T> &a) {
  const bool invalid = statusInvalid(a.status);
  ShardSequences shard{0, 0, -1, -1};
  if (!invalid)
    shard = blockShardSequences(a.global, a.rank, a.ranks);
  const int64_t total =
      static_cast<int64_t>(a.global.numSeqs) * a.channels * a.taps;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < total; i += stride) {
    if (invalid) {
      a.out[i] = quietNaN<T>();
      continue;
    }
    const int32_t tap = static_cast<int32_t>(i % a.taps);
    const int32_t channel = static_cast<int32_t>(i / a.taps % a.channels);
    const int32_t seq = static_cast<int32_t>(i / a.taps / a.channels);
    T value = a.initial ? a.initial[i] : zeroOf<T>();
    if (seq == shard.continuing) {
      const int32_t first = a.global.begin(seq);
      const int32_t row = shard.begin - a.taps + tap;
      value =
          row >= first
              ? a.halo[static_cast<int64_t>(tap) * a.channels + channel]
          : a.initial
              ? a.initial[(static_cast<int64_t>(seq) * a.channels + channel) *
                              a.taps +
                          a.taps - (first - row)]
              : zeroOf<T>();
    }
    a.out[i] = value;
  }
}

/// gdn_comm.continue_conv_state_grad: the halo's cotangent [taps, C] (the
/// continuing sequence's taps read from it; in `Halo`, which may be
/// narrower than the states': a projection input's type) and, with
/// `initialGrad`, the initial conv states' ([N, C, taps]: every other
/// sequence's entry, and the continuing one's taps from before its first
/// token).
template <typename T, typename Halo = T> struct ContinueConvStateGradArgs {
  PackingView global;
  const gdn_status_t *status;
  int32_t rank, ranks;
  const T *stateGrad; ///< [N, C, taps]
  Halo *haloGrad;     ///< [taps, C]
  T *initialGrad;     ///< [N, C, taps] or null
  int32_t channels, taps;
};

template <typename T, typename Halo>
__device__ inline void
continueConvStateGradBody(const ContinueConvStateGradArgs<T, Halo> &a) {
  const bool invalid = statusInvalid(a.status);
  ShardSequences shard{0, 0, -1, -1};
  if (!invalid)
    shard = blockShardSequences(a.global, a.rank, a.ranks);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t start =
      blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int32_t cont = shard.continuing;
  // Rows before the continuing sequence's first token: its taps there come
  // from its initial state (b - first of them, at most taps).
  const int32_t before =
      invalid || cont < 0 ? 0 : shard.begin - a.global.begin(cont);
  const int64_t haloTotal = static_cast<int64_t>(a.taps) * a.channels;
  for (int64_t i = start; i < haloTotal; i += stride) {
    if (invalid) {
      a.haloGrad[i] = quietNaN<Halo>();
      continue;
    }
    const int32_t tap = static_cast<int32_t>(i / a.channels);
    const int32_t channel = static_cast<int32_t>(i % a.channels);
    a.haloGrad[i] =
        cont >= 0 && tap >= a.taps - before
            ? Element<Halo>::store(Element<T>::load(
                  a.stateGrad[(static_cast<int64_t>(cont) * a.channels +
                               channel) *
                                  a.taps +
                              tap]))
            : zeroOf<Halo>();
  }
  if (!a.initialGrad)
    return;
  const int64_t total =
      static_cast<int64_t>(a.global.numSeqs) * a.channels * a.taps;
  for (int64_t i = start; i < total; i += stride) {
    if (invalid) {
      a.initialGrad[i] = quietNaN<T>();
      continue;
    }
    const int32_t tap = static_cast<int32_t>(i % a.taps);
    const int32_t seq = static_cast<int32_t>(i / a.taps / a.channels);
    // The continuing sequence's initial tap i fed state tap i - before.
    a.initialGrad[i] = seq != cont     ? a.stateGrad[i]
                       : tap >= before ? a.stateGrad[i - before]
                                       : zeroOf<T>();
  }
}

/// gdn_comm.continue_state (and, with `gradient`, continue_state_grad):
/// out [N, E] is `initial` (or zero) with the continuing sequence's entry
/// replaced by `incoming` [E]. The gradient reads `stateGrad` [N, E] into
/// `incomingGrad` (the continuing entry, or zero) and `initialGrad` (the
/// rest, the continuing entry zeroed; may be null).
template <typename T> struct ContinueStateArgs {
  PackingView global;
  const gdn_status_t *status;
  int32_t rank, ranks;
  int64_t entry; ///< E: elements per sequence
  bool gradient;
  // Forward.
  const T *incoming;
  const T *initial;
  T *out;
  // Gradient.
  const T *stateGrad;
  T *incomingGrad;
  T *initialGrad;
};

template <typename T>
__device__ inline void continueStateBody(const ContinueStateArgs<T> &a) {
  const bool invalid = statusInvalid(a.status);
  ShardSequences shard{0, 0, -1, -1};
  if (!invalid)
    shard = blockShardSequences(a.global, a.rank, a.ranks);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t start =
      blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t total = a.global.numSeqs * a.entry;
  const int64_t contBegin = shard.continuing * a.entry;
  auto isContinuing = [&](int64_t i) {
    return shard.continuing >= 0 && i >= contBegin && i < contBegin + a.entry;
  };
  if (!a.gradient) {
    for (int64_t i = start; i < total; i += stride)
      a.out[i] = invalid           ? quietNaN<T>()
                 : isContinuing(i) ? a.incoming[i - contBegin]
                 : a.initial       ? a.initial[i]
                                   : zeroOf<T>();
    return;
  }
  for (int64_t i = start; i < a.entry; i += stride)
    a.incomingGrad[i] = invalid                 ? quietNaN<T>()
                        : shard.continuing >= 0 ? a.stateGrad[contBegin + i]
                                                : zeroOf<T>();
  if (a.initialGrad)
    for (int64_t i = start; i < total; i += stride)
      a.initialGrad[i] = invalid           ? quietNaN<T>()
                         : isContinuing(i) ? zeroOf<T>()
                                           : a.stateGrad[i];
}

//===----------------------------------------------------------------------===//
// The summary of the leaving sequence
//===----------------------------------------------------------------------===//

/// gdn_comm.summary_initial_states: the initial states of the two summary
/// runs over summary_packing's two sequences. The partial state's run
/// (`partial`, [2, HV, K, V]) starts the leaving sequence from its own
/// initial state when it starts in the shard (zero otherwise); the
/// transition's run (`transition`, [2, HV, K, K], over zero values) starts
/// it from the identity when it began before the shard (zero otherwise, so
/// that its transition is zero). Sequence 0 (padding) starts from zero in
/// both. With `incoming`, the partial run starts a leaving sequence that
/// began before the shard from it instead (its true state at the shard's
/// start). With `gradient`, the gradient of the partial run's initial states
/// ([2, HV, K, V]) is scattered back to the leaving sequence's entry of
/// `initialGrad` [N, HV, K, V] when it starts in the shard.
template <typename T> struct SummaryStatesArgs {
  PackingView global;
  const gdn_status_t *status;
  int32_t rank, ranks;
  int32_t valueHeads, keyDim, valueDim;
  bool gradient;
  // Forward.
  const T *initial;  ///< [N, HV, K, V] or null
  const T *incoming; ///< [HV, K, V] or null
  T *partial;        ///< [2, HV, K, V]
  T *transition;     ///< [2, HV, K, K]
  // Gradient.
  const T *partialInitialGrad; ///< [2, HV, K, V]
  T *initialGrad;              ///< [N, HV, K, V]
};

template <typename T>
__device__ inline void summaryStatesBody(const SummaryStatesArgs<T> &a) {
  const bool invalid = statusInvalid(a.status);
  ShardSequences shard{0, 0, -1, -1};
  if (!invalid)
    shard = blockShardSequences(a.global, a.rank, a.ranks);
  const bool leaves = shard.leaving >= 0;
  const bool startsHere =
      leaves && a.global.begin(shard.leaving) >= shard.begin;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t start =
      blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t partialEntry =
      static_cast<int64_t>(a.valueHeads) * a.keyDim * a.valueDim;
  const int64_t leavingBegin = shard.leaving * partialEntry;
  if (a.gradient) {
    const int64_t total = a.global.numSeqs * partialEntry;
    for (int64_t i = start; i < total; i += stride)
      a.initialGrad[i] =
          invalid ? quietNaN<T>()
          : startsHere && i >= leavingBegin && i < leavingBegin + partialEntry
              ? a.partialInitialGrad[partialEntry + (i - leavingBegin)]
              : zeroOf<T>();
    return;
  }
  for (int64_t i = start; i < 2 * partialEntry; i += stride) {
    const bool second = i >= partialEntry;
    a.partial[i] = invalid ? quietNaN<T>()
                   : second && startsHere && a.initial
                       ? a.initial[leavingBegin + (i - partialEntry)]
                   : second && leaves && !startsHere && a.incoming
                       ? a.incoming[i - partialEntry]
                       : zeroOf<T>();
  }
  const int64_t transitionEntry =
      static_cast<int64_t>(a.valueHeads) * a.keyDim * a.keyDim;
  const T one = Element<T>::store(1.0f);
  for (int64_t i = start; i < 2 * transitionEntry; i += stride) {
    const bool second = i >= transitionEntry;
    const int64_t within = (i % transitionEntry) % (a.keyDim * a.keyDim);
    const bool diagonal = within / a.keyDim == within % a.keyDim;
    a.transition[i] = invalid ? quietNaN<T>()
                      : second && leaves && !startsHere && diagonal
                          ? one
                          : zeroOf<T>();
  }
}

//===----------------------------------------------------------------------===//
// Sequence owners
//===----------------------------------------------------------------------===//

/// Keeps the entries [N, E] of the sequences this rank owns (the one whose
/// shard holds their last real token) and zeroes the rest; `out` may be
/// `in`. gather_sequence_states runs it before an all-reduce (each entry
/// then comes from its owner), reduce_sequence_states after one.
template <typename T> struct OwnedSequencesArgs {
  PackingView global;
  const gdn_status_t *status;
  int32_t rank, ranks;
  int64_t entry;
  const T *in;
  T *out;
};

template <typename T>
__device__ inline void ownedSequencesBody(const OwnedSequencesArgs<T> &a) {
  const bool invalid = statusInvalid(a.status);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t total = a.global.numSeqs * a.entry;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < total; i += stride) {
    const int32_t seq = static_cast<int32_t>(i / a.entry);
    a.out[i] = invalid                                           ? quietNaN<T>()
               : sequenceOwner(a.global, seq, a.ranks) == a.rank ? a.in[i]
                                                                 : zeroOf<T>();
  }
}

#ifndef GDN_DEVICE_EMULATION // host emulation runs the kernel bodies itself

constexpr unsigned kChunkwiseThreads = 256;

/// Blocks for `elements` grid-stride elements: at most a few waves.
inline unsigned chunkwiseBlocks(int64_t elements) {
  const int64_t blocks = (elements + kChunkwiseThreads - 1) / kChunkwiseThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 4096 ? 4096 : blocks);
}

template <class Args>
__global__ void __launch_bounds__(kDerivedPackingThreads)
    localPackingKernel(const __grid_constant__ Args args) {
  localPackingBody(args);
}
template <class Args>
__global__ void __launch_bounds__(kDerivedPackingThreads)
    summaryPackingKernel(const __grid_constant__ Args args) {
  summaryPackingBody(args);
}
template <class Args>
__global__ void __launch_bounds__(kChunkwiseThreads)
    continueConvStateKernel(const __grid_constant__ Args args) {
  continueConvStateBody(args);
}
template <class Args>
__global__ void __launch_bounds__(kChunkwiseThreads)
    continueConvStateGradKernel(const __grid_constant__ Args args) {
  continueConvStateGradBody(args);
}
template <class Args>
__global__ void __launch_bounds__(kChunkwiseThreads)
    continueStateKernel(const __grid_constant__ Args args) {
  continueStateBody(args);
}
template <class Args>
__global__ void __launch_bounds__(kChunkwiseThreads)
    summaryStatesKernel(const __grid_constant__ Args args) {
  summaryStatesBody(args);
}
template <class Args>
__global__ void __launch_bounds__(kChunkwiseThreads)
    ownedSequencesKernel(const __grid_constant__ Args args) {
  ownedSequencesBody(args);
}

// Host launchers: each enqueues one kernel on `stream`.

inline cudaError_t buildLocalPacking(const DerivedPackingArgs &args,
                                     cudaStream_t stream) {
  localPackingKernel<<<1, kDerivedPackingThreads, kChunkwiseSharedBytes,
                       stream>>>(args);
  return cudaGetLastError();
}

inline cudaError_t buildSummaryPacking(const DerivedPackingArgs &args,
                                       cudaStream_t stream) {
  summaryPackingKernel<<<1, 32, 0, stream>>>(args);
  return cudaGetLastError();
}

template <typename T>
cudaError_t continueConvState(const ContinueConvStateArgs<T> &args,
                              cudaStream_t stream) {
  continueConvStateKernel<<<
      chunkwiseBlocks(static_cast<int64_t>(args.global.numSeqs) *
                      args.channels * args.taps),
      kChunkwiseThreads, kChunkwiseSharedBytes, stream>>>(args);
  return cudaGetLastError();
}

template <typename T, typename Halo>
cudaError_t
continueConvStateGrad(const ContinueConvStateGradArgs<T, Halo> &args,
                      cudaStream_t stream) {
  const int64_t seqs = args.global.numSeqs > 1 ? args.global.numSeqs : 1;
  continueConvStateGradKernel<<<
      chunkwiseBlocks(seqs * args.channels * args.taps), kChunkwiseThreads,
      kChunkwiseSharedBytes, stream>>>(args);
  return cudaGetLastError();
}

template <typename T>
cudaError_t continueState(const ContinueStateArgs<T> &args,
                          cudaStream_t stream) {
  const int64_t seqs = args.global.numSeqs > 1 ? args.global.numSeqs : 1;
  continueStateKernel<<<chunkwiseBlocks(seqs * args.entry), kChunkwiseThreads,
                        kChunkwiseSharedBytes, stream>>>(args);
  return cudaGetLastError();
}

template <typename T>
cudaError_t summaryStates(const SummaryStatesArgs<T> &args,
                          cudaStream_t stream) {
  const int64_t seqs = args.global.numSeqs > 2 ? args.global.numSeqs : 2;
  const int64_t dim = args.keyDim > args.valueDim ? args.keyDim : args.valueDim;
  summaryStatesKernel<<<
      chunkwiseBlocks(seqs * args.valueHeads * args.keyDim * dim),
      kChunkwiseThreads, kChunkwiseSharedBytes, stream>>>(args);
  return cudaGetLastError();
}

template <typename T>
cudaError_t keepOwnedSequences(const OwnedSequencesArgs<T> &args,
                               cudaStream_t stream) {
  ownedSequencesKernel<<<chunkwiseBlocks(args.global.numSeqs * args.entry),
                         kChunkwiseThreads, kChunkwiseSharedBytes, stream>>>(
      args);
  return cudaGetLastError();
}

#endif // GDN_DEVICE_EMULATION

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_CHUNKWISE_CUH
