//===- SelectKernels.cpp - kernel tiles from the packing and the device ---===//
//
// Implements gdn-select-kernels. The tiles it picks are the ones measured
// fastest on the H200 for each regime (docs/performance.md). Split chains
// (2026-11-30, session 10; the default): the widest tile and a run-time
// split into segments (1x32768: 0.58 ms against 1.08 with V tile 64
// unsplit). Without them (split-chains=false), the wgmma scan
// (2026-11-30, session 7): V tiles of 128 when (sequence, head) pairs fill
// the SMs (8192x4: 0.58 ms against 0.75 with tiles of 64), 64 when they do
// not (1x32768: 1.07 ms against 1.32 with 128; the best mma.sync tile took
// 1.46). The mma.sync scan (2026-11-29): V tiles of 128 when pairs fill the
// SMs (8192x4: 1.00 ms against 1.23 with tiles of 64), tiles of 32 with two
// staged chunks when they do not (1x32768: 1.46 ms against 2.87). Prologue
// blocks of 512 threads when they divide the channel lanes (2026-11-30:
// gqa16x32 at T = 32768, 0.305 ms against 0.314 with two blocks of 256
// per SM).
//
//===----------------------------------------------------------------------===//

#include "gdn/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

#include <cassert>
#include <optional>

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNSELECTKERNELS
#include "gdn/Transforms/Passes.h.inc"
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
/// columns, narrow ones make blocks when sequences are few. The last tile
/// of a list is taken when none fills the GPU (it makes the most blocks).
/// Unknown `seqs` (0) counts as many.
Tile chooseTile(kernel::DeltaRuleOp op, int64_t seqs, int64_t smCount,
                bool wgmma) {
  static constexpr Tile kWgmmaTiles[] = {{128, 3, true}, {64, 3, true}};
  static constexpr Tile kMmaTiles[] = {{128, 2, false}, {64, 1, false},
                                       {32, 2, false}};
  const int64_t enough = smCount - smCount / 8;
  auto pick = [&](llvm::ArrayRef<Tile> tiles) -> std::optional<Tile> {
    std::optional<Tile> last;
    for (const Tile &tile : tiles) {
      if (!kernel::isSupportedDeltaRuleTile(op.getHeadDimK(),
                                            op.getHeadDimV(), tile.valueTile,
                                            tile.scanStages, tile.wgmma))
        continue;
      const int64_t blocks =
          seqs * op.getValueHeads() * (op.getHeadDimV() / tile.valueTile);
      if (seqs == 0 || blocks >= enough)
        return tile;
      last = tile;
    }
    return last;
  };
  if (wgmma)
    if (std::optional<Tile> tile = pick(kWgmmaTiles))
      return *tile;
  std::optional<Tile> tile = pick(kMmaTiles);
  assert(tile && "the verifier admits only K and V that V tile 32 takes");
  return *tile;
}

/// For a tile chosen without the sequence count: the narrowest tile of the
/// same scan that the measured rule would pick for few sequences (wgmma:
/// 64; mma.sync: 32), if it differs. It keeps the wide tile's stage count
/// (the op has one): right for every wide tile but mma.sync's 64 (one
/// stage), whose fallback 32 was measured best with two.
std::optional<Tile> chooseNarrow(kernel::DeltaRuleOp op, Tile wide) {
  const int64_t narrow = wide.wgmma ? 64 : 32;
  if (narrow >= wide.valueTile ||
      !kernel::isSupportedDeltaRuleTile(op.getHeadDimK(), op.getHeadDimV(),
                                        narrow, wide.scanStages, wide.wgmma))
    return std::nullopt;
  return Tile{narrow, wide.scanStages, wide.wgmma};
}

/// Prologue threads per block: 512 (one block of 16 warps per SM at 128
/// registers, one row range per SM) when whole blocks cover the channels'
/// 16-byte lanes and the ring fits in shared memory, else 256 when that
/// does, else the op's own.
int64_t choosePrologueThreads(kernel::PrologueOp op) {
  const int64_t channels = 2 * op.getKeyHeads() * op.getHeadDimK() +
                           op.getValueHeads() * op.getHeadDimV();
  // Lanes hold 16 bytes of q, k, v; the conv input may take more words.
  const int64_t activationBytes = kernel::getElementBytes(op.getQ().getType());
  const int64_t lanes = channels * activationBytes / 16;
  const int64_t inputWords =
      kernel::getElementBytes(op.getMixedQkv().getType()) / activationBytes;
  for (int64_t threads : {512, 256})
    if (lanes % threads == 0 &&
        kernel::getPrologueSharedBytes(threads, op.getRowsInFlight(),
                                       op.getTokensPerBlock(), inputWords) <=
            kernel::kMaxSharedBytesPerBlock)
      return threads;
  return op.getThreads();
}

struct GdnSelectKernelsPass
    : public mlir::gdn::impl::GdnSelectKernelsBase<GdnSelectKernelsPass> {
  using GdnSelectKernelsBase::GdnSelectKernelsBase;

  void runOnOperation() override {
    if (smCount <= 0 || expectedSeqs < 0 || warmupBits < 0 ||
        warmupBits > kernel::kMaxWarmupBits) {
      emitError(getOperation()->getLoc())
          << "gdn-select-kernels: sm-count (" << static_cast<int64_t>(smCount)
          << ") must be positive, expected-seqs ("
          << static_cast<int64_t>(expectedSeqs)
          << ") not negative and warmup-bits ("
          << static_cast<int64_t>(warmupBits) << ") in [0, "
          << kernel::kMaxWarmupBits << "]";
      return signalPassFailure();
    }
    Builder builder(&getContext());
    getOperation()->walk([&](kernel::DeltaRuleOp op) {
      PackingType packing = op.getPacking().getType();
      const int64_t seqs =
          packing.hasStaticSeqs() ? packing.getSeqs() : expectedSeqs;
      op.removeNarrowValueTileAttr();
      op.removeNarrowBelowBlocksAttr();
      op.removeSplitTargetBlocksAttr();
      op.removeWarmupBitsAttr();
      if (splitChains) {
        // The widest tile (sequences counted as many): split chains make
        // the blocks a narrower tile would, at the wide tile's cost per
        // column (1x32768: 0.58 ms against 1.08 with V tile 64).
        Tile tile = chooseTile(op, /*seqs=*/0, smCount, wgmma);
        op.setValueTileAttr(builder.getI64IntegerAttr(tile.valueTile));
        op.setScanStagesAttr(builder.getI64IntegerAttr(tile.scanStages));
        op.setScanAttr(
            builder.getStringAttr(tile.wgmma ? "wgmma" : "mma_sync"));
        op.setSplitTargetBlocksAttr(builder.getI64IntegerAttr(smCount));
        op.setWarmupBitsAttr(builder.getI64IntegerAttr(warmupBits));
        return;
      }
      Tile tile = chooseTile(op, seqs, smCount, wgmma);
      op.setValueTileAttr(builder.getI64IntegerAttr(tile.valueTile));
      op.setScanStagesAttr(builder.getI64IntegerAttr(tile.scanStages));
      op.setScanAttr(builder.getStringAttr(tile.wgmma ? "wgmma" : "mma_sync"));
      // An unknown count: the narrowest tile of the same scan and stages
      // as a run-time fallback for packs of few sequences.
      if (seqs == 0)
        if (std::optional<Tile> narrow = chooseNarrow(op, tile)) {
          op.setNarrowValueTileAttr(
              builder.getI64IntegerAttr(narrow->valueTile));
          op.setNarrowBelowBlocksAttr(
              builder.getI64IntegerAttr(smCount - smCount / 8));
        }
    });
    getOperation()->walk([&](kernel::PrologueOp op) {
      op.setThreadsAttr(builder.getI64IntegerAttr(choosePrologueThreads(op)));
    });
  }
};

} // namespace
