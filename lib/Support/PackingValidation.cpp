//===- PackingValidation.cpp - checks on cu_seqlens -----------------------===//
//
// The packing rules (docs/spec.md, "Packing rules") for the verifier and the
// interpreter: the rules and their messages are gdn/runtime/packing_rules.h,
// which the generated code's device checks use too, so a violation reads
// the same wherever it is found.
//
//===----------------------------------------------------------------------===//

#include "gdn/Support/PackingValidation.h"

#include "gdn/runtime/packing_rules.h"

using namespace mlir::gdn;

namespace {
std::optional<std::string> describe(const gdn_status_t &status) {
  if (status.code == GDN_STATUS_OK)
    return std::nullopt;
  char message[512];
  return std::string(gdn::packing::describe(status, message, sizeof(message)));
}
} // namespace

std::optional<std::string>
mlir::gdn::checkOffsets(llvm::ArrayRef<int64_t> offsets, int64_t expectedTotal,
                        llvm::StringRef name) {
  return describe(::gdn::packing::firstViolation(
      offsets.data(), static_cast<int64_t>(offsets.size()), expectedTotal,
      /*padded=*/name == "cu_padded"));
}

std::optional<std::string>
mlir::gdn::checkPaddedOffsets(llvm::ArrayRef<int64_t> cuSeqlens,
                              llvm::ArrayRef<int64_t> cuPadded,
                              int64_t expectedBuffer) {
  return describe(::gdn::packing::firstPaddedViolation(
      cuSeqlens.data(), static_cast<int64_t>(cuSeqlens.size()),
      cuPadded.data(), static_cast<int64_t>(cuPadded.size()), expectedBuffer));
}

std::optional<std::string>
mlir::gdn::checkMaxLength(llvm::ArrayRef<int64_t> cuSeqlens, int64_t maxLen) {
  for (size_t i = 0; i + 1 < cuSeqlens.size(); ++i) {
    int64_t length = cuSeqlens[i + 1] - cuSeqlens[i];
    if (length > maxLen) {
      gdn_status_t status = {};
      status.code = GDN_STATUS_ABOVE_MAX_LEN;
      status.index = static_cast<int32_t>(i);
      status.value = length;
      status.bound = maxLen;
      return describe(status);
    }
  }
  return std::nullopt;
}
