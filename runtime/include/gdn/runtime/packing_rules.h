//===- packing_rules.h - the rules of cu_seqlens, once ----------*- C++ -*-===//
//
// The rules a packing's offsets obey (docs/spec.md, "Packing rules") and the
// one table of messages that describes a violation. Everything that checks
// offsets uses this header: the verifier and the interpreter on the host
// (lib/Support/PackingValidation.cpp, int64 offsets), and the generated code
// on the device (kernels/include/gdn/device/packing.cuh, int32 offsets, one
// entry per thread). A violation is a gdn_status_t (gdn/runtime/abi.h): the
// code, the offending index and value, and the bound it broke, so the device
// can record one without formatting text and the host describes it the same
// way wherever it was found. Depends on the C library only.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_PACKING_RULES_H
#define GDN_RUNTIME_PACKING_RULES_H

#include "gdn/runtime/abi.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__CUDACC__)
#define GDN_PACKING_HOST_DEVICE __host__ __device__
#else
#define GDN_PACKING_HOST_DEVICE
#endif

namespace gdn {
namespace packing {

/// Largest token count a packing may describe: offsets are int32.
constexpr int64_t kMaxTokens = 2147483647;

/// The violation at entry `i` of offsets whose last entry is `last` (N for N
/// sequences), or GDN_STATUS_OK. `previous` is entry i - 1 (unused at 0);
/// `total`, the token count the last entry must equal, or negative when
/// unknown. Entry by entry, so that a device thread checks one entry and the
/// host a loop of them, under the same rule.
GDN_PACKING_HOST_DEVICE inline int32_t
entryViolation(int64_t i, int64_t value, int64_t previous, int64_t last,
               int64_t total) {
  if (i == 0 && value != 0)
    return GDN_STATUS_FIRST_NOT_ZERO;
  if (i > 0 && value < previous)
    return GDN_STATUS_DECREASING;
  if (value > kMaxTokens)
    return GDN_STATUS_TOKEN_LIMIT;
  if (i == last && total >= 0 && value != total)
    return GDN_STATUS_WRONG_TOTAL;
  return GDN_STATUS_OK;
}

/// The status of violation `code` at entry `i` of `cu` (N + 1 entries),
/// with the value and bound its message quotes.
template <class Offset>
GDN_PACKING_HOST_DEVICE inline gdn_status_t
entryStatus(int32_t code, int64_t i, const Offset *cu, int64_t total,
            bool padded) {
  gdn_status_t status = {};
  status.code = code;
  status.index = static_cast<int32_t>(i);
  status.padded = padded ? 1 : 0;
  status.value = static_cast<int64_t>(cu[i]);
  switch (code) {
  case GDN_STATUS_FIRST_NOT_ZERO:
    status.bound = 0;
    break;
  case GDN_STATUS_DECREASING:
    status.bound = static_cast<int64_t>(cu[i - 1]);
    break;
  case GDN_STATUS_TOKEN_LIMIT:
    status.bound = kMaxTokens;
    break;
  case GDN_STATUS_WRONG_TOTAL:
    status.bound = total;
    break;
  }
  return status;
}

/// The first violation of offsets `cu` with `count` entries (N + 1), or a
/// status with code GDN_STATUS_OK. `total` as for entryViolation.
template <class Offset>
inline gdn_status_t firstViolation(const Offset *cu, int64_t count,
                                   int64_t total, bool padded) {
  gdn_status_t status = {};
  if (count <= 0) {
    status.code = GDN_STATUS_NO_OFFSETS;
    status.padded = padded ? 1 : 0;
    return status;
  }
  for (int64_t i = 0; i < count; ++i) {
    const int32_t code =
        entryViolation(i, static_cast<int64_t>(cu[i]),
                       i > 0 ? static_cast<int64_t>(cu[i - 1]) : 0, count - 1,
                       total);
    if (code != GDN_STATUS_OK)
      return entryStatus(code, i, cu, total, padded);
  }
  return status;
}

/// The status of a sequence whose real length exceeds its padded slot.
inline gdn_status_t slotTooSmall(int64_t sequence, int64_t length,
                                 int64_t slot) {
  gdn_status_t status = {};
  status.code = GDN_STATUS_SLOT_TOO_SMALL;
  status.index = static_cast<int32_t>(sequence);
  status.value = length;
  status.bound = slot;
  return status;
}

/// The first violation of a padded packing, in the host's order: the real
/// offsets `cu` alone (their total is not the buffer's), then the slot
/// offsets `cuPadded` (whose last entry must be `total` when not
/// negative), then the two arrays' lengths, then each sequence against its
/// slot. The device finds the same one (packing.cuh's violation keys).
template <class Offset>
inline gdn_status_t firstPaddedViolation(const Offset *cu, int64_t count,
                                         const Offset *cuPadded,
                                         int64_t paddedCount, int64_t total) {
  gdn_status_t status = firstViolation(cu, count, /*total=*/-1, false);
  if (status.code != GDN_STATUS_OK)
    return status;
  status = firstViolation(cuPadded, paddedCount, total, true);
  if (status.code != GDN_STATUS_OK)
    return status;
  if (count != paddedCount) {
    status.code = GDN_STATUS_COUNT_MISMATCH;
    status.value = paddedCount;
    status.bound = count;
    return status;
  }
  for (int64_t i = 0; i + 1 < count; ++i) {
    const int64_t length =
        static_cast<int64_t>(cu[i + 1]) - static_cast<int64_t>(cu[i]);
    const int64_t slot = static_cast<int64_t>(cuPadded[i + 1]) -
                         static_cast<int64_t>(cuPadded[i]);
    if (length > slot)
      return slotTooSmall(i, length, slot);
  }
  return status;
}

/// Writes the message of `status` into `message` (at most `size` bytes,
/// always terminated) and returns `message`. This is the one table of the
/// packing rules' messages: each names the offending entry and value and
/// says what would have been valid.
inline const char *describe(const gdn_status_t &status, char *message,
                            size_t size) {
  if (!message || !size)
    return message;
  const char *name = status.padded ? "cu_padded" : "cu_seqlens";
  const long long value = static_cast<long long>(status.value);
  const long long bound = static_cast<long long>(status.bound);
  const int index = status.index;
  switch (status.code) {
  case GDN_STATUS_OK:
    snprintf(message, size, "ok");
    break;
  case GDN_STATUS_NO_OFFSETS:
    snprintf(message, size,
             "%s must have at least one entry (N + 1 for N sequences)", name);
    break;
  case GDN_STATUS_FIRST_NOT_ZERO:
    snprintf(message, size, "%s[0] must be 0, found %lld", name, value);
    break;
  case GDN_STATUS_DECREASING:
    snprintf(message, size,
             "%s must be non-decreasing, but %s[%d] = %lld < %s[%d] = %lld",
             name, name, index, value, name, index - 1, bound);
    break;
  case GDN_STATUS_TOKEN_LIMIT:
    snprintf(message, size,
             "%s[%d] = %lld exceeds the int32 token limit %lld; split the pack",
             name, index, value, bound);
    break;
  case GDN_STATUS_WRONG_TOTAL:
    // Fewer real tokens than buffer rows is what alignment padding looks
    // like when the padded offsets were not given.
    snprintf(message, size, "%s[%d] = %lld must equal the token count %lld%s",
             name, index, value, bound,
             !status.padded && value < bound
                 ? "; if the buffer holds alignment padding, give its padded "
                   "offsets (cu_padded)"
                 : "");
    break;
  case GDN_STATUS_SLOT_TOO_SMALL:
    snprintf(message, size,
             "sequence %d has %lld real tokens but its padded slot holds only "
             "%lld",
             index, value, bound);
    break;
  case GDN_STATUS_ZIGZAG_SLOT:
    snprintf(message, size,
             "zigzag sharding over %lld ranks needs every sequence's slot to "
             "be a multiple of %lld, but sequence %d has %lld rows; pad the "
             "sequence or use the contiguous layout",
             bound / 2, bound, index, value);
    break;
  case GDN_STATUS_COUNT_MISMATCH:
    snprintf(message, size,
             "cu_padded has %lld entries but cu_seqlens has %lld; both need "
             "N + 1",
             value, bound);
    break;
  case GDN_STATUS_ABOVE_MAX_LEN:
    snprintf(message, size,
             "sequence %d has length %lld, above max_len = %lld; raise max_len "
             "or split the sequence",
             index, value, bound);
    break;
  default:
    snprintf(message, size, "unknown packing status %d", status.code);
  }
  return message;
}

} // namespace packing
} // namespace gdn

#endif // GDN_RUNTIME_PACKING_RULES_H
