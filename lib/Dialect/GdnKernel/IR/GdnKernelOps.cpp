//===- GdnKernelOps.cpp - kernel-level op verifiers -----------------------===//
//
// A kernel op must describe a kernel the device header library can run: the
// shapes agree with each other, heads fill whole vectors (16 bytes, or the
// op's vector_bytes) in a power-of-two lane group of at most a warp, and the
// tile fits a block. These are the conditions the emitter relies on, checked
// once here.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/GdnKernel/IR/GdnKernelDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::kernel;

#include "gdn/Dialect/GdnKernel/IR/GdnKernelDialect.cpp.inc"

#define GET_OP_CLASSES
#include "gdn/Dialect/GdnKernel/IR/GdnKernelOps.cpp.inc"

void GdnKernelDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "gdn/Dialect/GdnKernel/IR/GdnKernelOps.cpp.inc"
      >();
}

int64_t mlir::gdn::kernel::getElementBytes(Type type) {
  return getElementTypeOrSelf(type).getIntOrFloatBitWidth() / 8;
}

bool mlir::gdn::kernel::writesStridedRows(Value result) {
  if (auto grad = result.getDefiningOp<PrologueGradOp>())
    return result == grad.getMixedQkvGrad() || result == grad.getAGrad() ||
           result == grad.getBGrad();
  if (auto grad = result.getDefiningOp<GatedRMSNormGradOp>())
    return result == grad.getZGrad();
  return false;
}

int64_t mlir::gdn::kernel::getStridedRowsAlignment(Value result) {
  if (auto grad = result.getDefiningOp<PrologueGradOp>();
      grad && (result == grad.getAGrad() || result == grad.getBGrad()))
    return getElementBytes(result.getType());
  return 16;
}

int64_t mlir::gdn::kernel::getLanesPerHead(int64_t headDim, Type elementType,
                                           int64_t vectorBytes) {
  const int64_t perVector = vectorBytes / getElementBytes(elementType);
  if (perVector == 0 || headDim % perVector != 0)
    return 0;
  return headDim / perVector;
}

bool mlir::gdn::kernel::isLaneGroup(int64_t headDim, Type elementType,
                                    int64_t vectorBytes) {
  const int64_t lanes = getLanesPerHead(headDim, elementType, vectorBytes);
  return lanes >= 1 && lanes <= 32 && (lanes & (lanes - 1)) == 0;
}

int64_t mlir::gdn::kernel::getPrologueInputWords(Type input, Type activation,
                                                 int64_t vectorBytes) {
  const int64_t perVector = vectorBytes / getElementBytes(activation);
  const int64_t bytes = perVector * getElementBytes(input);
  return bytes % 16 == 0 ? bytes / 16 : 0;
}

int64_t mlir::gdn::kernel::getPrologueSharedBytes(int64_t threads,
                                                  int64_t rowsInFlight,
                                                  int64_t inputWords) {
  return (threads * rowsInFlight * inputWords + 1) * 16;
}

/// Checks that `type` has `shape` (dynamic entries of either side match).
static LogicalResult expectShape(Operation *op, Value value, StringRef name,
                                 ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(value.getType());
  bool ok = type.getRank() == static_cast<int64_t>(shape.size());
  for (size_t d = 0; ok && d < shape.size(); ++d)
    ok = ShapedType::isDynamic(shape[d]) || type.isDynamicDim(d) ||
         type.getDimSize(d) == shape[d];
  if (ok)
    return success();
  InFlightDiagnostic diag = op->emitOpError() << name << " must have shape [";
  llvm::interleaveComma(shape, diag, [&](int64_t size) {
    if (ShapedType::isDynamic(size))
      diag << "?";
    else
      diag << size;
  });
  return diag << "], found " << value.getType();
}

static LogicalResult checkLaneGroup(Operation *op, int64_t headDim, Type type,
                                    StringRef what, int64_t vectorBytes = 16) {
  if (isLaneGroup(headDim, type, vectorBytes))
    return success();
  return op->emitOpError()
         << what << " (" << headDim << " x " << getElementTypeOrSelf(type)
         << ") must fill a power-of-two group of at most 32 lanes of "
         << vectorBytes << " bytes";
}

static LogicalResult checkThreads(Operation *op, int64_t threads) {
  if (threads % 32 == 0 && threads <= 1024)
    return success();
  return op->emitOpError() << "threads = " << threads
                           << " must be a multiple of 32, at most 1024";
}

/// What the prologue and its backward share: whole GQA groups, and conv
/// widths the kernels unroll (1 to 4).
static LogicalResult checkPrologueGrouping(Operation *op, int64_t keyHeads,
                                           int64_t valueHeads, int64_t width) {
  if (valueHeads % keyHeads != 0)
    return op->emitOpError() << "value heads (" << valueHeads
                             << ") must be a multiple of key heads ("
                             << keyHeads << ")";
  if (width > 4)
    return op->emitOpError() << "conv_width = " << width
                             << " exceeds the kernel's limit of 4";
  return success();
}

LogicalResult kernel::PrologueOp::verify() {
  const int64_t keyHeads = getKeyHeads(), valueHeads = getValueHeads();
  const int64_t headDimK = getHeadDimK(), headDimV = getHeadDimV();
  const int64_t width = getConvWidth();
  if (failed(checkPrologueGrouping(*this, keyHeads, valueHeads, width)))
    return failure();
  const int64_t channels = 2 * keyHeads * headDimK + valueHeads * headDimV;
  auto mixedType = getMixedQkv().getType();
  if (mixedType.getRank() != 2)
    return emitOpError() << "mixed_qkv must be [T, C], found " << mixedType;
  PackingType packing = getPacking().getType();
  int64_t tokens = mixedType.getDimSize(0);
  if (packing.hasStaticTokens()) {
    if (!ShapedType::isDynamic(tokens) && tokens != packing.getTokens())
      return emitOpError() << "mixed_qkv has " << tokens
                           << " tokens but the packing describes "
                           << packing.getTokens();
    tokens = packing.getTokens();
  }
  const int64_t seqs = packing.getSeqs();
  // q, k and v share one type, the one the kernel's vectors are counted in;
  // the conv input may be wider (an f32 projection output), never narrower.
  Type element = getElementTypeOrSelf(getQ().getType());
  for (Value value : {getK(), getV()})
    if (getElementTypeOrSelf(value.getType()) != element)
      return emitOpError() << "q, k and v must have one element type, found "
                           << element << " and "
                           << getElementTypeOrSelf(value.getType());
  if (getElementBytes(mixedType) < getElementBytes(element))
    return emitOpError() << "mixed_qkv (" << mixedType.getElementType()
                         << ") must be at least as wide as q, k and v ("
                         << element << ")";
  // The kernel takes one pointer type per role (see PrologueArgs).
  auto sameElement = [&](Value first, Value second,
                         StringRef what) -> LogicalResult {
    if (!first || !second ||
        getElementTypeOrSelf(first.getType()) ==
            getElementTypeOrSelf(second.getType()))
      return success();
    return emitOpError() << what << " must have one element type, found "
                         << getElementTypeOrSelf(first.getType()) << " and "
                         << getElementTypeOrSelf(second.getType());
  };
  if (failed(sameElement(getConvWeight(), getConvBias(),
                         "conv_weight and conv_bias")) ||
      failed(sameElement(getConvInitialState(), getConvFinalState(),
                         "conv_initial_state and conv_final_state")) ||
      failed(sameElement(getA(), getB(), "a and b")) ||
      failed(sameElement(getALog(), getDtBias(), "a_log and dt_bias")))
    return failure();
  if (failed(
          expectShape(*this, getMixedQkv(), "mixed_qkv", {tokens, channels})) ||
      failed(expectShape(*this, getConvWeight(), "conv_weight",
                         {channels, width})) ||
      failed(expectShape(*this, getQ(), "q", {tokens, keyHeads, headDimK})) ||
      failed(expectShape(*this, getK(), "k", {tokens, keyHeads, headDimK})) ||
      failed(expectShape(*this, getV(), "v", {tokens, valueHeads, headDimV})) ||
      failed(expectShape(*this, getA(), "a", {tokens, valueHeads})) ||
      failed(expectShape(*this, getB(), "b", {tokens, valueHeads})) ||
      failed(expectShape(*this, getG(), "g", {tokens, valueHeads})) ||
      failed(expectShape(*this, getBeta(), "beta", {tokens, valueHeads})) ||
      failed(expectShape(*this, getALog(), "a_log", {valueHeads})) ||
      failed(expectShape(*this, getDtBias(), "dt_bias", {valueHeads})))
    return failure();
  if (getConvBias() &&
      failed(expectShape(*this, getConvBias(), "conv_bias", {channels})))
    return failure();
  for (auto [state, name] : {std::pair<Value, StringRef>{getConvInitialState(),
                                                         "conv_initial_state"},
                             {getConvFinalState(), "conv_final_state"}})
    if (state &&
        failed(expectShape(*this, state, name, {seqs, channels, width - 1})))
      return failure();
  if (getConvFinalState() && width < 2)
    return emitOpError() << "a width-1 conv has no final state";
  const int64_t vectorBytes = getVectorBytes();
  if (vectorBytes != 8 && vectorBytes != 16)
    return emitOpError() << "vector_bytes = " << vectorBytes
                         << " must be 8 or 16";
  const int64_t inputWords =
      getPrologueInputWords(mixedType, element, vectorBytes);
  if (inputWords == 0)
    return emitOpError() << "vector_bytes = " << vectorBytes << " of "
                         << element << " takes "
                         << getElementTypeOrSelf(mixedType)
                         << " conv input that is not whole 16-byte words; "
                            "8-byte vectors need a conv input twice as wide "
                            "as q, k and v (f32 beside bf16 or f16)";
  if (failed(checkLaneGroup(*this, headDimK, element, "a key head",
                            vectorBytes)) ||
      failed(checkThreads(*this, getThreads())))
    return failure();
  const int64_t sharedBytes =
      getPrologueSharedBytes(getThreads(), getRowsInFlight(), inputWords);
  if (sharedBytes > kMaxSharedBytesPerBlock)
    return emitOpError() << "threads = " << getThreads()
                         << " with rows_in_flight = " << getRowsInFlight()
                         << " needs " << sharedBytes
                         << " bytes of shared memory (16-byte words of conv "
                            "input a thread and row: "
                         << inputWords << "), above " << kMaxSharedBytesPerBlock
                         << "; use fewer threads or rows in flight";
  if (getRowsInFlight() > 16 || getTokensPerBlock() > 1024)
    return emitOpError() << "rows_in_flight (" << getRowsInFlight()
                         << ") must be at most 16 and tokens_per_block ("
                         << getTokensPerBlock() << ") at most 1024";
  if ((channels * getElementBytes(element)) % vectorBytes != 0)
    return emitOpError() << "the " << channels
                         << " conv channels must fill whole " << vectorBytes
                         << "-byte vectors";
  if (!(getL2normEps().convertToDouble() >= 0.0))
    return emitOpError() << "l2norm_eps must be >= 0";
  return success();
}

/// What the gated RMSNorm and its backward check: `x` is [T, HV, V] with V
/// static; every tensor of `rows` has x's shape (x moves
/// in 16-byte vectors, the others as many elements in vectors of their own
/// width: the types ODS allows, 2 and 4 bytes, all fit); every tensor of
/// `weights` is [V]; a head fills a lane group; the tile fits; eps >= 0.
static LogicalResult
verifyGatedRMSNormRows(Operation *op, Value x,
                       ArrayRef<std::pair<Value, StringRef>> rows,
                       ArrayRef<std::pair<Value, StringRef>> weights,
                       int64_t threads, double eps) {
  auto xType = cast<RankedTensorType>(x.getType());
  if (xType.getRank() != 3)
    return op->emitOpError() << "x must be [T, HV, V], found " << xType;
  const int64_t headDimV = xType.getDimSize(2);
  if (ShapedType::isDynamic(headDimV))
    return op->emitOpError() << "the head dim V must be static";
  for (auto [value, name] : rows)
    if (failed(expectShape(op, value, name, xType.getShape())))
      return failure();
  for (auto [value, name] : weights)
    if (failed(expectShape(op, value, name, {headDimV})))
      return failure();
  if (failed(checkLaneGroup(op, headDimV, xType, "a value head")) ||
      failed(checkThreads(op, threads)))
    return failure();
  if (!(eps >= 0.0))
    return op->emitOpError() << "eps must be >= 0";
  return success();
}

LogicalResult kernel::GatedRMSNormOp::verify() {
  return verifyGatedRMSNormRows(*this, getX(), {{getZ(), "z"}, {getY(), "y"}},
                                {{getWeight(), "weight"}}, getThreads(),
                                getEps().convertToDouble());
}

/// The tiles and dims delta_rule.cuh instantiates and the GPU suite checks.
bool mlir::gdn::kernel::isSupportedDeltaRuleTile(int64_t headDimK,
                                                 int64_t headDimV,
                                                 int64_t valueTile,
                                                 int64_t scanStages,
                                                 bool wgmma) {
  auto dimOk = [](int64_t dim) { return dim == 64 || dim == 128; };
  if (!dimOk(headDimK) || !dimOk(headDimV) || headDimV % valueTile != 0)
    return false;
  if (wgmma)
    return (valueTile == 64 || valueTile == 128) &&
           (scanStages == 2 || scanStages == 3);
  return (valueTile == 32 || valueTile == 64 || valueTile == 128) &&
         (scanStages == 1 || scanStages == 2);
}

int64_t mlir::gdn::kernel::getDeltaRuleScanSharedBytes(int64_t headDimK,
                                                       int64_t valueTile,
                                                       int64_t scanStages) {
  // Rows of bf16 padded by 16 bytes; per stage Q, K (K wide), V (the tile),
  // M, P (64 wide), 64 rows each, and G; then S (K rows) and R, Vnew and the
  // decayed Vnew (64 rows each), as wide as the tile.
  const int64_t ldK = headDimK + 8, ldV = valueTile + 8, ldC = 64 + 8;
  const int64_t stage = 2 * 64 * (2 * ldK + ldV + 2 * ldC) + 4 * 64;
  return scanStages * stage + 2 * headDimK * ldV + 3 * 2 * 64 * ldV;
}

/// warmup_bits of an op that splits chains (the forward and the backward
/// delta rule): only with split_target_blocks, and within fp32's range.
template <class SplitOp> static LogicalResult verifyWarmupBits(SplitOp op) {
  std::optional<uint64_t> bits = op.getWarmupBits();
  if (!bits)
    return success();
  if (!op.getSplitTargetBlocks())
    return op.emitOpError() << "warmup_bits needs split_target_blocks (only "
                               "split chains warm up)";
  if (*bits > kMaxWarmupBits)
    return op.emitOpError() << "warmup_bits (" << *bits << ") must be at most "
                            << kMaxWarmupBits
                            << " (a bound below fp32's range); 0 makes every "
                               "segment exact";
  return success();
}

LogicalResult kernel::DeltaRuleOp::verify() {
  const int64_t keyHeads = getKeyHeads(), valueHeads = getValueHeads();
  const int64_t headDimK = getHeadDimK(), headDimV = getHeadDimV();
  if (valueHeads % keyHeads != 0)
    return emitOpError() << "value heads (" << valueHeads
                         << ") must be a multiple of key heads (" << keyHeads
                         << ")";
  const bool wgmma = getScan() == "wgmma";
  if (!wgmma && getScan() != "mma_sync")
    return emitOpError() << "scan must be \"mma_sync\" or \"wgmma\", found \""
                         << getScan() << "\"";
  if (!isSupportedDeltaRuleTile(headDimK, headDimV, getValueTile(),
                                getScanStages(), wgmma))
    return emitOpError()
           << "the " << getScan() << " scan takes K and V in {64, 128}, "
           << (wgmma ? "value_tile 64 or 128 dividing V and scan_stages 2 or 3"
                     : "value_tile 32, 64 or 128 dividing V and scan_stages "
                       "1 or 2")
           << "; found K = " << headDimK << ", V = " << headDimV
           << ", value_tile = " << getValueTile()
           << ", scan_stages = " << getScanStages();
  if (getScores() != "prepare" && getScores() != "scan" &&
      getScores() != "producer")
    return emitOpError() << "scores must be \"prepare\", \"scan\" or "
                            "\"producer\", found \""
                         << getScores() << "\"";
  if (getScores() != "prepare" && !wgmma)
    return emitOpError() << "scores = \"" << getScores()
                         << "\" needs scan = \"wgmma\" (only the wgmma scan "
                            "and its warp-specialised block compute P "
                            "themselves)";
  if (getScores() == "producer" && getNarrowValueTile())
    return emitOpError()
           << "scores = \"producer\" takes no narrow_value_tile (the "
              "narrow run-time fallback is a two-kernel config that would "
              "share the producer's workspace and P's source); use scores = "
              "\"prepare\" with it";
  std::optional<uint64_t> narrow = getNarrowValueTile();
  if (narrow.has_value() != getNarrowBelowBlocks().has_value())
    return emitOpError() << "narrow_value_tile and narrow_below_blocks go "
                            "together (the run-time tile choice needs both)";
  if (narrow &&
      (static_cast<int64_t>(*narrow) >= static_cast<int64_t>(getValueTile()) ||
       !isSupportedDeltaRuleTile(headDimK, headDimV, *narrow, getScanStages(),
                                 wgmma)))
    return emitOpError() << "narrow_value_tile (" << *narrow
                         << ") must be a tile the " << getScan()
                         << " scan takes with scan_stages = "
                         << getScanStages() << ", narrower than value_tile ("
                         << getValueTile() << ")";
  if (getSplitTargetBlocks() && narrow)
    return emitOpError() << "split_target_blocks and narrow_value_tile are "
                            "alternatives (split chains run the wide tile)";
  if (failed(verifyWarmupBits(*this)))
    return failure();
  if (!(getScale().convertToDouble() > 0.0))
    return emitOpError() << "scale must be > 0, found "
                         << getScale().convertToDouble();
  for (Value value : {getQ(), getK(), getV(), getO()})
    if (!getElementTypeOrSelf(value.getType()).isBF16())
      return emitOpError() << "q, k, v and o must be bf16 (the products use "
                              "mma.sync .bf16), found "
                           << value.getType();
  const int64_t any = ShapedType::kDynamic;
  PackingType packing = getPacking().getType();
  const int64_t tokens =
      packing.hasStaticTokens() ? packing.getTokens() : any;
  const int64_t seqs = packing.hasStaticSeqs() ? packing.getSeqs() : any;
  if (failed(expectShape(*this, getQ(), "q", {tokens, keyHeads, headDimK})) ||
      failed(expectShape(*this, getK(), "k", {tokens, keyHeads, headDimK})) ||
      failed(expectShape(*this, getV(), "v", {tokens, valueHeads, headDimV})) ||
      failed(expectShape(*this, getG(), "g", {tokens, valueHeads})) ||
      failed(expectShape(*this, getBeta(), "beta", {tokens, valueHeads})) ||
      failed(expectShape(*this, getO(), "o", {tokens, valueHeads, headDimV})))
    return failure();
  for (Value state : {getInitialState(), getFinalState()})
    if (state && failed(expectShape(*this, state, "a state",
                                    {seqs, valueHeads, headDimK, headDimV})))
      return failure();
  return success();
}

LogicalResult kernel::DeltaRuleGradOp::verify() {
  if (failed(verifyWarmupBits(*this)))
    return failure();
  if (getScan() != "mma_sync" && getScan() != "wgmma")
    return emitOpError() << "scan must be \"mma_sync\" or \"wgmma\", found \""
                         << getScan() << "\"";
  const int64_t keyHeads = getKeyHeads(), valueHeads = getValueHeads();
  const int64_t headDimK = getHeadDimK(), headDimV = getHeadDimV();
  if (valueHeads % keyHeads != 0)
    return emitOpError() << "value heads (" << valueHeads
                         << ") must be a multiple of key heads (" << keyHeads
                         << ")";
  if ((headDimK != 64 && headDimK != 128) || (headDimV != 64 && headDimV != 128))
    return emitOpError() << "the kernels take K and V in {64, 128}; found K = "
                         << headDimK << ", V = " << headDimV;
  if (!(getScale().convertToDouble() > 0.0))
    return emitOpError() << "scale must be > 0, found "
                         << getScale().convertToDouble();
  for (Value value : {getOGrad(), getQ(), getK(), getV()})
    if (!getElementTypeOrSelf(value.getType()).isBF16())
      return emitOpError() << "o_grad, q, k and v must be bf16 (the products "
                              "use mma.sync .bf16), found "
                           << value.getType();
  Type gradient = getElementTypeOrSelf(getQGrad().getType());
  if (!gradient.isBF16() && !gradient.isF32())
    return emitOpError() << "q_grad, k_grad and v_grad must be bf16 or f32, found "
                         << getQGrad().getType();
  for (Value value : {getKGrad(), getVGrad()})
    if (getElementTypeOrSelf(value.getType()) != gradient)
      return emitOpError() << "q_grad, k_grad and v_grad must share one element "
                              "type, found "
                           << getQGrad().getType() << " and " << value.getType();
  if (static_cast<bool>(getInitialState()) != static_cast<bool>(getInitialStateGrad()))
    return emitOpError() << "initial_state_grad must be returned exactly when "
                            "an initial_state is given";
  const int64_t any = ShapedType::kDynamic;
  PackingType packing = getPacking().getType();
  const int64_t tokens = packing.hasStaticTokens() ? packing.getTokens() : any;
  const int64_t seqs = packing.hasStaticSeqs() ? packing.getSeqs() : any;
  const SmallVector<int64_t> keys = {tokens, keyHeads, headDimK},
                             values = {tokens, valueHeads, headDimV},
                             gates = {tokens, valueHeads},
                             states = {seqs, valueHeads, headDimK, headDimV};
  if (failed(expectShape(*this, getOGrad(), "o_grad", values)) ||
      failed(expectShape(*this, getQ(), "q", keys)) ||
      failed(expectShape(*this, getK(), "k", keys)) ||
      failed(expectShape(*this, getV(), "v", values)) ||
      failed(expectShape(*this, getG(), "g", gates)) ||
      failed(expectShape(*this, getBeta(), "beta", gates)) ||
      failed(expectShape(*this, getQGrad(), "q_grad", keys)) ||
      failed(expectShape(*this, getKGrad(), "k_grad", keys)) ||
      failed(expectShape(*this, getVGrad(), "v_grad", values)) ||
      failed(expectShape(*this, getGGrad(), "g_grad", gates)) ||
      failed(expectShape(*this, getBetaGrad(), "beta_grad", gates)))
    return failure();
  for (Value state : {getInitialState(), getFinalStateGrad(), getInitialStateGrad()})
    if (state && failed(expectShape(*this, state, "a state", states)))
      return failure();
  return success();
}

/// Emits "<what> must have one element type" unless every present value of
/// `values` has the first one's.
static LogicalResult expectOneElementType(Operation *op,
                                          ArrayRef<Value> values,
                                          StringRef what) {
  Type first;
  for (Value value : values) {
    if (!value)
      continue;
    Type element = getElementTypeOrSelf(value.getType());
    if (!first)
      first = element;
    else if (element != first)
      return op->emitOpError() << what << " must have one element type, found "
                               << first << " and " << element;
  }
  return success();
}

int64_t mlir::gdn::kernel::getPrologueGradSharedBytes(int64_t threads,
                                                      int64_t vectorBytes,
                                                      int64_t rowsInFlight,
                                                      int64_t inputUnits) {
  // The ring of (x, dy) vectors per row in flight and thread (x takes
  // `inputUnits` vectors of dy's size), and a word for the offsets' check
  // (PrologueBackwardShape::kSharedBytes).
  return vectorBytes * (inputUnits + 1) * threads * rowsInFlight + 8;
}

Value kernel::PrologueGradOp::getConvBiasGrad() {
  return getConvBias() && !getOptionalGrads().empty()
             ? getOptionalGrads().front()
             : Value();
}

Value kernel::PrologueGradOp::getConvInitialStateGrad() {
  return getConvInitialState() && !getOptionalGrads().empty()
             ? getOptionalGrads().back()
             : Value();
}

int64_t mlir::gdn::kernel::getPrologueGradBlocksPerSM(int64_t threads,
                                                      int64_t vectorBytes) {
  if (vectorBytes >= 16 || threads >= 512)
    return 1;
  return threads >= 256 ? 2 : 3;
}

LogicalResult kernel::PrologueGradOp::verify() {
  const size_t optionalGrads =
      (getConvBias() ? 1 : 0) + (getConvInitialState() ? 1 : 0);
  if (getOptionalGrads().size() != optionalGrads)
    return emitOpError() << "returns " << getOptionalGrads().size()
                         << " optional gradients but has " << optionalGrads
                         << " optional parameters (conv_bias, "
                            "conv_initial_state): one gradient each, in "
                            "that order";
  const int64_t keyHeads = getKeyHeads(), valueHeads = getValueHeads();
  const int64_t headDimK = getHeadDimK(), headDimV = getHeadDimV();
  const int64_t width = getConvWidth();
  if (failed(checkPrologueGrouping(*this, keyHeads, valueHeads, width)))
    return failure();
  const int64_t vectorBytes = getVectorBytes();
  if (vectorBytes != 8 && vectorBytes != 16)
    return emitOpError() << "vector_bytes = " << vectorBytes
                         << " must be 8 or 16";
  // One pointer type per role (PrologueBackwardArgs).
  if (failed(expectOneElementType(*this,
                                  {getMixedQkvGrad(), getQGrad(), getKGrad(),
                                   getVGrad()},
                                  "mixed_qkv_grad, q_grad, k_grad and v_grad")) ||
      failed(expectOneElementType(*this, {getConvWeight(), getConvBias()},
                                  "conv_weight and conv_bias")) ||
      failed(expectOneElementType(*this,
                                  {getConvWeightGrad(), getConvBiasGrad()},
                                  "conv_weight_grad and conv_bias_grad")) ||
      failed(expectOneElementType(
          *this, {getConvFinalStateGrad(), getConvInitialStateGrad()},
          "conv_final_state_grad and conv_initial_state_grad")) ||
      failed(expectOneElementType(*this, {getA(), getB()}, "a and b")) ||
      failed(expectOneElementType(*this, {getAGrad(), getBGrad()},
                                  "a_grad and b_grad")) ||
      failed(expectOneElementType(*this, {getALog(), getDtBias()},
                                  "a_log and dt_bias")) ||
      failed(expectOneElementType(*this, {getALogGrad(), getDtBiasGrad()},
                                  "a_log_grad and dt_bias_grad")))
    return failure();
  if (getConvFinalStateGrad() && width < 2)
    return emitOpError() << "a width-1 conv has no final state";
  // The vectors are counted in the cotangents' type; the conv input may be
  // wider (an f32 projection output), never narrower.
  Type element = getElementTypeOrSelf(getQGrad().getType());
  if (getElementBytes(getMixedQkv().getType()) < getElementBytes(element))
    return emitOpError() << "mixed_qkv ("
                         << getElementTypeOrSelf(getMixedQkv().getType())
                         << ") must be at least as wide as the cotangents ("
                         << getQGrad().getType() << ")";
  const int64_t perVector = vectorBytes / getElementBytes(element);
  const int64_t headLanes = perVector ? headDimK / perVector : 0;
  if (perVector == 0 || headDimK % perVector != 0 || headLanes > 32 ||
      (headLanes & (headLanes - 1)) != 0)
    return emitOpError() << "a key head (" << headDimK << " x " << element
                         << ") must fill a power-of-two group of at most 32 "
                            "lanes of "
                         << vectorBytes << " bytes";
  const int64_t channels = 2 * keyHeads * headDimK + valueHeads * headDimV;
  if (channels % perVector != 0)
    return emitOpError() << "the " << channels
                         << " conv channels must fill whole vectors of "
                         << vectorBytes << " bytes";
  if (failed(checkThreads(*this, getThreads())))
    return failure();
  if (getRowsInFlight() > 8)
    return emitOpError() << "rows_in_flight (" << getRowsInFlight()
                         << ") must be at most 8";
  if (getRowBlocks() > 65535)
    return emitOpError() << "row_blocks (" << getRowBlocks()
                         << ") must be at most 65535 (the grid's y limit)";
  const int64_t sharedBytes = getPrologueGradSharedBytes(
      getThreads(), vectorBytes, getRowsInFlight(),
      getElementBytes(getMixedQkv().getType()) / getElementBytes(element));
  if (sharedBytes > kMaxSharedBytesPerBlock)
    return emitOpError() << "threads = " << getThreads()
                         << " with rows_in_flight = " << getRowsInFlight()
                         << " needs " << sharedBytes
                         << " bytes of shared memory, above "
                         << kMaxSharedBytesPerBlock;
  if (!(getL2normEps().convertToDouble() >= 0.0))
    return emitOpError() << "l2norm_eps must be >= 0";

  const int64_t any = ShapedType::kDynamic;
  PackingType packing = getPacking().getType();
  const int64_t tokens = packing.hasStaticTokens() ? packing.getTokens() : any;
  const int64_t seqs = packing.hasStaticSeqs() ? packing.getSeqs() : any;
  const SmallVector<int64_t> mixed = {tokens, channels},
                             keys = {tokens, keyHeads, headDimK},
                             values = {tokens, valueHeads, headDimV},
                             gates = {tokens, valueHeads},
                             weight = {channels, width},
                             states = {seqs, channels, width - 1};
  if (failed(expectShape(*this, getMixedQkv(), "mixed_qkv", mixed)) ||
      failed(expectShape(*this, getMixedQkvGrad(), "mixed_qkv_grad", mixed)) ||
      failed(expectShape(*this, getConvWeight(), "conv_weight", weight)) ||
      failed(expectShape(*this, getConvWeightGrad(), "conv_weight_grad",
                         weight)) ||
      failed(expectShape(*this, getQGrad(), "q_grad", keys)) ||
      failed(expectShape(*this, getKGrad(), "k_grad", keys)) ||
      failed(expectShape(*this, getVGrad(), "v_grad", values)) ||
      failed(expectShape(*this, getA(), "a", gates)) ||
      failed(expectShape(*this, getB(), "b", gates)) ||
      failed(expectShape(*this, getAGrad(), "a_grad", gates)) ||
      failed(expectShape(*this, getBGrad(), "b_grad", gates)) ||
      failed(expectShape(*this, getGGrad(), "g_grad", gates)) ||
      failed(expectShape(*this, getBetaGrad(), "beta_grad", gates)))
    return failure();
  for (auto [value, name] :
       {std::pair<Value, StringRef>{getALog(), "a_log"},
        {getDtBias(), "dt_bias"},
        {getALogGrad(), "a_log_grad"},
        {getDtBiasGrad(), "dt_bias_grad"}})
    if (failed(expectShape(*this, value, name, {valueHeads})))
      return failure();
  for (auto [value, name] :
       {std::pair<Value, StringRef>{getConvBias(), "conv_bias"},
        {getConvBiasGrad(), "conv_bias_grad"}})
    if (value && failed(expectShape(*this, value, name, {channels})))
      return failure();
  for (auto [value, name] :
       {std::pair<Value, StringRef>{getConvInitialState(), "conv_initial_state"},
        {getConvInitialStateGrad(), "conv_initial_state_grad"},
        {getConvFinalStateGrad(), "conv_final_state_grad"}})
    if (value && failed(expectShape(*this, value, name, states)))
      return failure();
  return success();
}

LogicalResult kernel::GatedRMSNormGradOp::verify() {
  return verifyGatedRMSNormRows(
      *this, getX(),
      {{getZ(), "z"},
       {getYGrad(), "y_grad"},
       {getXGrad(), "x_grad"},
       {getZGrad(), "z_grad"}},
      {{getWeight(), "weight"}, {getWeightGrad(), "weight_grad"}}, getThreads(),
      getEps().convertToDouble());
}
