//===- KernelPrinters.cpp - printing one gdn_kernel op --------------------===//
//
// The specialization of each kernel op becomes a Config struct consumed by the
// templates of kernels/include/gdn/device; the entry point checks each tensor
// against the op's types (dynamic sizes tied to the packing's token and
// sequence counts) and launches.
//
//===----------------------------------------------------------------------===//

#include "KernelPrinters.h"
#include "EntryPrinting.h"

#include "gdn/Dialect/GdnKernel/IR/GdnKernelDialect.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::cuda;

std::string mlir::gdn::cuda::getDeviceType(Type type) {
  if (type.isBF16())
    return "__nv_bfloat16";
  if (type.isF16())
    return "__half";
  if (type.isF64())
    return "double";
  return "float";
}

std::string mlir::gdn::cuda::getAbiDtype(Type type) {
  if (type.isBF16())
    return "GDN_BF16";
  if (type.isF16())
    return "GDN_F16";
  if (type.isF32())
    return "GDN_F32";
  if (type.isF64())
    return "GDN_F64";
  if (type.isInteger(32))
    return "GDN_I32";
  return "GDN_I64";
}

Type mlir::gdn::cuda::elementOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getElementType();
}

bool mlir::gdn::cuda::usesPacking(Operation *op) {
  return isa<kernel::PrologueOp, kernel::DeltaRuleOp, kernel::DeltaRuleGradOp,
             kernel::PrologueGradOp>(op);
}

bool mlir::gdn::cuda::usesScratch(Operation *op) {
  return isa<kernel::DeltaRuleOp, kernel::DeltaRuleGradOp,
             kernel::PrologueGradOp, kernel::GatedRMSNormGradOp>(op);
}

SmallVector<Value> mlir::gdn::cuda::getKernelTensorOperands(Operation *op) {
  SmallVector<Value> operands;
  for (Value operand : op->getOperands())
    if (isa<RankedTensorType>(operand.getType()))
      operands.push_back(operand);
  return operands;
}

std::string mlir::gdn::cuda::expectedShape(Value value, int tokenDim,
                                           int seqDim) {
  auto type = cast<RankedTensorType>(value.getType());
  std::string text = "{";
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (d)
      text += ", ";
    if (d == tokenDim)
      text += "tokens";
    else if (d == seqDim)
      text += "seqs";
    else if (type.isDynamicDim(d))
      text += "gdn::kAnySize";
    else
      text += std::to_string(type.getDimSize(d));
  }
  return text + "}";
}

std::string
mlir::gdn::cuda::warmupLogBoundText(std::optional<uint64_t> warmupBits) {
  const uint64_t bits = warmupBits.value_or(kernel::kDefaultWarmupBits);
  if (bits == 0)
    return "-INFINITY /* exact segments */";
  return llvm::formatv("{0:e}f /* -{1} ln 2 */",
                       -static_cast<double>(bits) * std::log(2.0), bits)
      .str();
}

const char *mlir::gdn::cuda::boolText(bool value) {
  return value ? "true" : "false";
}

unsigned mlir::gdn::cuda::getOperandIndex(Operation *op, Value value) {
  SmallVector<Value> operands = getKernelTensorOperands(op);
  return static_cast<unsigned>(llvm::find(operands, value) - operands.begin());
}

void mlir::gdn::cuda::printValidatePrototype(const KernelContext &k,
                                             llvm::raw_ostream &os) {
  os << "static int " << k.entryName
     << "_validate(const gdn_tensor_t *operands, const gdn_tensor_t *results";
  if (usesPacking(k.op))
    os << ",\n    const gdn_packing_t *packing";
  if (usesScratch(k.op))
    os << ", void *scratch";
  os << ")";
}

void mlir::gdn::cuda::printLaunchOpening(const KernelContext &k,
                                         llvm::raw_ostream &os) {
  os << "  return GDN_SUCCESS;\n}\n\nextern \"C\" ";
  printKernelPrototype(k, os);
  os << " {\n"
     << "  using Config = " << k.configName << ";\n"
     << "  if (int error = " << k.entryName << "_validate(operands, results"
     << (usesPacking(k.op) ? ", packing" : "")
     << (usesScratch(k.op) ? ", scratch" : "") << "))\n"
     << "    return error;\n";
}

const char *const mlir::gdn::cuda::kPackingView =
    "  args.packing = {packing->cu_seqlens, packing->cu_padded,\n"
    "                  packing->num_seqs, packing->buffer_tokens};\n";

void mlir::gdn::cuda::printLaunchReturn(llvm::raw_ostream &os, StringRef launch,
                                        StringRef arguments,
                                        StringRef templateArguments) {
  os << "  return gdn::device::" << launch << "<" << templateArguments << ">("
     << arguments
     << ") ==\n"
     << "                 cudaSuccess\n"
     << "             ? GDN_SUCCESS\n"
     << "             : GDN_ERROR_CUDA;\n"
     << "}\n\n";
}

void mlir::gdn::cuda::printScratchAndChecks(
    Operation *op, const KernelContext &k, StringRef scratchBytes,
    llvm::function_ref<std::string(Value)> shapeOf, llvm::raw_ostream &os) {
  os << "extern \"C\" size_t " << k.entryName
     << "_scratch_bytes(const gdn_packing_t *packing) {\n"
     << "  if (!packing)\n    return 0;\n"
     << "  return " << scratchBytes << ";\n}\n\n";
  printValidatePrototype(k, os);
  os << " {\n"
     << "  if (!operands || !results || !scratch";
  if (usesPacking(op))
    os << " || !packing ||\n      !packing->workspace";
  os << ")\n"
     << "    return GDN_ERROR_INVALID_ARGUMENT;\n";
  if (usesPacking(op))
    os << "  const int64_t tokens = packing->buffer_tokens;\n"
       << "  const int64_t seqs = packing->num_seqs;\n"
       << "  (void)seqs;\n";
  else
    os << "  const int64_t tokens = operands[0].shape[0];\n";
  auto check = [&](StringRef array, unsigned index, Value value) {
    os << "  if (!gdn::checkTensor(" << array << "[" << index << "], "
       << getAbiDtype(elementOf(value)) << ", " << shapeOf(value) << "))\n"
       << "    return GDN_ERROR_INVALID_ARGUMENT;\n";
  };
  for (auto [index, value] : llvm::enumerate(getKernelTensorOperands(op)))
    check("operands", index, value);
  for (auto [index, value] : llvm::enumerate(op->getResults()))
    check("results", index, value);
}

std::string mlir::gdn::cuda::packingScratch(StringRef function,
                                            const KernelContext &k) {
  return ("gdn::device::" + function + "<" + k.configName +
          ">(\n      {packing->cu_seqlens, packing->cu_padded, "
          "packing->num_seqs,\n       packing->buffer_tokens})")
      .str();
}

std::string mlir::gdn::cuda::tokensOrSequences(Value value, bool perSequence) {
  return expectedShape(value, perSequence ? -1 : 0, perSequence ? 0 : -1);
}

//===----------------------------------------------------------------------===//
// Prologue
//===----------------------------------------------------------------------===//

static void printPrologueConfig(kernel::PrologueOp op, const KernelContext &k,
                                llvm::raw_ostream &os) {
  const int64_t channels = 2 * op.getKeyHeads() * op.getHeadDimK() +
                           op.getValueHeads() * op.getHeadDimV();
  os << "// Kernel " << k.entryName << ": gdn_kernel.prologue at "
     << op.getLoc() << "\n"
     << "//   fuses gdn.causal_conv1d + gdn.split_qkv + gdn.l2norm (q, k) + "
        "gdn.gates\n"
     << "//   activations " << elementOf(op.getMixedQkv()) << ", " << channels
     << " conv channels, conv width " << op.getConvWidth() << " ("
     << stringifyActivation(op.getActivation()) << ")\n"
     << "//   key heads " << op.getKeyHeads() << " x " << op.getHeadDimK()
     << ", value heads " << op.getValueHeads() << " x " << op.getHeadDimV()
     << ", l2norm eps " << op.getL2normEps().convertToDouble() << "\n"
     << "//   tile: " << op.getThreads() << " threads x " << op.getVectorBytes()
     << "-byte channel slices, " << op.getTokensPerBlock() << "-row chunks, "
     << op.getRowsInFlight() << " rows in flight per thread\n"
     << "//   bias " << (op.getConvBias() ? "yes" : "no") << ", initial conv "
     << "state " << (op.getConvInitialState() ? "yes" : "no")
     << ", final conv state " << (op.getConvFinalState() ? "yes" : "no")
     << ", beta " << (op.getAllowNegEigval() ? "2 * sigmoid" : "sigmoid")
     << "\n";
  Value state = op.getConvInitialState() ? op.getConvInitialState()
                                         : op.getConvFinalState();
  os << "struct " << k.configName << " {\n"
     << "  using Activation = " << getDeviceType(elementOf(op.getQ())) << ";\n";
  // A wider conv input (an f32 projection output) is named apart.
  if (elementOf(op.getMixedQkv()) != elementOf(op.getQ()))
    os << "  using ConvInput = " << getDeviceType(elementOf(op.getMixedQkv()))
       << ";\n";
  os << "  using ConvWeight = " << getDeviceType(elementOf(op.getConvWeight()))
     << ";\n"
     << "  using ConvState = "
     << (state ? getDeviceType(elementOf(state)) : std::string("float"))
     << ";\n"
     << "  using GateInput = " << getDeviceType(elementOf(op.getA())) << ";\n"
     << "  using GateParam = " << getDeviceType(elementOf(op.getALog()))
     << ";\n";
  printHeadConstants(op, os);
  os << "  static constexpr int kConvWidth = " << op.getConvWidth() << ";\n"
     << "  static constexpr int kThreads = " << op.getThreads() << ";\n"
     << "  static constexpr int kVectorBytes = " << op.getVectorBytes() << ";\n"
     << "  static constexpr int kTokensPerBlock = " << op.getTokensPerBlock()
     << ";\n"
     << "  static constexpr int kRowsInFlight = " << op.getRowsInFlight()
     << ";\n"
     << "  static constexpr bool kSilu = "
     << boolText(op.getActivation() == Activation::Silu) << ";\n"
     << "  static constexpr bool kHasBias = "
     << boolText(static_cast<bool>(op.getConvBias())) << ";\n"
     << "  static constexpr bool kHasInitialState = "
     << boolText(static_cast<bool>(op.getConvInitialState())) << ";\n"
     << "  static constexpr bool kHasFinalState = "
     << boolText(static_cast<bool>(op.getConvFinalState())) << ";\n"
     << "  static constexpr bool kNegEigval = "
     << boolText(op.getAllowNegEigval()) << ";\n"
     << llvm::formatv("  static constexpr float kNormEps = {0:e}f;\n",
                      op.getL2normEps().convertToDouble())
     << "};\n\n";
}

static void printPrologueEntry(kernel::PrologueOp op, const KernelContext &k,
                               llvm::raw_ostream &os) {
  printValidatePrototype(k, os);
  os << " {\n"
     << "  if (!operands || !results || !packing || !packing->workspace)\n"
     << "    return GDN_ERROR_INVALID_ARGUMENT;\n"
     << "  const int64_t tokens = packing->buffer_tokens;\n"
     << "  const int64_t seqs = packing->num_seqs;\n"
     << "  (void)seqs;\n";
  // Operand and result checks, in entry order.
  SmallVector<Value> operands = getKernelTensorOperands(op);
  auto check = [&](StringRef array, unsigned index, Value value, int tokenDim,
                   int seqDim) {
    os << "  if (!gdn::checkTensor(" << array << "[" << index << "], "
       << getAbiDtype(elementOf(value)) << ", "
       << expectedShape(value, tokenDim, seqDim) << "))\n"
       << "    return GDN_ERROR_INVALID_ARGUMENT;\n";
  };
  // Parameters are checked against the sizes the attributes imply, so a
  // dynamic size in their type cannot let a short buffer through.
  const int64_t channels = 2 * op.getKeyHeads() * op.getHeadDimK() +
                           op.getValueHeads() * op.getHeadDimV();
  auto parameterShape = [&](Value value) -> std::string {
    if (value == op.getConvWeight())
      return "{" + std::to_string(channels) + ", " +
             std::to_string(op.getConvWidth()) + "}";
    if (value == op.getConvBias())
      return "{" + std::to_string(channels) + "}";
    if (value == op.getALog() || value == op.getDtBias())
      return "{" + std::to_string(op.getValueHeads()) + "}";
    return "";
  };
  for (auto [index, value] : llvm::enumerate(operands)) {
    bool tokenIndexed =
        value == op.getMixedQkv() || value == op.getA() || value == op.getB();
    bool perSeq = value == op.getConvInitialState();
    std::string parameter = parameterShape(value);
    if (!parameter.empty()) {
      os << "  if (!gdn::checkTensor(operands[" << index << "], "
         << getAbiDtype(elementOf(value)) << ", " << parameter << "))\n"
         << "    return GDN_ERROR_INVALID_ARGUMENT;\n";
      continue;
    }
    check("operands", index, value, tokenIndexed ? 0 : -1, perSeq ? 0 : -1);
  }
  for (auto [index, value] : llvm::enumerate(op->getResults()))
    check("results", index, value, value == op.getConvFinalState() ? -1 : 0,
          value == op.getConvFinalState() ? 0 : -1);

  auto ptr = [&](StringRef array, unsigned index, Value value) {
    std::string text =
        "static_cast<" + getDeviceType(elementOf(value)) + " *>(";
    text += array.str() + "[" + std::to_string(index) + "].data)";
    return text;
  };
  auto operandIndex = [&](Value value) { return getOperandIndex(op, value); };
  // The input moves in 16-byte words and q, k, v in 8- or 16-byte vectors:
  // a view off 16 bytes would fault on the GPU.
  os << "  if (!gdn::isVectorAligned(operands["
     << operandIndex(op.getMixedQkv()) << "]) ||\n"
     << "      !gdn::isVectorAligned(results[0]) ||\n"
     << "      !gdn::isVectorAligned(results[1]) ||\n"
     << "      !gdn::isVectorAligned(results[2]))\n"
     << "    return GDN_ERROR_INVALID_ARGUMENT;\n";
  printLaunchOpening(k, os);
  os << "  gdn::device::PrologueArgs<Config> args = {};\n"
     << "  args.mixed = "
     << ptr("operands", operandIndex(op.getMixedQkv()), op.getMixedQkv())
     << ";\n"
     << "  args.weight = "
     << ptr("operands", operandIndex(op.getConvWeight()), op.getConvWeight())
     << ";\n";
  if (Value bias = op.getConvBias())
    os << "  args.bias = " << ptr("operands", operandIndex(bias), bias)
       << ";\n";
  if (Value state = op.getConvInitialState())
    os << "  args.initialState = "
       << ptr("operands", operandIndex(state), state) << ";\n";
  if (Value state = op.getConvFinalState())
    os << "  args.finalState = " << ptr("results", 5, state) << ";\n";
  os << "  args.a = " << ptr("operands", operandIndex(op.getA()), op.getA())
     << ";\n"
     << "  args.b = " << ptr("operands", operandIndex(op.getB()), op.getB())
     << ";\n"
     << "  args.aLog = "
     << ptr("operands", operandIndex(op.getALog()), op.getALog()) << ";\n"
     << "  args.dtBias = "
     << ptr("operands", operandIndex(op.getDtBias()), op.getDtBias()) << ";\n"
     << "  args.q = " << ptr("results", 0, op.getQ()) << ";\n"
     << "  args.k = " << ptr("results", 1, op.getK()) << ";\n"
     << "  args.v = " << ptr("results", 2, op.getV()) << ";\n"
     << "  args.g = static_cast<float *>(results[3].data);\n"
     << "  args.beta = static_cast<float *>(results[4].data);\n"
     << kPackingView
     << "  args.workspace = "
        "gdn::device::PackingWorkspace::carve(packing->workspace);\n";
  printLaunchReturn(os, "launchPrologue", "args, stream");
}

//===----------------------------------------------------------------------===//
// Gated RMSNorm
//===----------------------------------------------------------------------===//

static void printRMSNormConfig(kernel::GatedRMSNormOp op,
                               const KernelContext &k, llvm::raw_ostream &os) {
  auto type = op.getX().getType();
  os << "// Kernel " << k.entryName << ": gdn_kernel.gated_rmsnorm at "
     << op.getLoc() << "\n"
     << "//   from gdn.gated_rmsnorm; x " << type.getElementType() << ", z "
     << elementOf(op.getZ()) << ", weight " << elementOf(op.getWeight())
     << ", y " << elementOf(op.getY()) << "\n"
     << "//   rows of V = " << type.getDimSize(2) << ", eps "
     << op.getEps().convertToDouble() << ", " << op.getThreads()
     << " threads per block, 16-byte lanes\n"
     << "struct " << k.configName << " {\n"
     << "  using Input = " << getDeviceType(type.getElementType()) << ";\n"
     << "  using Gate = " << getDeviceType(elementOf(op.getZ())) << ";\n"
     << "  using Weight = " << getDeviceType(elementOf(op.getWeight())) << ";\n"
     << "  using Output = " << getDeviceType(elementOf(op.getY())) << ";\n"
     << "  static constexpr int kHeadDimV = " << type.getDimSize(2) << ";\n"
     << "  static constexpr int kThreads = " << op.getThreads() << ";\n"
     << llvm::formatv("  static constexpr float kEps = {0:e}f;\n",
                      op.getEps().convertToDouble())
     << "};\n\n";
}

static void printRMSNormEntry(kernel::GatedRMSNormOp op, const KernelContext &k,
                              llvm::raw_ostream &os) {
  printValidatePrototype(k, os);
  auto type = op.getX().getType();
  os << " {\n"
     << "  if (!operands || !results)\n"
     << "    return GDN_ERROR_INVALID_ARGUMENT;\n"
     << "  const int64_t tokens = operands[0].shape[0];\n";
  unsigned index = 0;
  for (Value value : {op.getX(), op.getZ()})
    os << "  if (!gdn::checkTensor(operands[" << index++ << "], "
       << getAbiDtype(elementOf(value)) << ", " << expectedShape(value, 0, -1)
       << "))\n    return GDN_ERROR_INVALID_ARGUMENT;\n";
  os << "  if (!gdn::checkTensor(operands[2], "
     << getAbiDtype(elementOf(op.getWeight())) << ", {" << type.getDimSize(2)
     << "}))\n"
     << "    return GDN_ERROR_INVALID_ARGUMENT;\n"
     << "  if (!gdn::checkTensor(results[0], "
     << getAbiDtype(elementOf(op.getY())) << ", "
     << expectedShape(op.getY(), 0, -1) << "))\n"
     << "    return GDN_ERROR_INVALID_ARGUMENT;\n"
     << "  if (!gdn::isVectorAligned(operands[0]) ||\n"
     << "      !gdn::isVectorAligned(operands[1]) ||\n"
     << "      !gdn::isVectorAligned(results[0]))\n"
     << "    return GDN_ERROR_INVALID_ARGUMENT;\n";
  printLaunchOpening(k, os);
  os << "  const int64_t tokens = operands[0].shape[0];\n"
     << "  gdn::device::EpilogueArgs<Config> args;\n"
     << "  args.x = static_cast<const " << getDeviceType(type.getElementType())
     << " *>(operands[0].data);\n"
     << "  args.z = static_cast<const " << getDeviceType(elementOf(op.getZ()))
     << " *>(operands[1].data);\n"
     << "  args.weight = static_cast<const "
     << getDeviceType(elementOf(op.getWeight())) << " *>(operands[2].data);\n"
     << "  args.y = static_cast<" << getDeviceType(elementOf(op.getY()))
     << " *>(results[0].data);\n"
     << "  args.rows = tokens * " << type.getDimSize(1) << ";\n"
     << "  if (args.rows == 0)\n"
     << "    return GDN_SUCCESS;\n"
     << "  constexpr int64_t kRowsPerBlock = Config::kThreads / "
        "(Config::kHeadDimV * sizeof(typename Config::Input) / 16);\n"
     << "  int64_t blocks = (args.rows + kRowsPerBlock - 1) / kRowsPerBlock;\n"
     << "  if (blocks > 65535 * 8)\n"
     << "    blocks = 65535 * 8;\n"
     << "  gdn::device::gatedRMSNormKernel<Config>\n"
     << "      <<<static_cast<unsigned>(blocks), Config::kThreads, 0, "
        "stream>>>(args);\n"
     << "  return cudaGetLastError() == cudaSuccess ? GDN_SUCCESS : "
        "GDN_ERROR_CUDA;\n"
     << "}\n\n";
}

//===----------------------------------------------------------------------===//
// Delta rule
//===----------------------------------------------------------------------===//

/// The Config of the narrow tile a run-time choice falls back to.
static std::string narrowConfigName(const KernelContext &k) {
  return k.configName + "_narrow";
}

static void printDeltaRuleConfig(kernel::DeltaRuleOp op, const KernelContext &k,
                                 llvm::raw_ostream &os) {
  const bool wgmma = op.getScan() == "wgmma";
  std::optional<uint64_t> narrow = op.getNarrowValueTile();
  os << "// Kernel " << k.entryName << ": gdn_kernel.delta_rule at "
     << op.getLoc() << "\n"
     << "//   from gdn.delta_rule; chunked (64 tokens), prepare + scan "
        "kernels\n"
     << "//   key heads " << op.getKeyHeads() << " x " << op.getHeadDimK()
     << ", value heads " << op.getValueHeads() << " x " << op.getHeadDimV()
     << ", scale " << op.getScale().convertToDouble() << "\n"
     << "//   scan: " << op.getScan()
     << (wgmma ? " (sm_90a: warpgroup products, TMA copies)"
               : " (sm_80+: warp products, cp.async copies)")
     << "; tile: V tile " << op.getValueTile() << " ("
     << op.getHeadDimV() / op.getValueTile()
     << " scan block(s) per sequence and value head), " << op.getScanStages()
     << " chunk(s) staged per scan block\n"
     << "//   P (gated Q K^T): "
     << (op.getScores() == "scan"
             ? "computed in the scan (the prepare kernel reads no q)"
         : op.getScores() == "producer"
             ? "computed by the producer warpgroup of the scan's "
               "warp-specialised block (the prepare kernel reads no q)"
             : "computed by the prepare kernel, through the workspace")
     << "\n";
  if (narrow)
    os << "//   V tile " << *narrow << " at run time when the packing makes "
       << "fewer than " << *op.getNarrowBelowBlocks() << " scan blocks\n";
  if (std::optional<uint64_t> target = op.getSplitTargetBlocks()) {
    const uint64_t bits =
        op.getWarmupBits().value_or(kernel::kDefaultWarmupBits);
    os << "//   chains split at run time: when the sequences make at most "
       << *target / 2 << " scan blocks, segments sized for about " << *target
       << " blocks; ";
    if (bits == 0)
      os << "every segment runs from its sequence's start (exact)\n";
    else
      os << "warm-ups leave out at most 2^-" << bits << " of the state\n";
  }
  os << "//   initial state " << (op.getInitialState() ? "yes" : "no")
     << ", final state " << (op.getFinalState() ? "yes" : "no") << "\n";
  auto printConfig = [&](StringRef name, int64_t valueTile) {
    os << "struct " << name << " {\n"
       << "  using Element = __nv_bfloat16;\n";
    printHeadConstants(op, os);
    os << "  static constexpr int kValueTile = " << valueTile << ";\n";
    if (wgmma) {
      os << "  static constexpr bool kScanWgmma = true;\n"
         << "  static constexpr int kWgmmaStages = " << op.getScanStages()
         << ";\n"
         << "  static constexpr bool kWgmmaScanScores = "
         << boolText(op.getScores() == "scan") << ";\n";
      // P from the producer warpgroup of the fused block that replaces the
      // wgmma scan (the prepare kernel still makes M and G).
      if (op.getScores() == "producer")
        os << "  static constexpr bool kFusedForward = true;\n"
           << "  static constexpr bool kFusedInverse = false;\n";
    } else {
      os << "  static constexpr int kScanStages = " << op.getScanStages()
         << ";\n";
    }
    os << "  static constexpr bool kHasInitialState = "
       << boolText(static_cast<bool>(op.getInitialState())) << ";\n"
       << "  static constexpr bool kHasFinalState = "
       << boolText(static_cast<bool>(op.getFinalState())) << ";\n"
       << "};\n\n";
  };
  printConfig(k.configName, op.getValueTile());
  if (narrow)
    printConfig(narrowConfigName(k), static_cast<int64_t>(*narrow));
}

static void printDeltaRuleEntry(kernel::DeltaRuleOp op, const KernelContext &k,
                                llvm::raw_ostream &os) {
  // The scratch holds the chunk tiles between prepare and scan.
  printScratchAndChecks(
      op, k, packingScratch("deltaRuleWorkspaceBytes", k),
      [&](Value value) {
        return tokensOrSequences(value, value == op.getInitialState() ||
                                            value == op.getFinalState());
      },
      os);
  // Rows are copied in 16-byte pieces (cp.async): q, k, v and o must be
  // aligned.
  os << "  if (!gdn::isVectorAligned(operands[0]) ||\n"
     << "      !gdn::isVectorAligned(operands[1]) ||\n"
     << "      !gdn::isVectorAligned(operands[2]) ||\n"
     << "      !gdn::isVectorAligned(results[0]))\n"
     << "    return GDN_ERROR_INVALID_ARGUMENT;\n";
  printLaunchOpening(k, os);
  auto operandIndex = [&](Value value) { return getOperandIndex(op, value); };
  os << "  gdn::device::DeltaRuleArgs<Config> args = {};\n"
     << "  args.q = static_cast<const __nv_bfloat16 *>(operands[0].data);\n"
     << "  args.k = static_cast<const __nv_bfloat16 *>(operands[1].data);\n"
     << "  args.v = static_cast<const __nv_bfloat16 *>(operands[2].data);\n"
     << "  args.g = static_cast<const float *>(operands[3].data);\n"
     << "  args.beta = static_cast<const float *>(operands[4].data);\n";
  if (Value state = op.getInitialState())
    os << "  args.initialState = static_cast<const float *>(operands["
       << operandIndex(state) << "].data);\n";
  if (op.getFinalState())
    os << "  args.finalState = static_cast<float *>(results[1].data);\n";
  os << "  args.o = static_cast<__nv_bfloat16 *>(results[0].data);\n"
     << llvm::formatv("  args.scale = {0:e}f;\n",
                      op.getScale().convertToDouble())
     << kPackingView
     << "  // Invalid offsets turn every output into NaN (packing.cuh).\n"
     << "  args.status =\n"
     << "      "
        "gdn::device::PackingWorkspace::carve(packing->workspace).status;\n";
  if (std::optional<uint64_t> target = op.getSplitTargetBlocks()) {
    os << "  args.segmentChunks =\n"
       << "      gdn::device::deltaRuleSegmentChunks<Config>(args.packing, "
       << *target << ");\n"
       << "  args.warmupLogBound = " << warmupLogBoundText(op.getWarmupBits())
       << ";\n";
  }
  if (std::optional<uint64_t> below = op.getNarrowBelowBlocks())
    printLaunchReturn(os, "launchDeltaRuleAdaptive",
                      ("args, scratch, stream, " + llvm::Twine(*below)).str(),
                      ("Config, " + narrowConfigName(k)));
  else
    printLaunchReturn(os, "launchDeltaRule", "args, scratch, stream");
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

void mlir::gdn::cuda::printKernelConfig(const KernelContext &k,
                                        llvm::raw_ostream &os) {
  llvm::TypeSwitch<Operation *>(k.op)
      .Case([&](kernel::PrologueOp op) { printPrologueConfig(op, k, os); })
      .Case([&](kernel::GatedRMSNormOp op) { printRMSNormConfig(op, k, os); })
      .Case([&](kernel::DeltaRuleOp op) { printDeltaRuleConfig(op, k, os); })
      .Case([&](kernel::DeltaRuleGradOp op) {
        printDeltaRuleGradConfig(op, k, os);
      })
      .Case([&](kernel::PrologueGradOp op) {
        printPrologueGradConfig(op, k, os);
      })
      .Case([&](kernel::GatedRMSNormGradOp op) {
        printRMSNormGradConfig(op, k, os);
      });
}

void mlir::gdn::cuda::printKernelEntry(const KernelContext &k,
                                       llvm::raw_ostream &os) {
  llvm::TypeSwitch<Operation *>(k.op)
      .Case([&](kernel::PrologueOp op) { printPrologueEntry(op, k, os); })
      .Case([&](kernel::GatedRMSNormOp op) { printRMSNormEntry(op, k, os); })
      .Case([&](kernel::DeltaRuleOp op) { printDeltaRuleEntry(op, k, os); })
      .Case([&](kernel::DeltaRuleGradOp op) {
        printDeltaRuleGradEntry(op, k, os);
      })
      .Case(
          [&](kernel::PrologueGradOp op) { printPrologueGradEntry(op, k, os); })
      .Case([&](kernel::GatedRMSNormGradOp op) {
        printRMSNormGradEntry(op, k, os);
      });
}

void mlir::gdn::cuda::printKernelPrototype(const KernelContext &k,
                                           llvm::raw_ostream &os) {
  os << "int " << k.entryName
     << "(const gdn_tensor_t *operands, const gdn_tensor_t *results";
  if (usesPacking(k.op))
    os << ",\n    const gdn_packing_t *packing";
  if (usesScratch(k.op))
    os << ", void *scratch";
  os << ", cudaStream_t stream)";
}

std::vector<ShapeExprs>
mlir::gdn::cuda::getResultShapes(Operation *op, ArrayRef<ShapeExprs> operands,
                                 const std::string &seqs) {
  std::vector<ShapeExprs> shapes;
  const std::string tokens = operands.front().front();
  for (Value result : op->getResults()) {
    auto type = cast<RankedTensorType>(result.getType());
    ShapeExprs dims;
    for (int64_t d = 0; d < type.getRank(); ++d)
      dims.push_back(type.isDynamicDim(d) ? ""
                                          : std::to_string(type.getDimSize(d)));
    if (type.isDynamicDim(0)) {
      auto prologue = dyn_cast<kernel::PrologueOp>(op);
      auto rule = dyn_cast<kernel::DeltaRuleOp>(op);
      auto grad = dyn_cast<kernel::DeltaRuleGradOp>(op);
      auto prologueGrad = dyn_cast<kernel::PrologueGradOp>(op);
      const bool perSequence =
          (prologue && result == prologue.getConvFinalState()) ||
          (rule && result == rule.getFinalState()) ||
          (grad && result == grad.getInitialStateGrad()) ||
          (prologueGrad && result == prologueGrad.getConvInitialStateGrad());
      dims[0] = perSequence ? seqs : tokens;
    }
    shapes.push_back(std::move(dims));
  }
  return shapes;
}
