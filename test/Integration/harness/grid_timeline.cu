//===- grid_timeline.cu - the whole forward's blocks on one clock -------===//
//
// Built against the marked headers of utils/grid-timeline.py (see there
// for the marks): runs the default gqa16x32 forward (the prepare kernel,
// then the producer-of-P block as its programmatic dependent) at 2048x4,
// at 2048x4 without an initial state and at 8192x4. Each case: five
// warm-up forwards, 3 s idle (as BENCH_SETTLE=cold), then three forwards,
// the last one event-timed (the marks keep its times), and a summary of
// where that forward's time goes: the prepare kernel's span and block
// times, when the scan blocks become resident, wait, start and end their
// chains, and what is left between the events and the blocks (the
// launches). Times in microseconds from the first prepare block's start.
//
//===----------------------------------------------------------------------===//

// The marks store into these arrays; they must precede the kernels.
constexpr unsigned kGdnGridPrepareBlocks = 16384, kGdnGridScanBlocks = 1024;
__device__ unsigned long long gdnGridPrepare[kGdnGridPrepareBlocks][4];
__device__ unsigned long long gdnGridScan[kGdnGridScanBlocks][12];

#include <map>

#define main deltaRuleBenchMain
#include "delta_rule_bench.cu"
#undef main

namespace {

/// Minimum, median and maximum of `values` (microseconds).
std::string spread(std::vector<double> values) {
  if (values.empty())
    return "-";
  std::sort(values.begin(), values.end());
  char text[96];
  std::snprintf(text, sizeof text, "%.1f / %.1f / %.1f", values.front(),
                values[values.size() / 2], values.back());
  return text;
}

template <class C>
void timeline(const char *name, const std::vector<int> &lengths) {
  Problem p =
      makeProblem(C::kKeyHeads, C::kValueHeads, C::kHeadDimK, lengths, {}, 9);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  for (int i = 0; i < 5; ++i)
    run<C>(p, stream);
  CUDA_OK(cudaStreamSynchronize(stream));
  std::this_thread::sleep_for(std::chrono::seconds(3));
  static unsigned long long zeroPrepare[kGdnGridPrepareBlocks][4],
      zeroScan[kGdnGridScanBlocks][12];
  CUDA_OK(cudaMemcpyToSymbol(gdnGridPrepare, zeroPrepare, sizeof zeroPrepare));
  CUDA_OK(cudaMemcpyToSymbol(gdnGridScan, zeroScan, sizeof zeroScan));
  cudaEvent_t before, after;
  CUDA_OK(cudaEventCreate(&before));
  CUDA_OK(cudaEventCreate(&after));
  for (int i = 0; i < 2; ++i)
    run<C>(p, stream);
  CUDA_OK(cudaEventRecord(before, stream));
  run<C>(p, stream);
  CUDA_OK(cudaEventRecord(after, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  float eventMs = 0;
  CUDA_OK(cudaEventElapsedTime(&eventMs, before, after));
  static unsigned long long prepare[kGdnGridPrepareBlocks][4],
      scan[kGdnGridScanBlocks][12];
  CUDA_OK(cudaMemcpyFromSymbol(prepare, gdnGridPrepare, sizeof prepare));
  CUDA_OK(cudaMemcpyFromSymbol(scan, gdnGridScan, sizeof scan));

  // The marked forward's blocks: those whose start (mark 0) was written.
  unsigned long long origin = ~0ull, prepareEnd = 0, scanEnd = 0;
  std::vector<double> prepareTimes;
  std::map<unsigned, unsigned long long> smPrepareEnd;
  int prepareBlocks = 0;
  for (auto &b : prepare) {
    if (!b[0])
      continue;
    ++prepareBlocks;
    origin = std::min(origin, b[0]);
    prepareEnd = std::max(prepareEnd, b[1]);
    prepareTimes.push_back((b[1] - b[0]) * 1e-3);
    smPrepareEnd[b[2]] = std::max(smPrepareEnd[b[2]], b[1]);
  }
  std::vector<std::vector<double>> marks(10);
  std::vector<double> afterSm, chains;
  int scanBlocks = 0;
  for (auto &b : scan) {
    if (!b[0])
      continue;
    ++scanBlocks;
    for (int m = 0; m < 10; ++m)
      if (m != 6 && b[m])
        marks[m].push_back((double(b[m]) - double(origin)) * 1e-3);
    scanEnd = std::max(scanEnd, b[5] ? b[5] : b[4]);
    if (smPrepareEnd.count(b[6]))
      afterSm.push_back((double(b[0]) - double(smPrepareEnd[b[6]])) * 1e-3);
    if (b[3] && b[4])
      chains.push_back((b[4] - b[3]) * 1e-3);
  }
  // A grid larger than the arrays drops the marks of its last blocks.
  if (prepareBlocks == int(kGdnGridPrepareBlocks) ||
      scanBlocks == int(kGdnGridScanBlocks))
    std::printf("grid_timeline: %s fills a mark array (%d prepare, %d scan "
                "blocks): raise kGdnGridPrepareBlocks / kGdnGridScanBlocks\n",
                name, prepareBlocks, scanBlocks);
  const double span = (scanEnd - origin) * 1e-3;
  std::printf("== %s (%d prepare blocks on %zu SMs, %d scan blocks)\n", name,
              prepareBlocks, smPrepareEnd.size(), scanBlocks);
  std::printf("event time %.1f us; first prepare start to last scan end "
              "%.1f us; the rest (launch, the events) %.1f us\n",
              eventMs * 1e3, span, eventMs * 1e3 - span);
  std::printf("prepare: last block end %.1f us; block time min / median / max "
              "%s us\n",
              (prepareEnd - origin) * 1e-3, spread(prepareTimes).c_str());
  static const char *what[10] = {"resident",
                                 "producer's grid wait returned",
                                 "consumers' loop entered (h0 read)",
                                 "first chunk's P (chain start)",
                                 "chain done, o stored",
                                 "final state stored (end)",
                                 "(the SM)",
                                 "producer past setmaxnreg.dec",
                                 "consumers past setmaxnreg.inc",
                                 "block barrier after set-up"};
  for (int m : {0, 9, 7, 8, 1, 2, 3, 4, 5})
    std::printf("scan %d %-32s %s us\n", m, what[m], spread(marks[m]).c_str());
  std::printf("scan: resident after its SM's last prepare block %s us; chain "
              "%s us\n",
              spread(afterSm).c_str(), spread(chains).c_str());
  CUDA_OK(cudaEventDestroy(before));
  CUDA_OK(cudaEventDestroy(after));
  CUDA_OK(cudaStreamDestroy(stream));
  p.release();
}

} // namespace

int main() {
  // Without an initial state: what its loads cost the block's start.
  using NoInitial = ProducerScores<FusedConfig<16, 32, 128, 128, false, true>>;
  const std::vector<int> short4 = {2048, 2048, 2048, 2048},
                         long4 = {8192, 8192, 8192, 8192};
  timeline<DefaultGqa16x32>("gqa16x32 default 2048x4", short4);
  timeline<NoInitial>("gqa16x32 no h0 2048x4", short4);
  timeline<DefaultGqa16x32>("gqa16x32 default 8192x4", long4);
  return failures;
}
