//===- grid_dependency.cuh - programmatic dependent launch -------*- CUDA
//-*-===//
//
// Programmatic dependent launch (sm_90): a kernel launched with
// launchDependent may start while the kernel before it on the stream still
// runs, once every block of that kernel has called allowDependentLaunch (or
// exited). It must call waitForPrerequisiteGrid before it reads anything
// the earlier kernel writes: that wait returns once the earlier grid has
// completed and its writes are visible. What the dependent kernel does
// before the wait (its launch, barrier set-up, descriptor prefetches,
// copies of inputs the earlier kernel does not write) overlaps the earlier
// kernel's last blocks instead of following them.
//
// The delta-rule forward launches its scan (or fused block) this way after
// the prepare kernel (delta_rule.cuh, ScanLaunch). On targets without the
// instructions both device calls compile to nothing, and a launch without
// the attribute keeps plain stream order, so a kernel that calls them stays
// correct either way.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_GRID_DEPENDENCY_CUH
#define GDN_DEVICE_GRID_DEPENDENCY_CUH

#include <cuda_runtime.h>

#include <utility>

namespace gdn {
namespace device {

/// Lets the next kernel on the stream, if launched by launchDependent,
/// start once every block of this grid has called this (or exited). It
/// does not publish this block's writes: the dependent kernel's
/// waitForPrerequisiteGrid waits for the whole grid.
__device__ __forceinline__ void allowDependentLaunch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/// Waits until the kernel this one depends on (launched before it on the
/// stream) has completed and its memory operations are visible; returns at
/// once in a kernel launched without the attribute.
__device__ __forceinline__ void waitForPrerequisiteGrid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

#ifndef GDN_DEVICE_EMULATION // the emulator runs grids one after another
/// Launches `kernel` on `stream` so that it may begin before the previous
/// kernel on the stream ends (see above). The kernel must call
/// waitForPrerequisiteGrid before reading that kernel's outputs.
template <class... Params, class... Args>
inline cudaError_t launchDependent(void (*kernel)(Params...), dim3 grid,
                                   dim3 block, size_t sharedBytes,
                                   cudaStream_t stream, Args &&...args) {
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = sharedBytes;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}
#endif // GDN_DEVICE_EMULATION

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_GRID_DEPENDENCY_CUH
