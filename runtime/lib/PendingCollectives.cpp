//===- PendingCollectives.cpp - which collective an NCCL wait is stuck in -===//

#include "PendingCollectives.h"

#include "Internal.h"

namespace gdnrt {

PendingCollectives::~PendingCollectives() {
  DeviceGuard guard(device);
  for (Entry &entry : entries) {
    cudaEventDestroy(entry.begun);
    cudaEventDestroy(entry.ended);
  }
  if (staged)
    cudaEventDestroy(staged);
  for (cudaEvent_t event : spare)
    cudaEventDestroy(event);
}

PendingCollectives::Fired PendingCollectives::query(cudaEvent_t event) {
  const cudaError_t state = cudaEventQuery(event);
  if (state == cudaSuccess)
    return Fired::Yes;
  // Not ready is not an error to clear; anything else is this query's own
  // (non-sticky) error, which must not surface at the caller's next check.
  if (state != cudaErrorNotReady) {
    cudaGetLastError();
    return Fired::Unknown;
  }
  return Fired::No;
}

cudaEvent_t PendingCollectives::takeEvent() {
  if (!spare.empty()) {
    cudaEvent_t event = spare.back();
    spare.pop_back();
    return event;
  }
  DeviceGuard guard(device);
  cudaEvent_t event = nullptr;
  if (cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return event;
}

void PendingCollectives::giveBack(cudaEvent_t event) {
  if (event)
    spare.push_back(event);
}

void PendingCollectives::begin(cudaStream_t stream) {
  giveBack(staged);
  staged = nullptr;
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capturing) != cudaSuccess ||
      capturing != cudaStreamCaptureStatusNone) {
    cudaGetLastError();
    gap = true;
    return;
  }
  while (!entries.empty() && query(entries.front().ended) != Fired::No) {
    giveBack(entries.front().begun);
    giveBack(entries.front().ended);
    entries.pop_front();
  }
  if (entries.size() >= kLimit) {
    gap = true;
    return;
  }
  staged = takeEvent();
  if (staged && cudaEventRecord(staged, stream) != cudaSuccess) {
    cudaGetLastError();
    giveBack(staged);
    staged = nullptr;
  }
  if (!staged)
    gap = true;
}

void PendingCollectives::end(const std::string &call, cudaStream_t stream,
                             uint64_t number) {
  if (!staged)
    return; // begin recorded nothing: the gap is noted
  cudaEvent_t ended = takeEvent();
  if (!ended || cudaEventRecord(ended, stream) != cudaSuccess) {
    cudaGetLastError();
    giveBack(ended);
    giveBack(staged);
    staged = nullptr;
    gap = true;
    return;
  }
  entries.push_back({staged, ended, call, number});
  staged = nullptr;
}

PendingCollectives::Unfinished PendingCollectives::firstUnfinished() {
  if (gap)
    return {};
  for (const Entry &entry : entries) {
    const Fired ended = query(entry.ended);
    if (ended == Fired::Yes)
      continue;
    if (ended == Fired::Unknown)
      return {};
    return {entry.call, entry.number, query(entry.begun) == Fired::Yes};
  }
  return {};
}

PendingCollectives::Unfinished PendingCollectives::inside() {
  for (const Entry &entry : entries) {
    const Fired ended = query(entry.ended);
    if (ended == Fired::Yes)
      continue;
    if (ended == Fired::Unknown || query(entry.begun) != Fired::Yes)
      return {};
    return {entry.call, entry.number, true};
  }
  return {};
}

void PendingCollectives::clear() {
  for (Entry &entry : entries) {
    giveBack(entry.begun);
    giveBack(entry.ended);
  }
  entries.clear();
  gap = false;
}

} // namespace gdnrt
