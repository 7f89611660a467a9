//===- copies.h - strided copies of generated entry points ------*- C++ -*-===//
//
// Data-movement ops (gdn.split_qkvz, gdn.regroup_sections) lower to block
// copies whose strides the emitter knows statically; these wrappers give the
// CUDA copy calls one shape each and skip empty copies, which the generated
// code would otherwise have to guard one by one (a pack may have no tokens).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DEVICE_COPIES_H
#define GDN_DEVICE_COPIES_H

#include <cuda_runtime.h>

#include <stddef.h>

namespace gdn {

/// `height` rows of `width` bytes, `srcPitch` / `dstPitch` bytes apart.
inline cudaError_t copy2D(void *dst, size_t dstPitch, const void *src,
                          size_t srcPitch, size_t width, size_t height,
                          cudaStream_t stream) {
  if (width == 0 || height == 0)
    return cudaSuccess;
  return cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, width, height,
                           cudaMemcpyDeviceToDevice, stream);
}

/// `depth` slices of `height` rows of `width` bytes: on each side, rows are
/// `pitch` bytes apart and slices `pitch * sliceRows` bytes apart.
inline cudaError_t copy3D(void *dst, size_t dstPitch, size_t dstSliceRows,
                          const void *src, size_t srcPitch, size_t srcSliceRows,
                          size_t width, size_t height, size_t depth,
                          cudaStream_t stream) {
  if (width == 0 || height == 0 || depth == 0)
    return cudaSuccess;
  cudaMemcpy3DParms copy = {};
  copy.srcPtr = make_cudaPitchedPtr(const_cast<void *>(src), srcPitch, width,
                                    srcSliceRows);
  copy.dstPtr = make_cudaPitchedPtr(dst, dstPitch, width, dstSliceRows);
  copy.extent = make_cudaExtent(width, height, depth);
  copy.kind = cudaMemcpyDeviceToDevice;
  return cudaMemcpy3DAsync(&copy, stream);
}

} // namespace gdn

#endif // GDN_DEVICE_COPIES_H
