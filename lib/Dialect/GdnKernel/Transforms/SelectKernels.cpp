//===- SelectKernels.cpp - kernel tiles from the packing and the device ---===//
//
// Implements gdn-select-kernels. The tiles it picks are the ones measured
// fastest on the H200 for each regime (docs/performance.md). Split chains
// (2026-11-30; the default): the widest tile and a run-time split into segments
// (1x32768: 0.58 ms against 1.08 with V tile 64 unsplit). Without them
// (split-chains=false), the wgmma scan (2026-11-30): V tiles of 128 when
// (sequence, head) pairs fill the SMs (8192x4: 0.58 ms against 0.75 with tiles
// of 64), 64 when they do not (1x32768: 1.07 ms against 1.32 with 128; the best
// mma.sync tile took 1.46). The mma.sync scan (2026-11-29): V tiles of 128 when
// pairs fill the SMs (8192x4: 1.00 ms against 1.23 with tiles of 64), tiles of
// 32 with two staged chunks when they do not (1x32768: 1.46 ms against 2.87).
// Prologue blocks of 512 threads when they divide the channel lanes
// (2026-11-30: gqa16x32 at T = 32768, 0.305 ms against 0.314 with two blocks of
// 256 per SM).
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/GdnKernel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

#include <cassert>
#include <optional>

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNSELECTKERNELS
#include "gdn/Dialect/GdnKernel/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {

struct Tile {
  int64_t valueTile, scanStages;
  bool wgmma;
};

/// The widest V tile whose scan blocks (one per sequence, value head and
/// tile) still fill the GPU (within an eighth), with the stage count measured
/// best for it: wide tiles read each chunk's shared operands once for more
/// columns, narrow ones make blocks when sequences are few. The narrowest
/// tile of a list is taken when none fills the GPU (it makes the most
/// blocks). Unknown `seqs` (0) counts as many. mma.sync tiles whose scan
/// needs more than `sharedBytes` are skipped (V tile 32 with one stage,
/// 82 KiB at K = 128, is there for GPUs where nothing else fits); none
/// left: nullopt.
std::optional<Tile> chooseTile(kernel::DeltaRuleOp op, int64_t seqs,
                               int64_t smCount, bool wgmma,
                               int64_t sharedBytes) {
  static constexpr Tile kWgmmaTiles[] = {{128, 3, true}, {64, 3, true}};
  static constexpr Tile kMmaTiles[] = {
      {128, 2, false}, {64, 1, false}, {32, 2, false}, {32, 1, false}};
  const int64_t enough = smCount - smCount / 8;
  auto pick = [&](llvm::ArrayRef<Tile> tiles) -> std::optional<Tile> {
    std::optional<Tile> last;
    for (const Tile &tile : tiles) {
      if (!kernel::isSupportedDeltaRuleTile(op.getHeadDimK(),
                                            op.getHeadDimV(), tile.valueTile,
                                            tile.scanStages, tile.wgmma))
        continue;
      if (!tile.wgmma &&
          kernel::getDeltaRuleScanSharedBytes(op.getHeadDimK(), tile.valueTile,
                                              tile.scanStages) > sharedBytes)
        continue;
      const int64_t blocks =
          seqs * op.getValueHeads() * (op.getHeadDimV() / tile.valueTile);
      if (seqs == 0 || blocks >= enough)
        return tile;
      if (!last || tile.valueTile < last->valueTile)
        last = tile; // the first (measured best) stage count of a width
    }
    return last;
  };
  if (wgmma)
    if (std::optional<Tile> tile = pick(kWgmmaTiles))
      return *tile;
  return pick(kMmaTiles);
}

/// For a tile chosen without the sequence count: the narrowest tile of the
/// same scan that the measured rule would pick for few sequences (wgmma:
/// 64; mma.sync: 32), if it differs. It keeps the wide tile's stage count
/// (the op has one): right for every wide tile but mma.sync's 64 (one
/// stage), whose fallback 32 was measured best with two.
std::optional<Tile> chooseNarrow(kernel::DeltaRuleOp op, Tile wide,
                                 int64_t sharedBytes) {
  const int64_t narrow = wide.wgmma ? 64 : 32;
  if (narrow >= wide.valueTile ||
      !kernel::isSupportedDeltaRuleTile(op.getHeadDimK(), op.getHeadDimV(),
                                        narrow, wide.scanStages, wide.wgmma) ||
      (!wide.wgmma &&
       kernel::getDeltaRuleScanSharedBytes(op.getHeadDimK(), narrow,
                                           wide.scanStages) > sharedBytes))
    return std::nullopt;
  return Tile{narrow, wide.scanStages, wide.wgmma};
}

/// Which kernel computes P (the op's `scores`) when the pass's `scores` option
/// is "auto": "producer" for the wgmma scan at V tile 128 without a narrow
/// fallback (which shares the op's workspace, so with one the op keeps
/// "prepare"), whatever the group of value heads per key head: the scan's block
/// gets a producer warpgroup that computes P while the two consumer warpgroups
/// run the chunk, and the prepare kernel (without Q K^T) makes M and G alone.
/// Measured on the H200 (docs/performance.md), against the previous choice:
/// gqa16x32 (two value heads per key head, already the producer) 0.442-0.444 ms
/// at 8192x4 against 0.453-0.460 before its stages were released early; mha32
/// (one) 0.48-0.55 against 0.52-0.62 with the scan computing P itself ("scan");
/// gqa16x64 (four) 0.90-1.00 against 1.01-1.14 with the prepare kernel's P,
/// whose one Q K^T serves two heads. Groups of three were not timed; they take
/// the same block. "prepare" otherwise (the mma.sync scan, V tile 64: there one
/// warpgroup would make all of P, and in the scan that was 20-34% slower,
/// mha32). The runtime's default for kWgmmaScanScores (delta_rule_wgmma.cuh) is
/// "scan" at V tile 128 with one value head per prepare block; "producer" is
/// asked for explicitly.
StringRef chooseScores(kernel::DeltaRuleOp op, const Tile &tile) {
  if (!tile.wgmma || tile.valueTile != 128 || op.getNarrowValueTile())
    return "prepare";
  return "producer";
}

/// The prologue's vector: 8 bytes of q, k, v a thread where its conv input
/// is twice as wide (an f32 projection output beside bf16 or f16 q, k, v)
/// and a key head still fits a warp's lanes, else 16. The loop over rows
/// is bound by its instructions' latency (16 warps an SM): 16-byte vectors
/// of bf16 over f32 input need more than the 128 registers a thread 512
/// threads allow and spill, a warp issuing every 18.9 cycles; 8-byte ones
/// take 90 registers, no spills, every 10.7 cycles, and run at 92% of
/// device copy against 68% (H100, 2026-12-07, gqa16x32 at T = 32768;
/// docs/performance.md, "Fused prologue"). `forced` (the pass option, 0
/// when unset) overrides the rule: 16, or 8 where the op can take it.
int64_t choosePrologueVectorBytes(kernel::PrologueOp op, int64_t forced) {
  Type activation = getElementTypeOrSelf(op.getQ().getType());
  Type input = getElementTypeOrSelf(op.getMixedQkv().getType());
  // One 16-byte word of input a thread and row (4 channels of f32 beside
  // 16-bit q, k, v), and a key head within a warp's lanes.
  const bool eightFits =
      kernel::getPrologueInputWords(input, activation, 8) == 1 &&
      kernel::isLaneGroup(op.getHeadDimK(), activation, 8);
  return forced == 16 || !eightFits ? 16 : 8;
}

/// Prologue threads per block: 512 (one block of 16 warps per SM, one row
/// range per SM) when whole blocks cover the channels' lanes and the ring
/// fits in shared memory, else 256 when that does, else the op's own.
int64_t choosePrologueThreads(kernel::PrologueOp op, int64_t vectorBytes) {
  const int64_t channels = 2 * op.getKeyHeads() * op.getHeadDimK() +
                           op.getValueHeads() * op.getHeadDimV();
  Type activation = getElementTypeOrSelf(op.getQ().getType());
  const int64_t lanes =
      channels * kernel::getElementBytes(activation) / vectorBytes;
  // The conv input may take more words than a lane's q, k, v.
  const int64_t inputWords = kernel::getPrologueInputWords(
      op.getMixedQkv().getType(), activation, vectorBytes);
  for (int64_t threads : {512, 256})
    if (lanes % threads == 0 &&
        kernel::getPrologueSharedBytes(threads, op.getRowsInFlight(),
                                       inputWords) <=
            kernel::kMaxSharedBytesPerBlock)
      return threads;
  return op.getThreads();
}

struct GdnSelectKernelsPass
    : public mlir::gdn::impl::GdnSelectKernelsBase<GdnSelectKernelsPass> {
  using GdnSelectKernelsBase::GdnSelectKernelsBase;

  void runOnOperation() override {
    if (scores != "auto" && scores != "prepare" && scores != "scan" &&
        scores != "producer") {
      emitError(getOperation()->getLoc())
          << "gdn-select-kernels: scores must be auto, prepare, scan or "
             "producer, found '"
          << scores << "'";
      return signalPassFailure();
    }
    if (prologueVectorBytes != 0 && prologueVectorBytes != 8 &&
        prologueVectorBytes != 16) {
      emitError(getOperation()->getLoc())
          << "gdn-select-kernels: prologue-vector-bytes must be 0 (chosen), 8 "
             "or 16, found "
          << static_cast<int64_t>(prologueVectorBytes);
      return signalPassFailure();
    }
    if (smCount <= 0 || expectedSeqs < 0 || warmupBits < 0 ||
        warmupBits > kernel::kMaxWarmupBits || sharedBytes <= 0) {
      emitError(getOperation()->getLoc())
          << "gdn-select-kernels: sm-count (" << static_cast<int64_t>(smCount)
          << ") must be positive, expected-seqs ("
          << static_cast<int64_t>(expectedSeqs)
          << ") not negative and warmup-bits ("
          << static_cast<int64_t>(warmupBits) << ") in [0, "
          << kernel::kMaxWarmupBits << "], shared-bytes ("
          << static_cast<int64_t>(sharedBytes) << ") positive";
      return signalPassFailure();
    }
    Builder builder(&getContext());
    bool failed = false;
    getOperation()->walk([&](kernel::DeltaRuleOp op) {
      PackingType packing = op.getPacking().getType();
      const int64_t seqs =
          packing.hasStaticSeqs() ? packing.getSeqs() : expectedSeqs;
      // With split chains, the widest tile (sequences counted as many):
      // split chains make the blocks a narrower tile would, at the wide
      // tile's cost per column (1x32768: 0.58 ms against 1.08 with V tile
      // 64).
      std::optional<Tile> chosen =
          chooseTile(op, splitChains ? 0 : seqs, smCount, wgmma, sharedBytes);
      if (!chosen) {
        op.emitError() << "gdn-select-kernels: no mma.sync scan tile fits in "
                       << static_cast<int64_t>(sharedBytes)
                       << " bytes of shared memory (shared-bytes) at K = "
                       << op.getHeadDimK() << "; the smallest (V tile 32, "
                       << "one stage) needs "
                       << kernel::getDeltaRuleScanSharedBytes(op.getHeadDimK(),
                                                              32, 1);
        failed = true;
        return;
      }
      const Tile tile = *chosen;
      op.removeNarrowValueTileAttr();
      op.removeNarrowBelowBlocksAttr();
      op.removeSplitTargetBlocksAttr();
      op.removeWarmupBitsAttr();
      op.setValueTileAttr(builder.getI64IntegerAttr(tile.valueTile));
      op.setScanStagesAttr(builder.getI64IntegerAttr(tile.scanStages));
      op.setScanAttr(builder.getStringAttr(tile.wgmma ? "wgmma" : "mma_sync"));
      if (splitChains) {
        op.setSplitTargetBlocksAttr(builder.getI64IntegerAttr(smCount));
        op.setWarmupBitsAttr(builder.getI64IntegerAttr(warmupBits));
      } else if (seqs == 0) {
        // An unknown count: the narrowest tile of the same scan and stages
        // as a run-time fallback for packs of few sequences.
        if (std::optional<Tile> narrow = chooseNarrow(op, tile, sharedBytes)) {
          op.setNarrowValueTileAttr(
              builder.getI64IntegerAttr(narrow->valueTile));
          op.setNarrowBelowBlocksAttr(
              builder.getI64IntegerAttr(smCount - smCount / 8));
        }
      }
      // A forced choice the tile cannot take fails the op's verifier,
      // which names the conflict.
      op.setScoresAttr(builder.getStringAttr(
          scores == "auto" ? chooseScores(op, tile) : StringRef(scores)));
    });
    if (failed)
      return signalPassFailure();
    // The backward's two scans split long chains by the same rule, and the
    // backward runs on wgmma where the target has it: the recomputation
    // (H200, gqa16x32: 0.58-0.62 ms against 0.84-0.93 on mma.sync), the
    // reverse scan (H100: 0.89-0.96 ms against 1.38-1.52) and the chunk
    // gradients (H100: 1.26-1.28 ms against 1.80; the whole backward at 32K
    // tokens in 8, 3.20 against 3.75 ms).
    getOperation()->walk([&](kernel::DeltaRuleGradOp op) {
      op.setScanAttr(builder.getStringAttr(wgmma ? "wgmma" : "mma_sync"));
      op.removeSplitTargetBlocksAttr();
      op.removeWarmupBitsAttr();
      if (!splitChains)
        return;
      op.setSplitTargetBlocksAttr(builder.getI64IntegerAttr(smCount));
      op.setWarmupBitsAttr(builder.getI64IntegerAttr(warmupBits));
    });
    getOperation()->walk([&](kernel::PrologueOp op) {
      const int64_t vectorBytes =
          choosePrologueVectorBytes(op, prologueVectorBytes);
      op.setVectorBytes(vectorBytes);
      op.setThreadsAttr(
          builder.getI64IntegerAttr(choosePrologueThreads(op, vectorBytes)));
    });
  }
};

} // namespace
