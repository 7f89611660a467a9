//===- Packing.h - packed-sequence metadata at run time ---------*- C++ -*-===//
//
// The run-time form of a !gdn.packing value: the offsets, validated with the
// same rules the verifier applies to constants, and the per-sequence ranges
// every token-mixing kernel iterates over.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_INTERPRETER_PACKING_H
#define GDN_INTERPRETER_PACKING_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace mlir::gdn::interp {

class PackingInfo {
public:
  /// Validates and wraps offsets. `cuPadded` is given for padded packings.
  /// `expectedBuffer` (negative when unknown) is the buffer's token count.
  static llvm::Expected<PackingInfo>
  create(std::vector<int64_t> cuSeqlens,
         std::optional<std::vector<int64_t>> cuPadded, int64_t expectedBuffer);

  int64_t getNumSeqs() const {
    return static_cast<int64_t>(cuSeqlens.size()) - 1;
  }
  /// First buffer row of sequence `seq`.
  int64_t getBegin(int64_t seq) const {
    return cuPadded.empty() ? cuSeqlens[seq] : cuPadded[seq];
  }
  /// Number of real tokens of sequence `seq`.
  int64_t getLength(int64_t seq) const {
    return cuSeqlens[seq + 1] - cuSeqlens[seq];
  }
  /// Rows in the buffer (real tokens plus padding).
  int64_t getBufferTokens() const {
    return cuPadded.empty() ? cuSeqlens.back() : cuPadded.back();
  }
  bool isPadded() const { return !cuPadded.empty(); }
  const std::vector<int64_t> &getCuSeqlens() const { return cuSeqlens; }
  const std::vector<int64_t> &getCuPadded() const { return cuPadded; }

private:
  std::vector<int64_t> cuSeqlens;
  std::vector<int64_t> cuPadded;
};

} // namespace mlir::gdn::interp

#endif // GDN_INTERPRETER_PACKING_H
