//===- PlanSimulator.h - run the plans of P ranks in host memory -*- C++ -*-===//
//
// The stand-in for CUDA and NCCL in the runtime's unit tests: copies and
// GEMMs run on host buffers, and each group of messages is matched across
// the ranks the way NCCL matches them (sends to receives by peer and order,
// collectives by position; sums in rank order). Every byte a step touches
// is bounds-checked, so a plan that reads past a tensor or a too-small
// workspace fails the test.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_UNITTESTS_RUNTIME_PLANSIMULATOR_H
#define GDN_UNITTESTS_RUNTIME_PLANSIMULATOR_H

#include "Plan.h"

#include <string>
#include <vector>

namespace gdnrt::testing {

/// One rank's buffers (bytes). `ones` is filled by the simulator (the
/// context's constant ones, writeOnes).
struct RankMemory {
  std::vector<char> input, input2, output, workspace, input3, output2, ones;
};

/// Runs every rank's plan; returns "" or what went wrong.
std::string simulate(const std::vector<Plan> &plans,
                     std::vector<RankMemory> &ranks);

/// Runs one step that needs no other rank (a copy, memset or GEMM) on
/// `memory`; returns "" or what went wrong. For executors of the
/// communication other than simulate's (the threads backend's tests).
std::string runLocalStep(const Step &step, RankMemory &memory, int rank);

/// `bytes` at `address` of `memory`, bounds-checked: null when out of range.
char *addressOf(RankMemory &memory, Address address, size_t bytes);

} // namespace gdnrt::testing

#endif
