//===- Rendezvous.h - hand rank 0's NCCL id to the other ranks ---*- C++
//-*-===//
//
// Standalone multi-process runs have no framework to pass the NCCL unique id
// around. Rank 0 publishes it; every other rank waits for it, for at most
// the timeout. Two transports:
//   file:<path>        rank 0 writes the id atomically (write, then rename);
//                      the path must be fresh for each job;
//   tcp:<host>:<port>  rank 0 listens, every other rank connects and says
//                      who it is and the port of its ProgressService; rank
//                      0 checks ranks and sizes and answers with the id and
//                      where every rank's service is (the progress board
//                      over the network, ProgressBoard.h), or with the
//                      reason it refuses.
// Pure host code (no CUDA, no NCCL), so it is tested on the CPU.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_LIB_RENDEZVOUS_H
#define GDN_RUNTIME_LIB_RENDEZVOUS_H

#include "ProgressBoard.h"
#include "gdn/runtime/abi.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gdnrt {

/// Rank 0 publishes `id` (GDNRT_UNIQUE_ID_BYTES bytes); every other rank
/// fills it. Returns a gdn_error_t; on failure `error` says why, naming the
/// rendezvous, the rank and what is missing. Over tcp: with `peers`, each
/// rank passes its ProgressService's port (`progressPort`, 0 for none) and
/// gets where every rank's service answers (empty for any other
/// rendezvous, and for one rank).
int exchangeUniqueId(const std::string &rendezvous, int rank, int size,
                     int64_t timeoutMs, char *id, std::string &error,
                     uint16_t progressPort = 0,
                     std::vector<ProgressBoard::Peer> *peers = nullptr);

} // namespace gdnrt

#endif // GDN_RUNTIME_LIB_RENDEZVOUS_H
