//===- GpuBenchmark.h - timing gdnrt_linear on the GPU -----------*- C++ -*-===//
#ifndef GDN_UNITTESTS_RUNTIME_GPUBENCHMARK_H
#define GDN_UNITTESTS_RUNTIME_GPUBENCHMARK_H
/// Prints gdnrt_linear's time against cuBLASLt's best; returns an exit code.
int runLinearBenchmark();
#endif
