//===- fused_phase_profile.cu - phases of the fused forward, in cycles ---===//
//
// Built against the marked headers of utils/fused-phase-profile.py (see
// there): runs the fused forward at gqa16x32 8192x4 and 1x32768 through the
// bench's own timing, then prints the cycles per chunk that block 0's
// producer and consumer threads spent between their marks.
//
//===----------------------------------------------------------------------===//

// The marks add to this array; it must precede the kernel's definition.
__device__ unsigned long long gdnProf[32];

#define main deltaRuleBenchMain
#include "delta_rule_bench.cu"
#undef main

int main() {
  // Slot k: the cycles from the mark before it to mark k (slot 31 counts
  // the producer's chunks).
  const char *kPhaseNames[21] = {
      "producer: loop (from the previous chunk's end)",
      "producer: wait for the chunk's TMA (full)",
      "producer: G (shuffle scan, barrier)",
      "producer: columns 0-31: K K^T, Q K^T (+ G's barrier)",
      "producer: columns 0-31: gating",
      "producer: columns 32-63: K K^T, Q K^T",
      "producer: columns 32-63: gating",
      "producer: L's barrier",
      "producer: inverse: diagonal blocks",
      "producer: inverse: 16 -> 32 and the D copy",
      "producer: inverse: T sums",
      "producer: inverse: X blocks",
      "producer: M, fence, barrier",
      nullptr,
      nullptr,
      nullptr,
      "consumer: loop and refill (from the previous mark)",
      "consumer: wait for V (full), zero tail rows",
      "consumer: wait for produced",
      "consumer: the chunk (wgmmaScanChunk)",
      "consumer: stage and store o"};
  using Fused = FusedConfig<16, 32, 128, 128, true, true>;
  const std::vector<std::vector<int>> mixes = {{8192, 8192, 8192, 8192},
                                               {32768}};
  for (const auto &lengths : mixes) {
    const unsigned long long zero[32] = {};
    CUDA_OK(cudaMemcpyToSymbol(gdnProf, zero, sizeof zero));
    benchCase<Fused>("gqa16x32 fused", lengths, 20, 243, Split::kRule);
    unsigned long long cycles[32];
    CUDA_OK(cudaMemcpyFromSymbol(cycles, gdnProf, sizeof cycles));
    const double chunks = double(cycles[31]);
    std::printf("block 0: %.0f chunks\n", chunks);
    double producer = 0, consumer = 0;
    for (int k = 0; k < 21; ++k) {
      if (!kPhaseNames[k])
        continue;
      const double perChunk = cycles[k] / chunks;
      std::printf("  %-52s %8.1f cycles/chunk\n", kPhaseNames[k], perChunk);
      (k < 16 ? producer : consumer) += perChunk;
    }
    std::printf("  producer %.1f, consumer %.1f cycles/chunk\n", producer,
                consumer);
  }
  return failures;
}
