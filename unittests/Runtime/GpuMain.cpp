//===- GpuMain.cpp - the GPU tests, or the GEMM benchmark with --benchmark ===//

#include "GpuBenchmark.h"

#include <gtest/gtest.h>

#include <cstring>

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--benchmark") == 0)
      return runLinearBenchmark();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
