//===- PackingValidation.cpp - checks on cu_seqlens -----------------------===//
//
// Implements the offset rules of SEMANTICS.md. Messages name the offending
// index and value and say what would have been valid, because they reach users
// from the verifier, the interpreter and the runtime alike.
//
//===----------------------------------------------------------------------===//

#include "gdn/Support/PackingValidation.h"

#include "llvm/ADT/Twine.h"

using namespace mlir::gdn;

std::optional<std::string>
mlir::gdn::checkOffsets(llvm::ArrayRef<int64_t> offsets, int64_t expectedTotal,
                        llvm::StringRef name) {
  if (offsets.empty())
    return (name + " must have at least one entry (N + 1 for N sequences)")
        .str();
  if (offsets[0] != 0)
    return (name + "[0] must be 0, found " + llvm::Twine(offsets[0])).str();
  for (size_t i = 1; i < offsets.size(); ++i) {
    if (offsets[i] < offsets[i - 1])
      return (name + " must be non-decreasing, but " + name + "[" +
              llvm::Twine(i) + "] = " + llvm::Twine(offsets[i]) + " < " + name +
              "[" + llvm::Twine(i - 1) + "] = " + llvm::Twine(offsets[i - 1]))
          .str();
    if (offsets[i] > kMaxPackedTokens)
      return (name + "[" + llvm::Twine(i) + "] = " + llvm::Twine(offsets[i]) +
              " exceeds the int32 token limit " +
              llvm::Twine(kMaxPackedTokens) + "; split the pack")
          .str();
  }
  if (expectedTotal >= 0 && offsets.back() != expectedTotal) {
    // Fewer real tokens than buffer rows is what alignment padding looks
    // like when its offsets were not passed.
    const bool looksPadded =
        name == "cu_seqlens" && offsets.back() < expectedTotal;
    return (name + "[" + llvm::Twine(offsets.size() - 1) +
            "] = " + llvm::Twine(offsets.back()) +
            " must equal the token count " + llvm::Twine(expectedTotal) +
            (looksPadded ? "; if the buffer holds alignment padding, give "
                           "the packing its padded offsets (gdn.packing %cu "
                           "padded %cu_padded)"
                         : ""))
        .str();
  }
  return std::nullopt;
}

std::optional<std::string>
mlir::gdn::checkPaddedOffsets(llvm::ArrayRef<int64_t> cuSeqlens,
                              llvm::ArrayRef<int64_t> cuPadded,
                              int64_t expectedBuffer) {
  if (auto error = checkOffsets(cuSeqlens, /*expectedTotal=*/-1, "cu_seqlens"))
    return error;
  if (auto error = checkOffsets(cuPadded, expectedBuffer, "cu_padded"))
    return error;
  if (cuSeqlens.size() != cuPadded.size())
    return ("cu_padded has " + llvm::Twine(cuPadded.size()) +
            " entries but cu_seqlens has " + llvm::Twine(cuSeqlens.size()) +
            "; both need N + 1")
        .str();
  for (size_t i = 0; i + 1 < cuSeqlens.size(); ++i) {
    int64_t length = cuSeqlens[i + 1] - cuSeqlens[i];
    int64_t slot = cuPadded[i + 1] - cuPadded[i];
    if (length > slot)
      return ("sequence " + llvm::Twine(i) + " has " + llvm::Twine(length) +
              " real tokens but its padded slot holds only " +
              llvm::Twine(slot) + " (cu_padded[" + llvm::Twine(i) +
              "] = " + llvm::Twine(cuPadded[i]) + ", cu_padded[" +
              llvm::Twine(i + 1) + "] = " + llvm::Twine(cuPadded[i + 1]) + ")")
          .str();
  }
  return std::nullopt;
}

std::optional<std::string>
mlir::gdn::checkMaxLength(llvm::ArrayRef<int64_t> cuSeqlens, int64_t maxLen) {
  for (size_t i = 0; i + 1 < cuSeqlens.size(); ++i) {
    int64_t length = cuSeqlens[i + 1] - cuSeqlens[i];
    if (length > maxLen)
      return ("sequence " + llvm::Twine(i) + " has length " +
              llvm::Twine(length) + ", above max_len = " + llvm::Twine(maxLen) +
              "; raise max_len or split the sequence")
          .str();
  }
  return std::nullopt;
}
