//===- DeviceEmulator.h - run device kernel bodies on host threads --------===//
//
// Executes a kernel body (compiled from kernels/include/gdn/device with
// GDN_DEVICE_EMULATION and the stand-ins of shim/) the way the GPU would,
// one block at a time and one std::thread per CUDA thread, with real
// barriers and warp shuffles. Asynchronous copies are modelled so that
// ordering mistakes show: a copy poisons its destination with NaN when
// issued and lands only when a wait retires its group; a thread that exits
// with copies in flight, or copies from outside the allowed source range or
// into a word another thread owns, aborts the run with a message. Hopper's
// asynchronous units are modelled the same way: a wgmma's accumulators and a
// TMA or bulk copy's destination read NaN until the wait that retires them.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_UNITTESTS_DEVICEEMULATOR_H
#define GDN_UNITTESTS_DEVICEEMULATOR_H

#include "emulated_cuda.h"

#include <cstddef>
#include <functional>

namespace gdn::device::emulation {

/// Words of dynamic shared memory each emulated block gets.
constexpr size_t kSharedWords = 1 << 16;

/// Runs `body` as each of `threads` threads of every block of `grid`. With
/// `sharedBytes` (the dynamic shared memory the launch would reserve), an
/// asynchronous copy past it fails, and so does a store into the 4 KiB
/// after it: the host's size and the kernel's use of it must agree. With
/// `clusterX` > 1 (dividing grid.x), each run of that many blocks along x
/// is a thread-block cluster: its blocks run at once, each with shared
/// memory of its own, which the others reach through mapSharedRank and
/// mbarrierArriveCluster (emulated_cuda.h).
void runGrid(dim3 grid, unsigned threads, const std::function<void()> &body,
             size_t sharedBytes = 0, unsigned clusterX = 1);

/// The bytes asynchronous copies may read, [begin, end); replaces any
/// earlier ranges.
void setCopySource(const void *begin, const void *end);
/// Adds one more range asynchronous copies may read (kernels that stage
/// several input tensors).
void addCopySource(const void *begin, const void *end);

/// Whether a copy must land in a word its own thread owns (word index %
/// block size == thread): on for kernels that read back their own copies
/// without a barrier (the prologue), off for kernels that share staged
/// tiles after __syncthreads.
void setCopyOwnership(bool required);

} // namespace gdn::device::emulation

#endif // GDN_UNITTESTS_DEVICEEMULATOR_H
