//===- PlanSimulator.h - run the plans of P ranks in host memory -*- C++ -*-===//
//
// The stand-in for CUDA and NCCL in the runtime's unit tests: copies and
// GEMMs run on host buffers, and each group of messages is matched across
// the ranks the way NCCL matches them (sends to receives by peer and order,
// collectives by position). Every byte a step touches is bounds-checked, so
// a plan that reads past a tensor or a too-small workspace fails the test.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_UNITTESTS_RUNTIME_PLANSIMULATOR_H
#define GDN_UNITTESTS_RUNTIME_PLANSIMULATOR_H

#include "Plan.h"

#include <string>
#include <vector>

namespace gdnrt::testing {

/// One rank's buffers (bytes).
struct RankMemory {
  std::vector<char> input, input2, output, workspace;
};

/// Runs every rank's plan; returns "" or what went wrong.
std::string simulate(const std::vector<Plan> &plans,
                     std::vector<RankMemory> &ranks);

} // namespace gdnrt::testing

#endif
