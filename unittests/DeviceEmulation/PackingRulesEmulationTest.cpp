//===- PackingRulesEmulationTest.cpp - device and host find one violation -===//
//
// The packing rules are written once (gdn/runtime/packing_rules.h): the
// host walks the offsets in order (packing::firstViolation, what the
// verifier and the interpreter report), the device checks one entry per
// thread and keeps the lowest (findFirstViolation in packing.cuh, what a
// generated entry point reports). This runs the device check on host
// threads over random hostile offsets, padded and not, and requires the same
// status record, field by field, as the host's walk; equal records make the
// same message, since one table describes both.
//
//===----------------------------------------------------------------------===//

#include "DeviceEmulator.h"

#include "gdn/device/packing.cuh"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

using namespace gdn::device;

namespace {

/// What the host reports for `cu` (and `cuPadded` when not empty) over a
/// buffer of `tokens` rows: the walk the verifier and the interpreter make
/// (lib/Support/PackingValidation.cpp calls the same two functions).
gdn_status_t hostStatus(const std::vector<int32_t> &cu,
                        const std::vector<int32_t> &cuPadded, int64_t tokens) {
  if (cuPadded.empty())
    return gdn::packing::firstViolation(cu.data(),
                                        static_cast<int64_t>(cu.size()), tokens,
                                        /*padded=*/false);
  return gdn::packing::firstPaddedViolation(
      cu.data(), static_cast<int64_t>(cu.size()), cuPadded.data(),
      static_cast<int64_t>(cuPadded.size()), tokens);
}

/// What the device records, run as one block of `threads` threads.
gdn_status_t deviceStatus(const std::vector<int32_t> &cu,
                          const std::vector<int32_t> &cuPadded, int32_t tokens,
                          unsigned threads) {
  PackingView view = {cu.data(), cuPadded.empty() ? nullptr : cuPadded.data(),
                      static_cast<int32_t>(cu.size()) - 1, tokens};
  gdn_status_t status;
  std::memset(&status, 0x5a, sizeof(status));
  unsigned long long blockKey = 0; // the kernel's one word of shared memory
  emulation::runGrid(dim3{1, 1, 1}, threads, [&] {
    const unsigned long long first = findFirstViolation(view, &blockKey);
    if (threadIdx.x == 0)
      writeStatus(view, first, &status);
  });
  return status;
}

std::string describe(const gdn_status_t &status) {
  char message[512];
  return gdn::packing::describe(status, message, sizeof(message));
}

/// Valid offsets of `n` sequences, then one hostile change (or none).
std::vector<int32_t> randomOffsets(std::mt19937 &random, int n,
                                   int32_t &total) {
  std::vector<int32_t> cu(n + 1, 0);
  for (int i = 1; i <= n; ++i)
    cu[i] = cu[i - 1] + static_cast<int32_t>(random() % 6);
  total = cu[n];
  return cu;
}

void breakOne(std::mt19937 &random, std::vector<int32_t> &cu) {
  const size_t i = random() % cu.size();
  switch (random() % 4) {
  case 0:
    cu[i] += 1 + static_cast<int32_t>(random() % 3);
    break;
  case 1:
    cu[i] -= 1 + static_cast<int32_t>(random() % 3);
    break;
  case 2:
    cu[i] = -static_cast<int32_t>(random() % 100);
    break;
  default:
    break; // stays valid
  }
}

TEST(PackingRulesEmulation, DeviceAndHostReportTheSameViolation) {
  std::mt19937 random(7);
  int violations = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int n = static_cast<int>(random() % 9);
    int32_t total = 0;
    std::vector<int32_t> cu = randomOffsets(random, n, total);
    std::vector<int32_t> cuPadded;
    int32_t tokens = total;
    if (random() % 2) {
      // Slots at least as long as the sequences, then a hostile change to
      // either array.
      cuPadded.assign(n + 1, 0);
      for (int i = 1; i <= n; ++i)
        cuPadded[i] = cuPadded[i - 1] + (cu[i] - cu[i - 1]) +
                      static_cast<int32_t>(random() % 3);
      tokens = cuPadded[n];
      breakOne(random, random() % 2 ? cu : cuPadded);
    } else {
      breakOne(random, cu);
      if (random() % 4 == 0)
        tokens += 1 + static_cast<int32_t>(random() % 3);
    }
    const unsigned threads = random() % 2 ? 32 : 4; // several entries each
    const gdn_status_t host = hostStatus(cu, cuPadded, tokens);
    const gdn_status_t device = deviceStatus(cu, cuPadded, tokens, threads);
    violations += host.code != GDN_STATUS_OK;
    EXPECT_EQ(device.code, host.code) << describe(host);
    EXPECT_EQ(device.index, host.index) << describe(host);
    EXPECT_EQ(device.value, host.value) << describe(host);
    EXPECT_EQ(device.bound, host.bound) << describe(host);
    EXPECT_EQ(device.padded, host.padded) << describe(host);
    EXPECT_EQ(describe(device), describe(host));
  }
  // The generator must produce both kinds, or the comparison proves little.
  EXPECT_GT(violations, 100);
  EXPECT_LT(violations, 380);
}

TEST(PackingRulesEmulation, MessagesNameTheEntryAndTheFix) {
  int32_t noOffsets = 0;
  const gdn_status_t none =
      gdn::packing::firstViolation(&noOffsets, 0, 0, /*padded=*/false);
  EXPECT_EQ(describe(none),
            "cu_seqlens must have at least one entry (N + 1 for N sequences)");
  const std::vector<int32_t> shortTotal = {0, 3, 7};
  EXPECT_EQ(describe(gdn::packing::firstViolation(shortTotal.data(), 3, 8,
                                                  /*padded=*/false)),
            "cu_seqlens[2] = 7 must equal the token count 8; if the buffer "
            "holds alignment padding, give its padded offsets (cu_padded)");
  const std::vector<int64_t> wide = {0, int64_t(1) << 32};
  EXPECT_EQ(describe(gdn::packing::firstViolation(wide.data(), 2, -1,
                                                  /*padded=*/false)),
            "cu_seqlens[1] = 4294967296 exceeds the int32 token limit "
            "2147483647; split the pack");
}

} // namespace
