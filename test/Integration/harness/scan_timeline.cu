//===- scan_timeline.cu - timelines of the forward's scan blocks --------===//
//
// Built against the marked headers of utils/scan-timeline.py (see there
// for the marks): runs gqa16x32 8192x4 through the bench's own timing with
// the fused block whose producer makes P (the default) and with the wgmma
// scan, then prints for block 0 the mean cycles between consecutive marks
// per warpgroup (the producer is warpgroup 2) and the raw times of three
// chunks, relative to the first consumer's, to show how the warpgroups
// interleave.
//
//===----------------------------------------------------------------------===//

// The marks store into this array; it must precede the kernels' definition.
__device__ long long gdnTimeline[3 * 4096];

#define main deltaRuleBenchMain
#include "delta_rule_bench.cu"
#undef main

namespace {

/// Prints warpgroups 0 .. groups - 1 of the timeline, marks 0 .. marks - 1,
/// over chunks 8 .. chunks - 9 (away from the pipeline's fill and drain).
void printTimeline(const char *name, int groups, int marks, int chunks) {
  std::vector<long long> t(3 * 4096);
  CUDA_OK(cudaMemcpyFromSymbol(t.data(), gdnTimeline, t.size() * 8));
  auto at = [&](int g, int c, int k) { return t[g * 4096 + c * 16 + k]; };
  std::printf("== %s: mean cycles from the mark before, chunks 8..%d\n", name,
              chunks - 9);
  for (int g = 0; g < groups; ++g) {
    std::printf("warpgroup %d:", g);
    for (int k = 1; k < marks; ++k) {
      double sum = 0;
      int n = 0;
      for (int c = 8; c < chunks - 8; ++c)
        if (at(g, c, k) && at(g, c, k - 1)) {
          sum += double(at(g, c, k) - at(g, c, k - 1));
          ++n;
        }
      std::printf(" %d:%.0f", k, n ? sum / n : -1.0);
    }
    double chunk = 0;
    for (int c = 8; c < chunks - 8; ++c)
      chunk += double(at(g, c + 1, 0) - at(g, c, 0));
    std::printf("  | chunk %.0f\n", chunk / (chunks - 16));
  }
  const long long origin = at(0, 60, 0);
  for (int c = 60; c < 63; ++c)
    for (int g = 0; g < groups; ++g) {
      std::printf("chunk %d warpgroup %d:", c, g);
      for (int k = 0; k < marks; ++k)
        std::printf(" %lld", at(g, c, k) ? at(g, c, k) - origin : -1);
      std::printf("\n");
    }
}

void clearTimeline() {
  static const long long zero[3 * 4096] = {};
  CUDA_OK(cudaMemcpyToSymbol(gdnTimeline, zero, sizeof zero));
}

} // namespace

int main() {
  using Producer = ProducerScores<FusedConfig<16, 32, 128, 128, true, true>>;
  using Wgmma = WgmmaConfig<16, 32, 128, 128, true, true>;
  const std::vector<int> lengths = {8192, 8192, 8192, 8192};
  // (The marks keep the last run's times: the bench's scan-only runs.)
  clearTimeline();
  benchCase<Producer>("gqa16x32 P producer", lengths, 20, 243);
  printTimeline("producer-of-P block, consumers", 2, 12, 128);
  printTimeline("producer-of-P block, producer (warpgroup 2)", 3, 7, 128);
  clearTimeline();
  benchCase<Wgmma>("gqa16x32 wgmma scan", lengths, 20, 243);
  printTimeline("wgmma scan", 2, 12, 128);
  return failures;
}
