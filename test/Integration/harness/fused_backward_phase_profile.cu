//===- fused_backward_phase_profile.cu - phases of the fused backward ----===//
//
// Built against the marked headers of utils/fused-backward-phase-profile.py
// (see there): runs the backward with the fused reverse kernel at gqa16x32
// and mha32, 8192x4, through the bench's own timing, then prints the
// cycles per chunk that block 0's math, carrier and producer threads spent
// between their marks.
//
//===----------------------------------------------------------------------===//

// The marks add to this array; it must precede the kernel's definition.
__device__ unsigned long long gdnProf[32];

#define GDN_BENCH_SCAN_WGMMA 1
#define GDN_BENCH_REVERSE_WGMMA 1
#define GDN_BENCH_CHUNK_WGMMA 1
#define GDN_BENCH_FUSED_BACKWARD 1
#define GDN_BENCH_BF16_GRADIENTS 1
#define main deltaRuleBackwardBenchMain
#include "delta_rule_backward_bench.cu"
#undef main

namespace {

/// Runs one shape and prints its phases.
template <class C> void profile(const char *name) {
  // Slot k: the cycles from the mark before it to mark k.
  const char *kPhaseNames[32] = {
      "math: loop (from the previous chunk's last mark)",
      "math: wait for G and beta",
      "math: wait for K, dO, N, P and the carrier's dS'",
      "math: dS'^T K^T and dO^T P",
      "math: dVn^T, W^T = dVn^T N",
      "math: wait for the carrier's W release, stage W, dv",
      "math: barrier (both halves of W)",
      "math: wait for Q, Vn",
      "math: the scores, E1, F and their sums",
      "math: wait for S; T1, T2 and their row terms",
      "math: <dS', S>",
      "math: wait for V; T3, V o W, row sums",
      "math: barrier (E1, F, sums)",
      "math: dg, dbeta (under E1 K, E1^T Q, F K)",
      "math: wait for dq, dk; stage and store them",
      "math: E1 K, E1^T Q, F K issued (before the line above it)",
      "carrier: loop (from the previous chunk's last mark)",
      "carrier: wait for G and beta",
      "carrier: wait for the math's dS' release",
      "carrier: stage dS'",
      "carrier: decay, factors, barrier",
      "carrier: wait for dO, Q",
      "carrier: X^T Q issued",
      "carrier: wait for W",
      "carrier: Y^T K, wait for both",
      nullptr,
      "producer: S, Vn and Q of a chunk, with their waits for free buffers",
      nullptr, nullptr, nullptr, nullptr, nullptr};
  const unsigned long long zero[32] = {};
  CUDA_OK(cudaMemcpyToSymbol(gdnProf, zero, sizeof zero));
  benchCase<C>(name, {8192, 8192, 8192, 8192}, 10, 652);
  unsigned long long cycles[32];
  CUDA_OK(cudaMemcpyFromSymbol(cycles, gdnProf, sizeof cycles));
  const double chunks = double(cycles[31]);
  std::printf("block 0: %.0f chunks (every timed run)\n", chunks);
  double role[3] = {0, 0, 0};
  for (int k = 0; k < 31; ++k) {
    if (!kPhaseNames[k])
      continue;
    const double perChunk = cycles[k] / chunks;
    std::printf("  %-56s %8.1f cycles/chunk\n", kPhaseNames[k], perChunk);
    role[k < 16 ? 0 : k < 25 ? 1 : 2] += perChunk;
  }
  std::printf("  math %.1f, carrier %.1f, producer %.1f cycles/chunk\n", role[0], role[1],
              role[2]);
}

} // namespace

int main() {
  profile<Config<16, 32, 128, true>>("gqa16x32");
  profile<Config<32, 32, 128, true>>("mha32");
  return failures;
}
