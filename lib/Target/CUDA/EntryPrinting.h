//===- EntryPrinting.h - what every kernel op's printer uses ----*- C++ -*-===//
//
// The pieces of a kernel entry point shared by the printers of
// KernelPrinters.cpp (forward kernels) and BackwardKernelPrinters.cpp: tensor
// checks, the validate/launch split, scratch queries and the launch's
// status.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_TARGET_CUDA_ENTRYPRINTING_H
#define GDN_LIB_TARGET_CUDA_ENTRYPRINTING_H

#include "KernelPrinters.h"

#include "gdn/Dialect/GdnKernel/IR/GdnKernelDialect.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::gdn::cuda {

/// The element type of a tensor value.
Type elementOf(Value value);

/// Prints `{dim, dim, ...}` for a check: static sizes as numbers, token
/// dimensions as `tokens`, sequence dimensions as `seqs`, others unchecked.
std::string expectedShape(Value value, int tokenDim, int seqDim);

/// Token-indexed tensors have `tokens` rows, per-sequence ones `seqs`.
std::string tokensOrSequences(Value value, bool perSequence);

const char *boolText(bool value);

/// The C++ expression of a split chain's warm-up limit for `warmupBits`
/// (kDefaultWarmupBits when absent): -bits ln 2, or -INFINITY for 0 (exact
/// segments), with a comment saying which.
std::string warmupLogBoundText(std::optional<uint64_t> warmupBits);

/// The position of `value` among `op`'s tensor operands (the entry point's
/// `operands[]`).
unsigned getOperandIndex(Operation *op, Value value);

/// The Config's head counts and dims (kKeyHeads, kValueHeads, kHeadDimK,
/// kHeadDimV), which every GDN kernel op carries as attributes.
template <class KernelOp>
void printHeadConstants(KernelOp op, llvm::raw_ostream &os) {
  os << "  static constexpr int kKeyHeads = " << op.getKeyHeads() << ";\n"
     << "  static constexpr int kValueHeads = " << op.getValueHeads() << ";\n"
     << "  static constexpr int kHeadDimK = " << op.getHeadDimK() << ";\n"
     << "  static constexpr int kHeadDimV = " << op.getHeadDimV() << ";\n";
}

/// The checks of a kernel live in a static `<entry>_validate`, so that a
/// whole-function entry can check every kernel before launching any.
void printValidatePrototype(const KernelContext &k, llvm::raw_ostream &os);

/// Ends `<entry>_validate` and opens the entry point, which validates and
/// then launches.
void printLaunchOpening(const KernelContext &k, llvm::raw_ostream &os);

/// `args.packing = {...};`: the packing view every packed kernel takes.
extern const char *const kPackingView;

/// Ends an entry point: calls `launch<templateArguments>` (a device-header
/// launcher returning a cudaError_t) on `arguments` and maps its result to
/// a status.
void printLaunchReturn(llvm::raw_ostream &os, StringRef launch,
                       StringRef arguments,
                       StringRef templateArguments = "Config");

/// `<entry>_scratch_bytes` (a pure function of the packing's counts, so
/// that the whole-function layout can size it before anything runs:
/// `scratchBytes` is the expression it returns, of `packing`) and the
/// opening of `<entry>_validate` with a check of every tensor's dtype and
/// `shapeOf` it.
void printScratchAndChecks(Operation *op, const KernelContext &k,
                           StringRef scratchBytes,
                           llvm::function_ref<std::string(Value)> shapeOf,
                           llvm::raw_ostream &os);

/// The scratch query of a kernel whose workspace is a function of the
/// packing view (the delta rule's forward and backward).
std::string packingScratch(StringRef function, const KernelContext &k);

// The backward kernels (BackwardKernelPrinters.cpp): Config and entry.
void printDeltaRuleGradConfig(kernel::DeltaRuleGradOp op,
                              const KernelContext &k, llvm::raw_ostream &os);
void printDeltaRuleGradEntry(kernel::DeltaRuleGradOp op, const KernelContext &k,
                             llvm::raw_ostream &os);
void printPrologueGradConfig(kernel::PrologueGradOp op, const KernelContext &k,
                             llvm::raw_ostream &os);
void printPrologueGradEntry(kernel::PrologueGradOp op, const KernelContext &k,
                            llvm::raw_ostream &os);
void printRMSNormGradConfig(kernel::GatedRMSNormGradOp op,
                            const KernelContext &k, llvm::raw_ostream &os);
void printRMSNormGradEntry(kernel::GatedRMSNormGradOp op,
                           const KernelContext &k, llvm::raw_ostream &os);

} // namespace mlir::gdn::cuda

#endif // GDN_LIB_TARGET_CUDA_ENTRYPRINTING_H
