//===- PackingValidation.h - checks on cu_seqlens ---------------*- C++ -*-===//
//
// The rules a packing's offsets must obey (docs/spec.md, "Packing rules"),
// written once and shared by the verifier (constant offsets), the reference
// interpreter (run-time offsets) and host-side runtime checks. Depends on LLVM
// support only, so anything can link it.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_SUPPORT_PACKINGVALIDATION_H
#define GDN_SUPPORT_PACKINGVALIDATION_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::gdn {

/// Largest token count a packing may describe (offsets are int32).
constexpr int64_t kMaxPackedTokens = (int64_t(1) << 31) - 1;

/// Checks cumulative offsets: at least one entry, `offsets[0] == 0`,
/// non-decreasing, every entry within int32, and, when `expectedTotal` is
/// not negative, `offsets.back() == expectedTotal`. Returns a message naming
/// the offending index and values, or nullopt when valid. `name` is the
/// operand's name in the message (`cu_seqlens`, `cu_padded`).
std::optional<std::string> checkOffsets(llvm::ArrayRef<int64_t> offsets,
                                        int64_t expectedTotal,
                                        llvm::StringRef name);

/// Checks a padded packing: both offset arrays valid on their own, equally
/// long, and every real length no larger than its slot. Returns nullopt when
/// valid. `expectedBuffer` (the slot total) may be negative when unknown.
std::optional<std::string> checkPaddedOffsets(llvm::ArrayRef<int64_t> cuSeqlens,
                                              llvm::ArrayRef<int64_t> cuPadded,
                                              int64_t expectedBuffer);

/// Checks that no sequence's real length exceeds `maxLen`.
std::optional<std::string> checkMaxLength(llvm::ArrayRef<int64_t> cuSeqlens,
                                          int64_t maxLen);

} // namespace mlir::gdn

#endif // GDN_SUPPORT_PACKINGVALIDATION_H
