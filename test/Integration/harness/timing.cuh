//===- timing.cuh - GPU times from CUDA events ----------------------------===//
//
// Two ways the harnesses time GPU work, kept apart because they measure
// different things:
//
//  - back to back (launchTimesMs): every call between two events on one
//    stream, nothing waited for in between, so the GPU stays busy as in a
//    model's step and launch gaps hide behind the previous call; the
//    delta-rule drivers time kernels this way.
//  - one call at a time (EventTimer): an event pair around one call on the
//    legacy default stream, waited for before the next call, so each time
//    holds that call alone, launch included; the backward and generated-
//    function harnesses (and their device-copy references) time this way.
//
// Both report the median, which ignores the odd slow call (a clock change,
// another process) that a mean would not.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_TEST_INTEGRATION_HARNESS_TIMING_CUH
#define GDN_TEST_INTEGRATION_HARNESS_TIMING_CUH

#include "cuda_check.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

namespace harness {

/// The median of `values` (the upper one of an even count); 0 when empty.
template <class T> T median(std::vector<T> values) {
  if (values.empty())
    return T(0);
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

/// Sorted milliseconds of `iterations` calls of `launch` on `stream`, timed
/// back to back after 5 untimed calls (the first calls pay for module
/// loading and cold caches).
template <class Launch>
std::vector<float> launchTimesMs(cudaStream_t stream, int iterations,
                                 Launch &&launch) {
  for (int i = 0; i < 5; ++i)
    launch();
  CUDA_OK(cudaStreamSynchronize(stream));
  std::vector<cudaEvent_t> events(2 * iterations);
  for (auto &e : events)
    CUDA_OK(cudaEventCreate(&e));
  for (int i = 0; i < iterations; ++i) {
    CUDA_OK(cudaEventRecord(events[2 * i], stream));
    launch();
    CUDA_OK(cudaEventRecord(events[2 * i + 1], stream));
  }
  CUDA_OK(cudaStreamSynchronize(stream));
  std::vector<float> ms(iterations);
  for (int i = 0; i < iterations; ++i)
    CUDA_OK(cudaEventElapsedTime(&ms[i], events[2 * i], events[2 * i + 1]));
  for (auto &e : events)
    CUDA_OK(cudaEventDestroy(e));
  std::sort(ms.begin(), ms.end());
  return ms;
}

/// The median of launchTimesMs.
template <class Launch>
double medianLaunchMs(cudaStream_t stream, int iterations, Launch &&launch) {
  return launchTimesMs(stream, iterations, launch)[iterations / 2];
}

/// Times one call at a time on the legacy default stream (see the file
/// comment); one event pair, reused.
class EventTimer {
public:
  EventTimer() {
    CUDA_OK(cudaEventCreate(&begin));
    CUDA_OK(cudaEventCreate(&end));
  }
  EventTimer(const EventTimer &) = delete;
  EventTimer &operator=(const EventTimer &) = delete;
  ~EventTimer() {
    CUDA_OK(cudaEventDestroy(begin));
    CUDA_OK(cudaEventDestroy(end));
  }

  /// Milliseconds of `body`, waited for.
  template <class Body> float ms(Body &&body) {
    CUDA_OK(cudaEventRecord(begin));
    body();
    CUDA_OK(cudaEventRecord(end));
    CUDA_OK(cudaEventSynchronize(end));
    float elapsed = 0;
    CUDA_OK(cudaEventElapsedTime(&elapsed, begin, end));
    return elapsed;
  }

private:
  cudaEvent_t begin = nullptr, end = nullptr;
};

} // namespace harness

#endif // GDN_TEST_INTEGRATION_HARNESS_TIMING_CUH
