//===- cluster.cuh - thread-block clusters: rank, peers' shared memory ---===//
//
// sm_90's thread-block clusters: blocks launched together on one GPC that
// read each other's shared memory (distributed shared memory) and arrive on
// each other's mbarriers. The fused delta-rule backward sums the dq and dk
// of a key head's value heads this way, one block per value head, instead
// of in a kernel of its own.
//
// GDN_DEVICE_EMULATION: the host emulator runs a cluster's blocks at once,
// each with shared memory of its own (unittests/DeviceEmulation).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_CLUSTER_CUH
#define GDN_DEVICE_CLUSTER_CUH

#include "gdn/device/tma.cuh"

#include <stdint.h>

#include <utility>

namespace gdn {
namespace device {

/// This block's rank in its cluster (0 without clusters).
__device__ __forceinline__ unsigned clusterRank() {
#if defined(GDN_DEVICE_EMULATION)
  return emulation::clusterRank();
#elif GDN_WGMMA_AVAILABLE
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
#else
  return 0;
#endif
}

/// Every thread of every block of the cluster, with release and acquire:
/// shared memory written before it is visible to the peers after it. Also
/// what makes a peer's shared memory safe to use (before: the peer has
/// started; after, at the end: it has not exited).
__device__ __forceinline__ void clusterSync() {
#if defined(GDN_DEVICE_EMULATION)
  emulation::clusterSync();
#elif GDN_WGMMA_AVAILABLE
  asm volatile("barrier.cluster.arrive.release;\n"
               "barrier.cluster.wait.acquire;\n" ::
                   : "memory");
#endif
}

/// The generic address in peer `rank`'s shared memory of what `p`
/// addresses in this block's: plain loads through it read the peer's.
template <class T>
__device__ __forceinline__ const T *peerShared(const T *p, unsigned rank) {
#if defined(GDN_DEVICE_EMULATION)
  return static_cast<const T *>(emulation::mapSharedRank(p, rank));
#elif GDN_WGMMA_AVAILABLE
  uint64_t mapped;
  asm volatile("mapa.u64 %0, %1, %2;\n"
               : "=l"(mapped)
               : "l"(reinterpret_cast<uint64_t>(p)), "r"(rank));
  return reinterpret_cast<const T *>(mapped);
#else
  return p;
#endif
}

/// One arrival, with release at cluster scope, on the mbarrier of peer
/// `rank` at the place `barrier` has in this block.
__device__ __forceinline__ void mbarrierArrivePeer(uint64_t *barrier,
                                                   unsigned rank) {
#if defined(GDN_DEVICE_EMULATION)
  emulation::mbarrierArriveCluster(barrier, rank);
#elif GDN_WGMMA_AVAILABLE
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
               : "=r"(remote)
               : "r"(sharedAddress(barrier)), "r"(rank));
  asm volatile(
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(
          remote)
      : "memory");
#endif
}

/// mbarrierWait with acquire at cluster scope: what the peers that arrived
/// wrote before their arrivals (their shared memory included) is visible.
__device__ __forceinline__ void mbarrierWaitCluster(uint64_t *barrier,
                                                    unsigned parity) {
#if defined(GDN_DEVICE_EMULATION)
  emulation::mbarrierWait(barrier, parity);
#elif GDN_WGMMA_AVAILABLE
  asm volatile("{\n"
               ".reg .pred done;\n"
               "wait_%=:\n"
               "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 "
               "done, [%0], %1;\n"
               "@!done bra wait_%=;\n"
               "}\n" ::"r"(sharedAddress(barrier)),
               "r"(parity)
               : "memory");
#endif
}

#ifndef GDN_DEVICE_EMULATION
/// Launches `kernel` on `blocks` blocks in clusters of `clusterBlocks`
/// along x (which divides `blocks`). Host only.
template <class... Params, class... Args>
inline cudaError_t launchInClusters(void (*kernel)(Params...), unsigned blocks,
                                    unsigned threads, size_t sharedBytes,
                                    cudaStream_t stream, unsigned clusterBlocks,
                                    Args &&...args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(blocks, 1, 1);
  config.blockDim = dim3(threads, 1, 1);
  config.dynamicSmemBytes = sharedBytes;
  config.stream = stream;
  cudaLaunchAttribute cluster[1] = {};
  cluster[0].id = cudaLaunchAttributeClusterDimension;
  cluster[0].val.clusterDim.x = clusterBlocks;
  cluster[0].val.clusterDim.y = 1;
  cluster[0].val.clusterDim.z = 1;
  config.attrs = cluster;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}
#endif

} // namespace device
} // namespace gdn

#endif // GDN_DEVICE_CLUSTER_CUH
