//===- DeviceEmulator.cpp - run device kernel bodies on host threads ------===//

#include "DeviceEmulator.h"

#include <barrier>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

thread_local dim3 threadIdx, blockIdx;
dim3 gridDim, blockDim;

namespace gdn::device {
/// The dynamic shared memory kernels declare as `extern __shared__ uint4
/// shared[]`; blocks without a cluster run one at a time, so one array
/// serves them all (the blocks of a cluster run at once, each in an array
/// of its own that alignSharedTo1024 maps this one to: thisBlockShared). It
/// starts at shared-window address 0, 1024-byte aligned as on the GPU (where
/// 128-byte swizzling repeats every 1024 bytes of the window).
alignas(1024) uint4 shared[emulation::kSharedWords];
/// The other names kernels give their dynamic shared memory: the same
/// bytes (GCC variable aliases of `shared`).
extern uint4 prepareShared[] __attribute__((alias("_ZN3gdn6device6sharedE")));
extern uint4 wgmmaShared[] __attribute__((alias("_ZN3gdn6device6sharedE")));
extern uint4 fusedShared[] __attribute__((alias("_ZN3gdn6device6sharedE")));
/// The bytes of `shared` the running launch reserved (runGrid's sharedBytes).
size_t sharedLimit = sizeof(shared);
/// Bytes after the limit that must keep the fill pattern.
constexpr size_t kSharedGuardBytes = 4096;
} // namespace gdn::device

namespace gdn::device::emulation {
namespace {

[[noreturn]] void fail(const char *what) {
  std::fprintf(stderr, "device emulation: %s (block %u,%u thread %u)\n", what,
               blockIdx.x, blockIdx.y, threadIdx.x);
  std::abort();
}

struct Copy {
  void *to;
  uint4 data;
  size_t bytes;
};
/// A thread's copies: those not yet committed, then one entry per group.
struct CopyState {
  std::vector<Copy> open;
  std::deque<std::vector<Copy>> groups;
};
thread_local CopyState copies;

/// A TMA store as issued: it reads its shared-memory box only when a
/// bulkWaitRead or bulkWaitAll of the issuing thread retires its group,
/// the latest moment the hardware may, so that a box overwritten before
/// that wait is stored overwritten.
struct TmaStore {
  const CUtensorMap *map;
  int x, y;
  const void *from;
};
/// A thread's TMA stores: those not yet committed, then one entry per group.
struct StoreState {
  std::vector<TmaStore> open;
  std::deque<std::vector<TmaStore>> groups;
};
thread_local StoreState stores;

/// One lane's operands of a warp-collective mma.
struct MmaLane {
  uint32_t a[4], b[2];
};

/// One warpgroup-collective wgmma as issued: the descriptors and every
/// thread's A fragment (when A is in registers).
struct WgmmaOp {
  int n = 0;
  bool aInRegisters = false, transposeA = false, transposeB = false, accumulate = false;
  uint64_t descA = 0, descB = 0;
  uint32_t a[128][4] = {};
};
/// A warpgroup's products in flight, oldest first, numbered from `first`.
struct Warpgroup {
  Warpgroup() : barrier(128) {}
  std::barrier<> barrier;
  std::mutex mutex;
  std::deque<WgmmaOp> ops;
  size_t first = 0;
};
/// A thread's products in flight: the op's number and the accumulators it
/// writes, per commit group; the accumulators' values while poisoned.
struct PendingProduct {
  size_t op;
  float *d;
};
struct WgmmaThread {
  size_t issued = 0;
  std::vector<PendingProduct> open;
  std::deque<std::vector<PendingProduct>> groups;
  std::map<float *, std::vector<float>> values;
};
thread_local WgmmaThread products;

/// A copy counted on an mbarrier: its bytes land when the phase completes.
struct LandingCopy {
  void *to;
  std::vector<unsigned char> bytes;
};
/// An mbarrier's state (kept beside shared memory, keyed by its address).
struct Mbarrier {
  unsigned count = 0, pending = 0, phase = 0;
  int64_t bytes = 0; // expected transaction bytes not yet landed
  bool done = false; // every arrival and byte is in; the copies not landed
  std::vector<LandingCopy> copies;
};

struct Cluster;
struct Block {
  Block(unsigned threads, char *shared)
      : shared(shared), barrier(threads), exchange(threads), mma(threads),
        rows(threads) {
    for (unsigned first = 0; first < threads; first += 32)
      warps.push_back(std::make_unique<std::barrier<>>(
          std::min<unsigned>(32, threads - first)));
    for (unsigned first = 0; first + 128 <= threads; first += 128)
      warpgroups.push_back(std::make_unique<Warpgroup>());
  }
  /// This block's dynamic shared memory (window address 0).
  char *shared;
  Cluster *cluster = nullptr;
  unsigned rank = 0; ///< in its cluster
  std::vector<std::unique_ptr<Warpgroup>> warpgroups;
  std::mutex mbarrierMutex;
  std::condition_variable mbarrierChanged;
  std::map<const void *, Mbarrier> mbarriers;
  std::map<int, std::unique_ptr<std::barrier<>>> named;
  int namedCount[16] = {};
  std::barrier<> barrier;
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  std::vector<float> exchange;
  std::vector<MmaLane> mma;
  std::vector<const uint16_t *> rows; // ldmatrix row addresses
};
/// The blocks of a cluster, which run at once, and the barrier of all their
/// threads (barrier.cluster).
struct Cluster {
  explicit Cluster(unsigned threads) : barrier(threads) {}
  std::vector<Block *> blocks;
  std::barrier<> barrier;
};
thread_local Block *block = nullptr;
/// This thread's block's shared memory.
char *blockShared() { return block->shared; }
std::vector<std::pair<const char *, const char *>> sources;
bool ownershipRequired = true;

} // namespace

void setCopySource(const void *begin, const void *end) {
  sources.clear();
  addCopySource(begin, end);
}

void addCopySource(const void *begin, const void *end) {
  sources.emplace_back(static_cast<const char *>(begin),
                       static_cast<const char *>(end));
}

void setCopyOwnership(bool required) { ownershipRequired = required; }

void syncThreads() { block->barrier.arrive_and_wait(); }

void syncWarp() {
  const unsigned warp = threadIdx.x / 32;
  if (warp * 32 + 32 > blockDim.x)
    fail("__syncwarp in a partial warp");
  block->warps[warp]->arrive_and_wait();
}

float shuffleUp(float value, unsigned delta) {
  const unsigned self = threadIdx.x, warp = self / 32, lane = self % 32;
  if (warp * 32 + 32 > blockDim.x)
    fail("a full-warp shuffle in a partial warp");
  block->exchange[self] = value;
  block->warps[warp]->arrive_and_wait();
  const float result = lane >= delta ? block->exchange[self - delta] : value;
  block->warps[warp]->arrive_and_wait();
  return result;
}

float shuffle(float value, int source) {
  const unsigned self = threadIdx.x, warp = self / 32;
  if (warp * 32 + 32 > blockDim.x || source < 0 || source >= 32)
    fail("a full-warp shuffle in a partial warp, or from no lane");
  block->exchange[self] = value;
  block->warps[warp]->arrive_and_wait();
  const float result = block->exchange[warp * 32 + source];
  block->warps[warp]->arrive_and_wait();
  return result;
}

float shuffleXor(float value, int laneMask) {
  const unsigned self = threadIdx.x, warp = self / 32;
  const unsigned partner = warp * 32 + ((self % 32) ^ laneMask);
  if (partner >= blockDim.x)
    fail("a shuffle reads a lane the block does not have");
  block->exchange[self] = value;
  block->warps[warp]->arrive_and_wait();
  const float result = block->exchange[partner];
  block->warps[warp]->arrive_and_wait(); // nobody overwrites before all read
  return result;
}

/// One asynchronous copy of `bytes` (8 or 16): checked, its destination
/// poisoned until a wait retires its group. Ownership is by word of the
/// copy's size (a ring of 8-byte slots is owned by 8-byte word).
static void copyAsync(void *to, const void *from, size_t bytes) {
  const char *source = static_cast<const char *>(from);
  bool inside = false;
  for (const auto &[begin, end] : sources)
    inside = inside || (source >= begin && source + bytes <= end);
  if (!inside)
    fail("an asynchronous copy reads outside its source buffers");
  if (reinterpret_cast<uintptr_t>(source) % bytes != 0 ||
      reinterpret_cast<uintptr_t>(to) % bytes != 0)
    fail("an asynchronous copy is not aligned to its size");
  const char *base = blockShared();
  const long offset = static_cast<const char *>(to) - base;
  if (offset < 0 || offset + static_cast<long>(bytes) > static_cast<long>(sizeof(shared)))
    fail("an asynchronous copy lands outside shared memory");
  if (offset + static_cast<long>(bytes) > static_cast<long>(sharedLimit))
    fail("an asynchronous copy lands past the launch's dynamic shared memory");
  const long index = offset / static_cast<long>(bytes);
  if (ownershipRequired && index % blockDim.x != threadIdx.x)
    fail("an asynchronous copy lands in a word another thread owns");
  Copy copy{to, {}, bytes};
  std::memcpy(&copy.data, source, bytes);
  const float nan = NAN;
  for (size_t at = 0; at < bytes; at += 4)
    std::memcpy(static_cast<char *>(to) + at, &nan, 4);
  copies.open.push_back(copy);
}

void copyAsync16(void *to, const void *from) { copyAsync(to, from, 16); }

void copyAsync8(void *to, const void *from) { copyAsync(to, from, 8); }

void commitAsyncCopies() {
  copies.groups.push_back(std::move(copies.open));
  copies.open.clear();
}

void waitAsyncCopies(int pending) {
  while (static_cast<int>(copies.groups.size()) > pending) {
    for (const Copy &copy : copies.groups.front())
      std::memcpy(copy.to, &copy.data, copy.bytes);
    copies.groups.pop_front();
  }
}

namespace {
float bf16Value(uint32_t reg, int half) {
  const uint32_t word = (half ? reg >> 16 : reg & 0xffffu) << 16;
  float value;
  std::memcpy(&value, &word, 4);
  return value;
}

/// Publishes this lane's mma operands and waits for the whole warp's: the
/// return value is the warp's 32 lanes' operands (read them, then call
/// finishMma before anything else).
const MmaLane *exchangeMmaOperands(const uint32_t a[4], const uint32_t b[2]) {
  const unsigned self = threadIdx.x, warp = self / 32, first = warp * 32;
  if (first + 32 > blockDim.x)
    fail("an mma runs in a warp of fewer than 32 lanes");
  MmaLane &mine = block->mma[self];
  std::memcpy(mine.a, a, sizeof(mine.a));
  std::memcpy(mine.b, b, sizeof(mine.b));
  block->warps[warp]->arrive_and_wait();
  return &block->mma[first];
}

/// d += A B for this lane's four accumulator elements (m16n8 layout,
/// mma.cuh), once every lane has decoded A and B: nobody overwrites the
/// operands before the whole warp has read them.
template <int kDepth>
void finishMma(float d[4], const float (&A)[16][kDepth],
               const float (&B)[kDepth][8]) {
  block->warps[threadIdx.x / 32]->arrive_and_wait();
  const unsigned lane = threadIdx.x % 32;
  for (int i = 0; i < 4; ++i) {
    const int row = (lane >> 2) + (i >= 2 ? 8 : 0),
              col = 2 * (lane & 3) + (i & 1);
    double sum = d[i];
    for (int k = 0; k < kDepth; ++k)
      sum += static_cast<double>(A[row][k]) * B[k][col];
    d[i] = static_cast<float>(sum);
  }
}

/// The value the tensor cores read from a tf32 operand register: its top
/// 19 bits.
float tf32Value(uint32_t reg) {
  const uint32_t word = reg & 0xffffe000u;
  float value;
  std::memcpy(&value, &word, 4);
  return value;
}
} // namespace

void mmaBf16m16n8k16(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  const MmaLane *lanes = exchangeMmaOperands(a, b);
  // Decode the whole warp's operands with the PTX ISA layouts (mma.cuh).
  float A[16][16], B[16][8];
  for (unsigned lane = 0; lane < 32; ++lane) {
    const MmaLane &in = lanes[lane];
    const int g = lane >> 2, t = lane & 3;
    for (int i = 0; i < 8; ++i) {
      const int row = g + ((i & 2) ? 8 : 0);
      const int col = 2 * t + (i & 1) + (i >= 4 ? 8 : 0);
      A[row][col] = bf16Value(in.a[i / 2], i & 1);
    }
    for (int i = 0; i < 4; ++i)
      B[2 * t + (i & 1) + (i >= 2 ? 8 : 0)][g] = bf16Value(in.b[i / 2], i & 1);
  }
  finishMma(d, A, B);
}

void mmaTf32m16n8k8(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  const MmaLane *lanes = exchangeMmaOperands(a, b);
  float A[16][8], B[8][8];
  for (unsigned lane = 0; lane < 32; ++lane) {
    const MmaLane &in = lanes[lane];
    const int g = lane >> 2, t = lane & 3;
    for (int i = 0; i < 4; ++i)
      A[g + (i & 1) * 8][t + (i >> 1) * 4] = tf32Value(in.a[i]);
    for (int i = 0; i < 2; ++i)
      B[t + 4 * i][g] = tf32Value(in.b[i]);
  }
  finishMma(d, A, B);
}

uint32_t roundToTf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7f800000u) == 0x7f800000u)
    return bits; // NaN and infinities
  // To nearest, ties to even (sm_90's cvt.rn): a carry into the exponent is
  // the right result (to 2^e, or to infinity).
  return (bits + 0xfffu + ((bits >> 13) & 1u)) & 0xffffe000u;
}

void loadMatrices(uint32_t r[4], const void *row, bool transpose) {
  const unsigned self = threadIdx.x, warp = self / 32, first = warp * 32;
  if (first + 32 > blockDim.x)
    fail("an ldmatrix runs in a warp of fewer than 32 lanes");
  const char *begin = blockShared();
  const char *at = static_cast<const char *>(row);
  if (at < begin || at + 16 > begin + sizeof(shared))
    fail("an ldmatrix row is outside shared memory");
  if (reinterpret_cast<uintptr_t>(at) % 16 != 0)
    fail("an ldmatrix row is not 16-byte aligned");
  block->rows[self] = static_cast<const uint16_t *>(row);
  block->warps[warp]->arrive_and_wait();
  // The PTX ISA distribution: register i of lane l holds row l / 4, columns
  // 2 (l % 4) and + 1 of matrix i (transposed: those rows of column l / 4).
  const unsigned lane = self % 32;
  for (int i = 0; i < 4; ++i) {
    const uint16_t *const *matrix = &block->rows[first + 8 * i];
    uint32_t low, high;
    if (transpose) {
      low = matrix[2 * (lane % 4)][lane / 4];
      high = matrix[2 * (lane % 4) + 1][lane / 4];
    } else {
      low = matrix[lane / 4][2 * (lane % 4)];
      high = matrix[lane / 4][2 * (lane % 4) + 1];
    }
    r[i] = low | (high << 16);
  }
  block->warps[warp]->arrive_and_wait(); // nobody overwrites before all read
}

uint32_t sharedAddress(const void *p) {
  const char *begin = blockShared();
  const char *at = static_cast<const char *>(p);
  if (at < begin || at >= begin + sizeof(shared))
    fail("a shared-window address of a pointer outside shared memory");
  return static_cast<uint32_t>(at - begin);
}

void storeMatricesTransposed(void *row, const uint32_t r[4]) {
  const unsigned self = threadIdx.x, warp = self / 32, first = warp * 32;
  if (first + 32 > blockDim.x)
    fail("an stmatrix runs in a warp of fewer than 32 lanes");
  const char *begin = blockShared();
  const char *at = static_cast<const char *>(row);
  if (at < begin || at + 16 > begin + sharedLimit)
    fail("an stmatrix row is outside the launch's shared memory");
  if (reinterpret_cast<uintptr_t>(at) % 16 != 0)
    fail("an stmatrix row is not 16-byte aligned");
  block->rows[self] = static_cast<const uint16_t *>(row);
  block->warps[warp]->arrive_and_wait();
  // Register i of lane l: rows 2 (l % 4) and + 1, column l / 4 of matrix i.
  const unsigned lane = self % 32;
  for (int i = 0; i < 4; ++i) {
    const uint16_t *const *matrix = &block->rows[first + 8 * i];
    const_cast<uint16_t *>(matrix[2 * (lane % 4)])[lane / 4] =
        static_cast<uint16_t>(r[i] & 0xffffu);
    const_cast<uint16_t *>(matrix[2 * (lane % 4) + 1])[lane / 4] =
        static_cast<uint16_t>(r[i] >> 16);
  }
  block->warps[warp]->arrive_and_wait(); // nobody reuses the rows before all wrote
}

namespace {
Warpgroup &myWarpgroup() {
  const unsigned group = threadIdx.x / 128;
  if (group >= block->warpgroups.size())
    fail("a wgmma runs in a warpgroup of fewer than 128 threads");
  return *block->warpgroups[group];
}

/// The bf16 at shared-window address `address`, which must lie in the
/// launch's shared memory.
float sharedBf16(uint64_t address) {
  if (address + 2 > sharedLimit)
    fail("a wgmma operand lies outside the launch's shared memory");
  uint16_t bits;
  std::memcpy(&bits, blockShared() + address, 2);
  return bf16Value(bits, 0);
}

/// Element (row, k) of a 16-deep shared-memory operand through a matrix
/// descriptor (PTX ISA, "Matrix Descriptor Format"): `row` is n of B or m
/// of A; K-major tiles hold rows of k, MN-major ones (transposed) rows of
/// the other index. Core matrices are 8 x 16 bytes; without swizzling the
/// leading offset steps along k and the stride along the other index; with
/// 128-byte swizzling an 8-row atom is 1024 bytes of 128-byte rows whose
/// 16-byte pieces are permuted by XOR with the row (address bits 4-6 ^=
/// bits 7-9), the stride steps between atoms along k (MN-major) or the rows'
/// index (K-major), and the leading offset between 64-element blocks of an
/// MN-major row.
float descriptorElement(uint64_t desc, bool mnMajor, int row, int k) {
  const uint64_t start = (desc & 0x3fff) << 4;
  const uint64_t leading = ((desc >> 16) & 0x3fff) << 4;
  const uint64_t stride = ((desc >> 32) & 0x3fff) << 4;
  const int baseOffset = static_cast<int>((desc >> 49) & 7);
  const int layout = static_cast<int>(desc >> 62);
  if (baseOffset != 0)
    fail("a wgmma descriptor with a base offset (not emulated)");
  uint64_t address;
  if (layout == 0) {
    address = mnMajor ? start + (k / 8) * leading + (row / 8) * stride +
                            (k % 8) * 16 + (row % 8) * 2
                      : start + (k / 8) * leading + (row / 8) * stride +
                            (row % 8) * 16 + (k % 8) * 2;
  } else if (layout == 1) {
    address = mnMajor ? start + (row / 64) * leading + (k / 8) * stride +
                            (k % 8) * 128 + (row % 64) * 2
                      : start + (row / 8) * stride + (row % 8) * 128 + k * 2;
    address ^= ((address >> 7) & 7) << 4;
  } else {
    fail("a wgmma descriptor with 64- or 32-byte swizzling (not emulated)");
  }
  return sharedBf16(address);
}

/// Computes one retired product into this thread's accumulator values.
void retireProduct(const WgmmaOp &op, std::vector<float> &d) {
  const unsigned self = threadIdx.x % 128, warp = self / 32, lane = self % 32;
  const int g = lane / 4, t = lane % 4;
  // A (64 x 16): the warpgroup's registers (mma.sync's A layout per warp of
  // 16 rows) or a K-major shared tile.
  float A[2][16];
  for (int half = 0; half < 2; ++half) {
    const int m = 16 * warp + g + 8 * half;
    for (int k = 0; k < 16; ++k) {
      if (op.aInRegisters) {
        // Lane (g, t) of warp m / 16 holds row g (+8) at columns 2t, 2t + 1
        // (registers 0, 1) and 2t + 8, 2t + 9 (registers 2, 3).
        const int lane0 = 32 * (m / 16) + 4 * (m % 8) + (k % 8) / 2;
        const int reg = (m % 16 >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0);
        A[half][k] = bf16Value(op.a[lane0][reg], k % 2);
      } else {
        A[half][k] = descriptorElement(op.descA, op.transposeA, m, k);
      }
    }
  }
  for (int j = 0; j < op.n / 8; ++j)
    for (int e = 0; e < 4; ++e) {
      const int column = 8 * j + 2 * t + e % 2;
      double sum = op.accumulate ? d[4 * j + e] : 0.0;
      for (int k = 0; k < 16; ++k)
        sum += static_cast<double>(A[e / 2][k]) *
               descriptorElement(op.descB, op.transposeB, column, k);
      d[4 * j + e] = static_cast<float>(sum);
    }
}
} // namespace

void wgmmaIssue(float *d, int n, const uint32_t *a, uint64_t descA, uint64_t descB,
                bool transposeB, bool accumulate, bool transposeA) {
  Warpgroup &group = myWarpgroup();
  const unsigned self = threadIdx.x % 128;
  const size_t number = products.issued++;
  {
    std::lock_guard<std::mutex> lock(group.mutex);
    if (number < group.first)
      fail("a wgmma issued after its warpgroup retired it");
    while (group.first + group.ops.size() <= number) {
      group.ops.emplace_back();
      WgmmaOp &op = group.ops.back();
      op.n = n;
      op.aInRegisters = a != nullptr;
      op.descA = descA;
      op.descB = descB;
      op.transposeA = transposeA;
      op.transposeB = transposeB;
      op.accumulate = accumulate;
    }
    WgmmaOp &op = group.ops[number - group.first];
    if (op.n != n || op.aInRegisters != (a != nullptr) || op.descA != descA ||
        op.descB != descB || op.transposeA != transposeA || op.transposeB != transposeB ||
        op.accumulate != accumulate)
      fail("the threads of a warpgroup issue different wgmmas");
    if (a)
      std::memcpy(op.a[self], a, sizeof(op.a[self]));
  }
  // The accumulators read NaN until the product is retired.
  if (!products.values.count(d)) {
    products.values[d].assign(d, d + n / 2);
    for (int i = 0; i < n / 2; ++i)
      d[i] = NAN;
  }
  products.open.push_back({number, d});
}

void wgmmaCommit() {
  products.groups.push_back(std::move(products.open));
  products.open.clear();
}

void wgmmaWait(int pending) {
  Warpgroup &group = myWarpgroup();
  // Every thread of the warpgroup has issued what it waits for.
  group.barrier.arrive_and_wait();
  size_t retired = 0;
  while (static_cast<int>(products.groups.size()) > pending) {
    for (const PendingProduct &p : products.groups.front()) {
      const WgmmaOp *op;
      {
        std::lock_guard<std::mutex> lock(group.mutex);
        op = &group.ops[p.op - group.first];
      }
      retireProduct(*op, products.values[p.d]);
      retired = p.op + 1;
    }
    products.groups.pop_front();
  }
  // Accumulators with no product left in flight get their values back.
  for (auto it = products.values.begin(); it != products.values.end();) {
    bool inFlight = false;
    for (const auto &g : products.groups)
      for (const PendingProduct &p : g)
        inFlight |= p.d == it->first;
    for (const PendingProduct &p : products.open)
      inFlight |= p.d == it->first;
    if (inFlight) {
      ++it;
      continue;
    }
    std::memcpy(it->first, it->second.data(), it->second.size() * sizeof(float));
    it = products.values.erase(it);
  }
  // Nobody drops an op before the whole warpgroup has computed it.
  group.barrier.arrive_and_wait();
  if (threadIdx.x % 128 == 0) {
    std::lock_guard<std::mutex> lock(group.mutex);
    while (group.first < retired && !group.ops.empty()) {
      group.ops.pop_front();
      ++group.first;
    }
  }
}

namespace {
/// The mbarrier at `barrier` in `owner`'s shared memory (this thread's
/// block's unless a cluster peer's).
Mbarrier &mbarrierAt(uint64_t *barrier, Block &owner = *block) {
  const char *begin = owner.shared;
  const char *at = reinterpret_cast<const char *>(barrier);
  if (at < begin || at + 8 > begin + sharedLimit || (at - begin) % 8 != 0)
    fail("an mbarrier outside the launch's shared memory, or misaligned");
  auto it = owner.mbarriers.find(barrier);
  if (it == owner.mbarriers.end())
    fail("an mbarrier used before mbarrierInit");
  return it->second;
}

/// A phase whose arrivals and bytes are all in completes as late as the
/// hardware may let it: when a thread waits for it, or when the next
/// phase's first arrival or copy comes. Its copies land then, so a thread
/// that reads a copy's destination without waiting reads NaN. (The caller
/// holds `owner`'s mbarrierMutex.)
void completePhase(Mbarrier &b, Block &owner = *block) {
  if (!b.done)
    return;
  for (LandingCopy &copy : b.copies)
    std::memcpy(copy.to, copy.bytes.data(), copy.bytes.size());
  b.copies.clear();
  b.pending = b.count;
  b.done = false;
  ++b.phase;
  owner.mbarrierChanged.notify_all();
}
void markIfDone(Mbarrier &b, Block &owner = *block) {
  b.done = b.pending == 0 && b.bytes == 0;
  if (b.done)
    owner.mbarrierChanged.notify_all(); // a waiter completes it
}

/// The cluster peer of rank `rank`, or a failed run.
Block &peer(unsigned rank) {
  if (!block->cluster)
    fail("a cluster operation in a launch without clusters");
  if (rank >= block->cluster->blocks.size())
    fail("a cluster rank past the cluster's size");
  return *block->cluster->blocks[rank];
}

/// Counts a copy's bytes on `barrier` and holds them until its phase
/// completes; the destination reads NaN (all-ones bytes) meanwhile.
void countCopy(uint64_t *barrier, void *to, std::vector<unsigned char> bytes) {
  const char *begin = blockShared();
  const char *at = static_cast<const char *>(to);
  if (at < begin || at + bytes.size() > begin + sharedLimit)
    fail("a bulk copy lands outside the launch's shared memory");
  std::lock_guard<std::mutex> lock(block->mbarrierMutex);
  Mbarrier &b = mbarrierAt(barrier);
  completePhase(b);
  std::memset(to, 0xff, bytes.size());
  b.bytes -= static_cast<int64_t>(bytes.size());
  b.copies.push_back({to, std::move(bytes)});
  markIfDone(b);
}

const uint16_t *tensorElement(const CUtensorMap *map, int64_t column, int64_t row) {
  if (column < 0 || row < 0 || static_cast<uint64_t>(column) >= map->columns ||
      static_cast<uint64_t>(row) >= map->rows)
    return nullptr;
  return static_cast<const uint16_t *>(map->base) + row * map->rowStride + column;
}
} // namespace

void mbarrierInit(uint64_t *barrier, unsigned count) {
  std::lock_guard<std::mutex> lock(block->mbarrierMutex);
  Mbarrier &b = block->mbarriers[barrier];
  if (b.count != 0)
    fail("an mbarrier initialised twice");
  b.count = b.pending = count;
}

void mbarrierArrive(uint64_t *barrier, unsigned bytes) {
  std::lock_guard<std::mutex> lock(block->mbarrierMutex);
  Mbarrier &b = mbarrierAt(barrier);
  completePhase(b);
  if (b.pending == 0)
    fail("an mbarrier arrival past its count");
  b.bytes += bytes;
  --b.pending;
  markIfDone(b);
}

unsigned clusterRank() { return block->rank; }

unsigned clusterSize() {
  return block->cluster ? static_cast<unsigned>(block->cluster->blocks.size()) : 1;
}

void *mapSharedRank(const void *p, unsigned rank) {
  const char *at = static_cast<const char *>(p);
  if (at < blockShared() || at >= blockShared() + sharedLimit)
    fail("mapa of a pointer outside this block's shared memory");
  return peer(rank).shared + (at - blockShared());
}

void mbarrierArriveCluster(uint64_t *barrier, unsigned rank) {
  Block &owner = peer(rank);
  uint64_t *remote = static_cast<uint64_t *>(mapSharedRank(barrier, rank));
  std::lock_guard<std::mutex> lock(owner.mbarrierMutex);
  Mbarrier &b = mbarrierAt(remote, owner);
  completePhase(b, owner);
  if (b.pending == 0)
    fail("a remote mbarrier arrival past its count");
  --b.pending;
  markIfDone(b, owner);
}

void clusterSync() {
  if (!block->cluster)
    fail("barrier.cluster in a launch without clusters");
  block->cluster->barrier.arrive_and_wait();
}

void *thisBlockShared(void *p) {
  char *at = static_cast<char *>(p);
  char *global = reinterpret_cast<char *>(shared);
  if (at < global || at >= global + sizeof(shared))
    return p; // already a block's own
  return blockShared() + (at - global);
}

void mbarrierWait(uint64_t *barrier, unsigned parity) {
  std::unique_lock<std::mutex> lock(block->mbarrierMutex);
  Mbarrier &b = mbarrierAt(barrier);
  if (!block->mbarrierChanged.wait_for(lock, std::chrono::seconds(60), [&] {
        if ((b.phase & 1) == (parity & 1))
          completePhase(b);
        return (b.phase & 1) != (parity & 1);
      }))
    fail("an mbarrier wait never returned: its phase did not complete");
}

void tmaLoad2D(void *to, const CUtensorMap *map, int x, int y, uint64_t *barrier) {
  if (sharedAddress(to) % 1024 != 0)
    fail("a TMA box lands off a 1024-byte boundary (its swizzling would differ)");
  std::vector<unsigned char> bytes(64 * 128);
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 64; ++c) {
      const uint16_t *from = tensorElement(map, int64_t(x) + c, int64_t(y) + r);
      const uint16_t value = from ? *from : 0;
      // Swizzle128Tile<64>: piece (c / 8) of row r at piece (c / 8) ^ (r % 8).
      std::memcpy(bytes.data() + r * 128 + (((c / 8) ^ (r % 8)) * 16) + (c % 8) * 2, &value, 2);
    }
  countCopy(barrier, to, std::move(bytes));
}

/// Writes the box at `from` to (x, y) of `map` now.
void storeBox(const TmaStore &store) {
  const unsigned char *tile = static_cast<const unsigned char *>(store.from);
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 64; ++c) {
      const uint16_t *to =
          tensorElement(store.map, int64_t(store.x) + c, int64_t(store.y) + r);
      if (to)
        std::memcpy(const_cast<uint16_t *>(to),
                    tile + r * 128 + (((c / 8) ^ (r % 8)) * 16) + (c % 8) * 2, 2);
    }
}

void tmaStore2D(const CUtensorMap *map, int x, int y, const void *from) {
  if (sharedAddress(from) % 1024 != 0)
    fail("a TMA box stored from off a 1024-byte boundary");
  stores.open.push_back(TmaStore{map, x, y, from});
}

void bulkCommit() {
  stores.groups.push_back(std::move(stores.open));
  stores.open.clear();
}

void bulkWait(int pending) {
  while (static_cast<int>(stores.groups.size()) > pending) {
    for (const TmaStore &store : stores.groups.front())
      storeBox(store);
    stores.groups.pop_front();
  }
}

void bulkLoad(void *to, const void *from, unsigned bytes, uint64_t *barrier) {
  if (bytes % 16 != 0 || reinterpret_cast<uintptr_t>(to) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(from) % 16 != 0)
    fail("a bulk copy of a size or at addresses not multiples of 16");
  const unsigned char *source = static_cast<const unsigned char *>(from);
  countCopy(barrier, to, std::vector<unsigned char>(source, source + bytes));
}

void namedBarrier(int id, int count) {
  std::barrier<> *named;
  {
    std::lock_guard<std::mutex> lock(block->mbarrierMutex);
    auto &slot = block->named[id];
    if (!slot)
      slot = std::make_unique<std::barrier<>>(count);
    else if (id >= 0 && id < 16 && block->namedCount[id] != count)
      fail("a named barrier used with two thread counts");
    if (id >= 0 && id < 16)
      block->namedCount[id] = count;
    named = slot.get();
  }
  named->arrive_and_wait();
}

void runGrid(dim3 grid, unsigned threads, const std::function<void()> &body,
             size_t sharedBytes, unsigned clusterX) {
  gridDim = grid;
  blockDim = dim3{threads, 1, 1};
  sharedLimit = sharedBytes ? sharedBytes : sizeof(shared);
  if (sharedLimit + kSharedGuardBytes > sizeof(shared))
    sharedLimit = sizeof(shared); // no room for a guard: the whole array
  if (clusterX == 0 || grid.x % clusterX != 0)
    fail("a cluster size that does not divide the grid");
  // A cluster's blocks at once, each with shared memory of its own; one
  // block at a time, in `shared`, without clusters.
  std::vector<std::unique_ptr<uint4[]>> arrays;
  for (unsigned r = 0; clusterX > 1 && r < clusterX; ++r)
    arrays.emplace_back(new (std::align_val_t(1024)) uint4[kSharedWords]);
  for (unsigned y = 0; y < grid.y; ++y)
    for (unsigned x0 = 0; x0 < grid.x; x0 += clusterX) {
      Cluster cluster(threads * clusterX);
      std::vector<std::unique_ptr<Block>> blocks;
      for (unsigned r = 0; r < clusterX; ++r) {
        char *memory = reinterpret_cast<char *>(clusterX > 1 ? arrays[r].get() : shared);
        std::memset(memory, 0xcd, sizeof(shared));
        blocks.push_back(std::make_unique<Block>(threads, memory));
        blocks.back()->rank = r;
        blocks.back()->cluster = clusterX > 1 ? &cluster : nullptr;
        cluster.blocks.push_back(blocks.back().get());
      }
      std::vector<std::thread> workers;
      for (unsigned r = 0; r < clusterX; ++r)
        for (unsigned t = 0; t < threads; ++t)
          workers.emplace_back([&, r, t] {
            block = blocks[r].get();
            blockIdx = dim3{x0 + r, y, 1};
            threadIdx = dim3{t, 1, 1};
            copies = CopyState();
            stores = StoreState();
            products = WgmmaThread();
            body();
            if (!copies.open.empty() || !copies.groups.empty())
              fail("a thread exits with asynchronous copies in flight");
            if (!stores.open.empty() || !stores.groups.empty())
              fail("a thread exits with TMA stores it did not wait for (bulkWaitAll)");
            if (!products.open.empty() || !products.groups.empty())
              fail("a thread exits with wgmma products in flight");
            block = nullptr;
          });
      for (std::thread &worker : workers)
        worker.join();
      if (sharedLimit < sizeof(shared))
        for (const auto &state : blocks) {
          const unsigned char *guard =
              reinterpret_cast<const unsigned char *>(state->shared) + sharedLimit;
          for (size_t i = 0; i < kSharedGuardBytes; ++i)
            if (guard[i] != 0xcd)
              fail("a block stores past the launch's dynamic shared memory");
        }
    }
}

} // namespace gdn::device::emulation
