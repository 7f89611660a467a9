//===- PendingCollectives.cpp - which collective an NCCL wait is stuck in -===//

#include "PendingCollectives.h"

#include "Internal.h"

namespace gdnrt {

PendingCollectives::~PendingCollectives() {
  DeviceGuard guard(device);
  for (Entry &entry : entries)
    cudaEventDestroy(entry.event);
  for (cudaEvent_t event : spare)
    cudaEventDestroy(event);
}

void PendingCollectives::retire(Entry &entry) { spare.push_back(entry.event); }

void PendingCollectives::record(const std::string &call, cudaStream_t stream,
                                uint64_t number) {
  while (!entries.empty() &&
         cudaEventQuery(entries.front().event) == cudaSuccess) {
    retire(entries.front());
    entries.pop_front();
  }
  if (entries.size() >= kLimit)
    return;
  DeviceGuard guard(device);
  cudaEvent_t event = nullptr;
  if (!spare.empty()) {
    event = spare.back();
    spare.pop_back();
  } else if (cudaEventCreateWithFlags(&event, cudaEventDisableTiming) !=
             cudaSuccess) {
    cudaGetLastError(); // diagnostics only: leave no sticky error behind
    return;
  }
  if (cudaEventRecord(event, stream) != cudaSuccess) {
    cudaGetLastError();
    spare.push_back(event);
    return;
  }
  entries.push_back({event, call, number});
}

PendingCollectives::Unfinished PendingCollectives::firstUnfinished() {
  for (const Entry &entry : entries)
    if (cudaEventQuery(entry.event) != cudaSuccess) {
      cudaGetLastError();
      return {entry.call, entry.number};
    }
  return {};
}

void PendingCollectives::clear() {
  for (Entry &entry : entries)
    retire(entry);
  entries.clear();
}

} // namespace gdnrt
