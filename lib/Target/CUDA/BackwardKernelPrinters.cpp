//===- BackwardKernelPrinters.cpp - printing the backward kernel ops ------===//
//
// The Config, checks and launch of the backward's kernel ops:
// gdn_kernel.delta_rule_grad (delta_rule_backward.cuh),
// gdn_kernel.prologue_grad (prologue_backward.cuh) and
// gdn_kernel.gated_rmsnorm_grad (epilogue_backward.cuh). Each takes scratch
// for what its kernels pass between them (per-block partial sums, the
// recomputed forward), sized before anything runs.
//
//===----------------------------------------------------------------------===//

#include "EntryPrinting.h"
#include "InsertChains.h"
#include "NormRecomputation.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::cuda;

//===----------------------------------------------------------------------===//
// Delta rule backward
//===----------------------------------------------------------------------===//

/// Where the fused reverse kernel (delta_rule_backward_fused_wgmma.cuh) is
/// measured faster than the reverse scan and the chunk kernel
/// (docs/performance.md): sm_90a, K = V = 128, bf16 gradients, one value
/// head a key head. Under GQA its dq and dk come per value head, and their
/// sums (a kernel of their own, or the two heads' blocks as a cluster) cost
/// more than the fusion saves.
static bool selectsFusedBackward(kernel::DeltaRuleGradOp op) {
  return op.getScan() == "wgmma" && op.getHeadDimK() == 128 &&
         op.getHeadDimV() == 128 && elementOf(op.getQGrad()).isBF16() &&
         op.getValueHeads() == op.getKeyHeads();
}

void mlir::gdn::cuda::printDeltaRuleGradConfig(kernel::DeltaRuleGradOp op,
                                               const KernelContext &k,
                                               llvm::raw_ostream &os) {
  const bool initial = static_cast<bool>(op.getInitialState());
  os << "// Kernel " << k.entryName << ": gdn_kernel.delta_rule_grad at "
     << op.getLoc() << "\n"
     << "//   from gdn.delta_rule_grad; chunked (64 tokens): prepare, forward "
        "scan (saving S and Vnew),\n"
     << "//   reverse state-gradient scan, chunk gradients, GQA sums; no "
        "atomics\n"
     << "//   forward recomputation, reverse scan and chunk gradients: "
     << op.getScan()
     << (op.getScan() == "wgmma"
             ? " (sm_90a: warpgroup products, TMA copies)"
             : " (sm_80+: warp products, cp.async copies)")
     << "\n"
     << "//   key heads " << op.getKeyHeads() << " x " << op.getHeadDimK()
     << ", value heads " << op.getValueHeads() << " x " << op.getHeadDimV()
     << ", scale " << op.getScale().convertToDouble() << "\n"
     << "//   gradients of q, k, v in " << elementOf(op.getQGrad())
     << "; initial state " << (initial ? "yes" : "no")
     << ", final state cotangent " << (op.getFinalStateGrad() ? "yes" : "no")
     << "\n"
     << "struct " << k.configName << " {\n"
     << "  using Element = __nv_bfloat16;\n"
     << "  using Gradient = " << getDeviceType(elementOf(op.getQGrad()))
     << ";\n";
  printHeadConstants(op, os);
  os << "  // The forward scan's tile (it recomputes S and Vnew).\n"
     << "  static constexpr int kValueTile = " << op.getHeadDimV() << ";\n";
  if (op.getScan() == "wgmma")
    os << "  static constexpr bool kScanWgmma = true;\n"
       << "  static constexpr bool kReverseScanWgmma = true;\n"
       << "  static constexpr bool kChunkGradWgmma = true;\n";
  if (selectsFusedBackward(op))
    os << "  // The reverse scan and the chunk gradients as one kernel.\n"
       << "  static constexpr bool kFusedBackwardWgmma = true;\n";
  os << "  static constexpr bool kHasInitialState = " << boolText(initial)
     << ";\n"
     << "  static constexpr bool kHasFinalState = false;\n"
     << "};\n\n";
}

void mlir::gdn::cuda::printDeltaRuleGradEntry(kernel::DeltaRuleGradOp op,
                                              const KernelContext &k,
                                              llvm::raw_ostream &os) {
  // The scratch holds the recomputed forward (chunk tiles, S per chunk,
  // Vnew), the state gradients per chunk and the per-head dq/dk parts.
  printScratchAndChecks(
      op, k, packingScratch("deltaRuleBackwardWorkspaceBytes", k),
      [&](Value value) {
        return tokensOrSequences(value, value == op.getInitialState() ||
                                            value == op.getFinalStateGrad() ||
                                            value == op.getInitialStateGrad());
      },
      os);
  auto operandIndex = [&](Value value) { return getOperandIndex(op, value); };
  // Rows are copied in 16-byte pieces (cp.async); gradients are stored in
  // pairs.
  os << "  for (int i = 0; i < 4; ++i)\n"
     << "    if (!gdn::isVectorAligned(operands[i]))\n"
     << "      return GDN_ERROR_INVALID_ARGUMENT;\n"
     << "  for (int i = 0; i < 3; ++i)\n"
     << "    if (!gdn::isVectorAligned(results[i]))\n"
     << "      return GDN_ERROR_INVALID_ARGUMENT;\n";
  printLaunchOpening(k, os);
  const std::string gradient = getDeviceType(elementOf(op.getQGrad()));
  os << "  gdn::device::DeltaRuleBackwardArgs<Config> args = {};\n"
     << "  args.dO = static_cast<const __nv_bfloat16 *>(operands[0].data);\n"
     << "  args.q = static_cast<const __nv_bfloat16 *>(operands[1].data);\n"
     << "  args.k = static_cast<const __nv_bfloat16 *>(operands[2].data);\n"
     << "  args.v = static_cast<const __nv_bfloat16 *>(operands[3].data);\n"
     << "  args.g = static_cast<const float *>(operands[4].data);\n"
     << "  args.beta = static_cast<const float *>(operands[5].data);\n";
  if (Value state = op.getInitialState())
    os << "  args.initialState = static_cast<const float *>(operands["
       << operandIndex(state) << "].data);\n"
       << "  args.dInitialState = static_cast<float *>(results[5].data);\n";
  if (Value cotangent = op.getFinalStateGrad())
    os << "  args.dFinalState = static_cast<const float *>(operands["
       << operandIndex(cotangent) << "].data);\n";
  os << "  args.dq = static_cast<" << gradient << " *>(results[0].data);\n"
     << "  args.dk = static_cast<" << gradient << " *>(results[1].data);\n"
     << "  args.dv = static_cast<" << gradient << " *>(results[2].data);\n"
     << "  args.dg = static_cast<float *>(results[3].data);\n"
     << "  args.dbeta = static_cast<float *>(results[4].data);\n"
     << llvm::formatv("  args.scale = {0:e}f;\n",
                      op.getScale().convertToDouble())
     << kPackingView << "  // Invalid offsets turn every gradient into NaN.\n"
     << "  args.status =\n"
     << "      "
        "gdn::device::PackingWorkspace::carve(packing->workspace).status;\n";
  if (std::optional<uint64_t> target = op.getSplitTargetBlocks())
    os << "  // Long chains split in both scans (segments sized at run time).\n"
       << "  gdn::device::deltaRuleBackwardSplit(args, " << *target << ",\n"
       << "      " << warmupLogBoundText(op.getWarmupBits()) << ");\n";
  printLaunchReturn(os, "launchDeltaRuleBackward", "args, scratch, stream");
}

//===----------------------------------------------------------------------===//
// Prologue backward
//===----------------------------------------------------------------------===//

void mlir::gdn::cuda::printPrologueGradConfig(kernel::PrologueGradOp op,
                                              const KernelContext &k,
                                              llvm::raw_ostream &os) {
  const int64_t channels = 2 * op.getKeyHeads() * op.getHeadDimK() +
                           op.getValueHeads() * op.getHeadDimV();
  const int64_t threads = op.getThreads();
  // The register budget per thread (__launch_bounds__' second argument).
  const int64_t minBlocks =
      kernel::getPrologueGradBlocksPerSM(threads, op.getVectorBytes());
  Value initial = op.getConvInitialState();
  Value stateGrad = op.getConvFinalStateGrad() ? op.getConvFinalStateGrad()
                                               : op.getConvInitialStateGrad();
  auto typeOr = [](Value value) {
    return value ? getDeviceType(elementOf(value)) : std::string("float");
  };
  os << "// Kernel " << k.entryName << ": gdn_kernel.prologue_grad at "
     << op.getLoc() << "\n"
     << "//   fuses gdn.causal_conv1d_grad + gdn.merge_qkv + gdn.l2norm_grad "
        "(q, k) + gdn.gates_grad,\n"
     << "//   recomputing the conv and the norms; parameter gradients summed "
        "per block, then in block order (no atomics)\n"
     << "//   activations " << elementOf(op.getMixedQkv()) << ", gradients "
     << elementOf(op.getQGrad()) << ", " << channels
     << " conv channels, conv width " << op.getConvWidth() << " ("
     << stringifyActivation(op.getActivation()) << ")\n"
     << "//   key heads " << op.getKeyHeads() << " x " << op.getHeadDimK()
     << ", value heads " << op.getValueHeads() << " x " << op.getHeadDimV()
     << ", l2norm eps " << op.getL2normEps().convertToDouble() << "\n"
     << "//   tile: " << threads << " threads x " << op.getVectorBytes()
     << "-byte channel slices, at most " << op.getRowBlocks() << " row blocks, "
     << op.getRowsInFlight() << " rows in flight\n"
     << "//   bias " << (op.getConvBias() ? "yes" : "no") << ", initial conv "
     << "state " << (initial ? "yes" : "no") << ", final conv state cotangent "
     << (op.getConvFinalStateGrad() ? "yes" : "no") << ", beta "
     << (op.getAllowNegEigval() ? "2 * sigmoid" : "sigmoid") << "\n"
     << "struct " << k.configName << " {\n"
     << "  using Activation = " << getDeviceType(elementOf(op.getQGrad()))
     << ";\n";
  // A wider conv input (an f32 projection output) is named apart.
  if (elementOf(op.getMixedQkv()) != elementOf(op.getQGrad()))
    os << "  using ConvInput = " << getDeviceType(elementOf(op.getMixedQkv()))
       << ";\n";
  os << "  using ConvWeight = " << getDeviceType(elementOf(op.getConvWeight()))
     << ";\n"
     << "  using ConvState = " << typeOr(initial) << ";\n"
     << "  using GateInput = " << getDeviceType(elementOf(op.getA())) << ";\n"
     << "  using GateParam = " << getDeviceType(elementOf(op.getALog()))
     << ";\n"
     << "  using ActivationGrad = " << getDeviceType(elementOf(op.getQGrad()))
     << ";\n"
     << "  using ConvStateGrad = " << typeOr(stateGrad) << ";\n"
     << "  using GateInputGrad = " << getDeviceType(elementOf(op.getAGrad()))
     << ";\n"
     << "  using ConvWeightGrad = "
     << getDeviceType(elementOf(op.getConvWeightGrad())) << ";\n"
     << "  using GateParamGrad = " << getDeviceType(elementOf(op.getALogGrad()))
     << ";\n";
  printHeadConstants(op, os);
  os << "  static constexpr int kConvWidth = " << op.getConvWidth() << ";\n"
     << "  static constexpr int kVectorBytes = " << op.getVectorBytes() << ";\n"
     << "  static constexpr int kThreads = " << threads << ";\n"
     << "  static constexpr int kMinBlocksPerSM = " << minBlocks << ";\n"
     << "  static constexpr int kRowsInFlight = " << op.getRowsInFlight()
     << ";\n"
     << "  static constexpr int kRowBlocks = " << op.getRowBlocks() << ";\n"
     << "  static constexpr int kGateBlocks = 132;\n"
     << "  static constexpr bool kSilu = "
     << boolText(op.getActivation() == Activation::Silu) << ";\n"
     << "  static constexpr bool kHasBias = "
     << boolText(static_cast<bool>(op.getConvBias())) << ";\n"
     << "  static constexpr bool kHasInitialState = "
     << boolText(static_cast<bool>(initial)) << ";\n"
     << "  static constexpr bool kHasFinalState = "
     << boolText(static_cast<bool>(op.getConvFinalStateGrad())) << ";\n"
     << "  static constexpr bool kNegEigval = "
     << boolText(op.getAllowNegEigval()) << ";\n"
     << llvm::formatv("  static constexpr float kNormEps = {0:e}f;\n",
                      op.getL2normEps().convertToDouble());
  // Gradients written in place as columns of a stacked cotangent
  // (gdn-merge-projection-grads; InsertChains.h): their rows' stride.
  if (std::optional<int64_t> stride =
          getStridedRowElements(op.getMixedQkvGrad()))
    os << "  static constexpr int64_t kMixedGradRowStride = " << *stride
       << "; // dmixed: columns of a stacked cotangent\n";
  if (std::optional<int64_t> stride = getStridedRowElements(op.getAGrad()))
    os << "  static constexpr int64_t kGateGradRowStride = " << *stride
       << "; // da, db: columns of a stacked cotangent\n";
  os << "};\n\n";
}

void mlir::gdn::cuda::printPrologueGradEntry(kernel::PrologueGradOp op,
                                             const KernelContext &k,
                                             llvm::raw_ostream &os) {
  const int64_t channels = 2 * op.getKeyHeads() * op.getHeadDimK() +
                           op.getValueHeads() * op.getHeadDimV();
  // Parameters and their gradients are checked against the sizes the
  // attributes imply (a dynamic size in their type lets nothing short
  // through); states per sequence, everything else per token.
  auto shapeOf = [&](Value value) -> std::string {
    auto sizes = [](std::initializer_list<int64_t> dims) {
      std::string text = "{";
      llvm::raw_string_ostream out(text);
      llvm::interleaveComma(dims, out);
      return text + "}";
    };
    if (value == op.getConvWeight() || value == op.getConvWeightGrad())
      return sizes({channels, static_cast<int64_t>(op.getConvWidth())});
    if (value == op.getConvBias() || value == op.getConvBiasGrad())
      return sizes({channels});
    if (value == op.getALog() || value == op.getDtBias() ||
        value == op.getALogGrad() || value == op.getDtBiasGrad())
      return sizes({static_cast<int64_t>(op.getValueHeads())});
    return tokensOrSequences(value, value == op.getConvInitialState() ||
                                        value == op.getConvFinalStateGrad() ||
                                        value == op.getConvInitialStateGrad());
  };
  printScratchAndChecks(op, k,
                        "gdn::device::prologueBackwardWorkspaceBytes<" +
                            k.configName + ">(packing->buffer_tokens)",
                        shapeOf, os);
  auto operandIndex = [&](Value value) { return getOperandIndex(op, value); };
  auto resultIndex = [&](Value value) {
    return cast<OpResult>(value).getResultNumber();
  };
  // Rows move in vectors of kVectorBytes: the token-indexed activations
  // and their gradients must be aligned to 16 bytes.
  os << "  for (const gdn_tensor_t *tensor :\n"
     << "       {&operands[" << operandIndex(op.getMixedQkv())
     << "], &operands[" << operandIndex(op.getQGrad()) << "], &operands["
     << operandIndex(op.getKGrad()) << "],\n"
     << "        &operands[" << operandIndex(op.getVGrad()) << "], &results["
     << resultIndex(op.getMixedQkvGrad()) << "]})\n"
     << "    if (!gdn::isVectorAligned(*tensor))\n"
     << "      return GDN_ERROR_INVALID_ARGUMENT;\n";
  printLaunchOpening(k, os);
  auto operand = [&](Value value) {
    return "static_cast<const " + getDeviceType(elementOf(value)) +
           " *>(operands[" + std::to_string(operandIndex(value)) + "].data)";
  };
  auto result = [&](Value value) {
    return "static_cast<" + getDeviceType(elementOf(value)) + " *>(results[" +
           std::to_string(resultIndex(value)) + "].data)";
  };
  os << "  gdn::device::PrologueBackwardArgs<Config> args = {};\n"
     << "  args.mixed = " << operand(op.getMixedQkv()) << ";\n"
     << "  args.weight = " << operand(op.getConvWeight()) << ";\n";
  if (Value bias = op.getConvBias())
    os << "  args.bias = " << operand(bias) << ";\n"
       << "  args.dbias = " << result(op.getConvBiasGrad()) << ";\n";
  if (Value state = op.getConvInitialState())
    os << "  args.initialState = " << operand(state) << ";\n"
       << "  args.dinitialState = " << result(op.getConvInitialStateGrad())
       << ";\n";
  if (Value cotangent = op.getConvFinalStateGrad())
    os << "  args.dfinalState = " << operand(cotangent) << ";\n";
  os << "  args.a = " << operand(op.getA()) << ";\n"
     << "  args.b = " << operand(op.getB()) << ";\n"
     << "  args.aLog = " << operand(op.getALog()) << ";\n"
     << "  args.dtBias = " << operand(op.getDtBias()) << ";\n"
     << "  args.dq = " << operand(op.getQGrad()) << ";\n"
     << "  args.dk = " << operand(op.getKGrad()) << ";\n"
     << "  args.dv = " << operand(op.getVGrad()) << ";\n"
     << "  args.dg = " << operand(op.getGGrad()) << ";\n"
     << "  args.dbeta = " << operand(op.getBetaGrad()) << ";\n"
     << "  args.dmixed = " << result(op.getMixedQkvGrad()) << ";\n"
     << "  args.dweight = " << result(op.getConvWeightGrad()) << ";\n"
     << "  args.da = " << result(op.getAGrad()) << ";\n"
     << "  args.db = " << result(op.getBGrad()) << ";\n"
     << "  args.daLog = " << result(op.getALogGrad()) << ";\n"
     << "  args.ddtBias = " << result(op.getDtBiasGrad()) << ";\n"
     << kPackingView
     << "  // The first kernel checks the offsets (in every block) and writes\n"
     << "  // the status record; invalid offsets make every gradient NaN.\n"
     << "  args.metadata = "
        "gdn::device::PackingWorkspace::carve(packing->workspace);\n";
  printLaunchReturn(os, "launchPrologueBackward", "args, scratch, stream");
}

//===----------------------------------------------------------------------===//
// Gated RMSNorm backward
//===----------------------------------------------------------------------===//

void mlir::gdn::cuda::printRMSNormGradConfig(kernel::GatedRMSNormGradOp op,
                                             const KernelContext &k,
                                             llvm::raw_ostream &os) {
  auto type = op.getX().getType();
  os << "// Kernel " << k.entryName << ": gdn_kernel.gated_rmsnorm_grad at "
     << op.getLoc() << "\n"
     << "//   from gdn.gated_rmsnorm_grad; x " << type.getElementType()
     << ", z " << elementOf(op.getZ()) << ", weight "
     << elementOf(op.getWeight()) << ", y_grad " << elementOf(op.getYGrad())
     << "\n"
     << "//   rows of V = " << type.getDimSize(2) << ", eps "
     << op.getEps().convertToDouble() << ", " << op.getThreads()
     << " threads per block, at most " << op.getBlocks()
     << " blocks; weight gradient summed per block, then in block order\n"
     << "struct " << k.configName << " {\n"
     << "  using Input = " << getDeviceType(type.getElementType()) << ";\n"
     << "  using Gate = " << getDeviceType(elementOf(op.getZ())) << ";\n"
     << "  using Weight = " << getDeviceType(elementOf(op.getWeight())) << ";\n"
     << "  using OutputGrad = " << getDeviceType(elementOf(op.getYGrad()))
     << ";\n"
     << "  using InputGrad = " << getDeviceType(elementOf(op.getXGrad()))
     << ";\n"
     << "  using GateGrad = " << getDeviceType(elementOf(op.getZGrad()))
     << ";\n"
     << "  using WeightGrad = " << getDeviceType(elementOf(op.getWeightGrad()))
     << ";\n";
  // The recomputed norm's output, written here instead of by a kernel of
  // its own (NormRecomputation.h).
  if (kernel::GatedRMSNormOp norm = getFoldedRecomputation(op))
    os << "  using Output = " << getDeviceType(elementOf(norm.getY()))
       << "; // also writes y of the gdn_kernel.gated_rmsnorm at "
       << norm.getLoc() << "\n";
  os << "  static constexpr int kHeadDimV = " << type.getDimSize(2) << ";\n"
     << "  static constexpr int kThreads = " << op.getThreads() << ";\n"
     << "  static constexpr int kBlocks = " << op.getBlocks() << ";\n"
     << llvm::formatv("  static constexpr float kEps = {0:e}f;\n",
                      op.getEps().convertToDouble());
  // dz written in place as columns of a stacked cotangent
  // (gdn-merge-projection-grads; InsertChains.h).
  if (std::optional<int64_t> stride = getStridedRowElements(op.getZGrad()))
    os << "  static constexpr int64_t kGateGradTokenStride = " << *stride
       << "; // dz: columns of a stacked cotangent\n"
       << "  static constexpr int64_t kGateGradHeads = " << type.getDimSize(1)
       << ";\n";
  os << "};\n\n";
}

void mlir::gdn::cuda::printRMSNormGradEntry(kernel::GatedRMSNormGradOp op,
                                            const KernelContext &k,
                                            llvm::raw_ostream &os) {
  auto type = op.getX().getType();
  const int64_t heads = type.getDimSize(1);
  // No packing: the scratch holds at most kBlocks partial sums of V, the
  // most any row count uses, so that it cannot be too small for the rows
  // the entry is given.
  printScratchAndChecks(
      op, k,
      "gdn::device::epilogueBackwardWorkspaceBytes<" + k.configName +
          ">(\n      static_cast<int64_t>(" + k.configName +
          "::kBlocks) *\n      gdn::device::EpilogueBackwardShape<" +
          k.configName + ">::kMinRowsPerBlock)",
      [&](Value value) {
        return value == op.getWeight() || value == op.getWeightGrad()
                   ? "{" + std::to_string(type.getDimSize(2)) + "}"
                   : expectedShape(value, 0, -1);
      },
      os);
  kernel::GatedRMSNormOp norm = getFoldedRecomputation(op);
  if (norm)
    os << "  // results[3]: y of the recomputed norm, which this kernel writes\n"
       << "  if (!gdn::checkTensor(results[3], " << getAbiDtype(elementOf(norm.getY()))
       << ", " << expectedShape(norm.getY(), 0, -1) << "))\n"
       << "    return GDN_ERROR_INVALID_ARGUMENT;\n";
  os << "  for (const gdn_tensor_t *tensor : {&operands[0], &operands[1], "
        "&operands[2],\n"
     << "                                     &results[0], &results[1]"
     << (norm ? ", &results[3]" : "") << "})\n"
     << "    if (!gdn::isVectorAligned(*tensor))\n"
     << "      return GDN_ERROR_INVALID_ARGUMENT;\n";
  printLaunchOpening(k, os);
  auto pointer = [&](StringRef array, unsigned index, Value value,
                     bool isConst) {
    return "static_cast<" + std::string(isConst ? "const " : "") +
           getDeviceType(elementOf(value)) + " *>(" + array.str() + "[" +
           std::to_string(index) + "].data)";
  };
  os << "  gdn::device::EpilogueBackwardArgs<Config> args = {};\n"
     << "  args.dy = " << pointer("operands", 0, op.getYGrad(), true) << ";\n"
     << "  args.x = " << pointer("operands", 1, op.getX(), true) << ";\n"
     << "  args.z = " << pointer("operands", 2, op.getZ(), true) << ";\n"
     << "  args.weight = " << pointer("operands", 3, op.getWeight(), true)
     << ";\n"
     << "  args.dx = " << pointer("results", 0, op.getXGrad(), false) << ";\n"
     << "  args.dz = " << pointer("results", 1, op.getZGrad(), false) << ";\n"
     << "  args.dweight = " << pointer("results", 2, op.getWeightGrad(), false)
     << ";\n";
  if (norm)
    os << "  args.y = " << pointer("results", 3, norm.getY(), false) << ";\n";
  os << "  // No rows still launches: the weight gradient is then 0.\n"
     << "  args.rows = operands[0].shape[0] * " << heads << ";\n";
  printLaunchReturn(os, "launchEpilogueBackward", "args, scratch, stream");
}
