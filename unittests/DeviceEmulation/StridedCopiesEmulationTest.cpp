//===- StridedCopiesEmulationTest.cpp - the data-movement copy kernel -----===//
//
// Runs the strided-copy kernel body (kernels/include/gdn/device/
// strided_copies.cuh) under the device emulator: every destination byte a
// copy covers gets its source byte, every other byte keeps its guard value.
// The cases reach each vector width (16 down to 1 byte: unaligned widths,
// pitches and base addresses), lines shorter and longer than a block, rows
// further apart than slices (a regrouped dimension), the grid-stride loop
// (caps of one to three blocks, slices with gaps between them), empty
// copies and more copies than one launch holds.
//
//===----------------------------------------------------------------------===//

#include "DeviceEmulator.h"

#include "gdn/device/strided_copies.cuh"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace gdn::device;

namespace {

constexpr unsigned char kGuard = 0xa5;

/// A copy between two byte arrays, by offsets into them.
struct Case {
  size_t dstOffset, dstRowPitch, dstSlicePitch;
  size_t srcOffset, srcRowPitch, srcSlicePitch;
  size_t width, rows, slices;
};

/// Runs `cases` from one source array into one destination array through
/// forEachStridedCopyBatch with `maxBlocks`, then checks every byte of the
/// destination; returns the widths the launches chose, per copy.
std::vector<unsigned> runCopies(const std::vector<Case> &cases,
                                size_t maxBlocks, size_t dstBytes,
                                size_t srcBytes, int *launches = nullptr) {
  std::vector<unsigned char> src(srcBytes), dst(dstBytes, kGuard);
  for (size_t i = 0; i < srcBytes; ++i)
    src[i] = static_cast<unsigned char>(i * 131 + 7);
  std::vector<unsigned char> want = dst;
  std::vector<gdn::StridedCopy> copies;
  for (const Case &c : cases) {
    copies.push_back({dst.data() + c.dstOffset, c.dstRowPitch, c.dstSlicePitch,
                      src.data() + c.srcOffset, c.srcRowPitch, c.srcSlicePitch,
                      c.width, c.rows, c.slices});
    for (size_t s = 0; s < c.slices; ++s)
      for (size_t r = 0; r < c.rows; ++r)
        for (size_t b = 0; b < c.width; ++b)
          want[c.dstOffset + s * c.dstSlicePitch + r * c.dstRowPitch + b] =
              src[c.srcOffset + s * c.srcSlicePitch + r * c.srcRowPitch + b];
  }
  std::vector<unsigned> widths;
  int count = 0;
  const int status = forEachStridedCopyBatch(
      copies.data(), static_cast<int>(copies.size()), maxBlocks,
      [&](const StridedCopyBatch &batch, int filled, unsigned blocks) {
        EXPECT_LE(blocks, maxBlocks);
        for (int i = 0; i < filled; ++i)
          widths.push_back(batch.plans[i].vectorBytes);
        emulation::runGrid(dim3{blocks, unsigned(filled), 1},
                           kStridedCopyThreads,
                           [&] { stridedCopiesBody(batch); });
        ++count;
        return 0;
      });
  EXPECT_EQ(status, 0);
  if (launches)
    *launches = count;
  for (size_t i = 0; i < dstBytes; ++i)
    if (dst[i] != want[i]) {
      ADD_FAILURE() << "destination byte " << i << " is " << int(dst[i])
                    << ", expected " << int(want[i])
                    << (want[i] == kGuard ? " (outside every copy)" : "");
      break;
    }
  return widths;
}

TEST(StridedCopiesEmulation, SplitsLikeQwen3NextQkvz) {
  // Two tokens of four key-head groups of [q 32 | k 32 | v 64 | z 64]
  // bytes, split into [q | k | v] and z: 16-byte vectors, lines of two to
  // four vectors, several lines per block.
  const size_t group = 192, row = 4 * group, tokens = 2;
  std::vector<Case> cases = {
      {0, 32, 512, 0, group, row, 32, 4, tokens},
      {128, 32, 512, 32, group, row, 32, 4, tokens},
      {256, 64, 512, 64, group, row, 64, 4, tokens},
      {tokens * 512, 64, 256, 128, group, row, 64, 4, tokens},
  };
  const std::vector<unsigned> widths =
      runCopies(cases, kStridedCopyMaxBlocks, tokens * 768, tokens * row);
  EXPECT_EQ(widths, (std::vector<unsigned>{16, 16, 16, 16}));
}

TEST(StridedCopiesEmulation, NarrowsTheVectorToWhatAlignmentAllows) {
  const std::vector<unsigned> widths = runCopies(
      {
          {0, 40, 8, 0, 24, 8, 8, 3, 5},        // 8-byte pitches
          {200, 12, 36, 160, 12, 36, 12, 3, 2}, // 4 bytes
          {300, 6, 18, 300, 10, 30, 6, 3, 2},   // 2 bytes
          {400, 6, 18, 401, 10, 30, 6, 3, 2},   // an odd source address
          {500, 5, 15, 500, 7, 21, 5, 3, 2},    // an odd width
      },
      kStridedCopyMaxBlocks, 600, 600);
  EXPECT_EQ(widths, (std::vector<unsigned>{8, 4, 2, 1, 1}));
}

TEST(StridedCopiesEmulation, RowsFurtherApartThanSlices) {
  // A regrouped dimension whose slice is not a whole number of rows: row
  // pitch 40 and slice pitch 8 on the source side.
  runCopies({{0, 16, 48, 0, 40, 8, 16, 3, 5}}, kStridedCopyMaxBlocks, 240,
            200);
}

TEST(StridedCopiesEmulation, LinesLongerThanABlock) {
  // 300 vectors per line: the whole block walks one line, then loops.
  runCopies({{0, 4800, 9600, 16, 4816, 9632, 4800, 2, 2}},
            kStridedCopyMaxBlocks, 19200, 19280);
}

TEST(StridedCopiesEmulation, LongLinesSplitIntoSegmentsAcrossBlocks) {
  // 4099 vectors per line (three segments, the last of 3 vectors), 2 rows
  // of 3 slices, 8-byte vectors on the source's offset: every (line,
  // segment) unit lands where it belongs whether one block walks them all,
  // a few share them or there is a block per unit.
  const size_t width = 4099 * 8, rowPitch = width + 24,
               slicePitch = 2 * rowPitch + 40;
  for (size_t maxBlocks : {size_t(1), size_t(2), size_t(7), size_t(18),
                           kStridedCopyMaxBlocks}) {
    SCOPED_TRACE("at most " + std::to_string(maxBlocks) + " blocks");
    const std::vector<unsigned> widths = runCopies(
        {{8, rowPitch, slicePitch, 16, rowPitch, slicePitch, width, 2, 3}},
        maxBlocks, 3 * slicePitch + 8, 3 * slicePitch + 16);
    EXPECT_EQ(widths, (std::vector<unsigned>{8}));
  }
}

TEST(StridedCopiesEmulation, GridStrideLoopCoversEveryLine) {
  // 1 vector per line: 256 lines per block on one to three blocks, so that
  // each block steps through its lines by a stride of whole slices plus
  // some rows. Every slice ends in a 48-byte gap on both sides, so a line
  // copied to the wrong (slice, row) (a missed carry of the row into the
  // slice, a wrong stride remainder) lands on a guard byte or misses one.
  for (size_t rows : {1, 3, 7, 300, 1000})
    for (size_t maxBlocks : {1, 2, 3}) {
      const size_t slices = 2000 / rows + 2, pitch = rows * 16 + 48;
      SCOPED_TRACE(std::to_string(rows) + " rows, " + std::to_string(slices) +
                   " slices, at most " + std::to_string(maxBlocks) +
                   " blocks");
      runCopies({{0, 16, pitch, 0, 16, pitch, 16, rows, slices}}, maxBlocks,
                slices * pitch, slices * pitch);
    }
  // A copy of fewer lines than another in the same launch leaves blocks
  // idle.
  runCopies(
      {
          {0, 16, 112, 0, 32, 224, 16, 7, 110},
          {16 * 770, 16, 16, 30000, 16, 16, 16, 1, 3},
      },
      2, 16 * 773, 30048);
}

TEST(StridedCopiesEmulation, SkipsEmptyCopiesAndSplitsLaunchesByEight) {
  std::vector<Case> cases;
  for (size_t i = 0; i < 11; ++i)
    cases.push_back({i * 64, 16, 32, i * 48, 24, 48, 16, 2, 2});
  cases.push_back({0, 16, 32, 0, 24, 48, 16, 2, 0}); // no slices
  cases.push_back({0, 16, 32, 0, 24, 48, 0, 2, 2});  // no bytes
  int launches = 0;
  const std::vector<unsigned> widths =
      runCopies(cases, kStridedCopyMaxBlocks, 11 * 64, 12 * 48, &launches);
  EXPECT_EQ(launches, 2);
  EXPECT_EQ(widths.size(), 11u);
}

} // namespace
