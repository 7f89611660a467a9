//===- Packing.cpp - packed-sequence metadata at run time -----------------===//
//
// Run-time offsets get exactly the checks constant offsets get in the
// verifier (lib/Support/PackingValidation.cpp).
//
//===----------------------------------------------------------------------===//

#include "gdn/Interpreter/Packing.h"

#include "gdn/Support/PackingValidation.h"

using namespace mlir::gdn;
using namespace mlir::gdn::interp;

llvm::Expected<PackingInfo>
PackingInfo::create(std::vector<int64_t> cuSeqlens,
                    std::optional<std::vector<int64_t>> cuPadded,
                    int64_t expectedBuffer) {
  std::optional<std::string> error =
      cuPadded ? checkPaddedOffsets(cuSeqlens, *cuPadded, expectedBuffer)
               : checkOffsets(cuSeqlens, expectedBuffer, "cu_seqlens");
  if (error)
    return llvm::createStringError("invalid packing at run time: " + *error);
  PackingInfo info;
  info.cuSeqlens = std::move(cuSeqlens);
  if (cuPadded)
    info.cuPadded = std::move(*cuPadded);
  return info;
}
