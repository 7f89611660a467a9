//===- InputGenerator.cpp - seeded inputs with realistic values -----------===//
//
// Roles come from uses; shapes from the argument types (global view), with
// dynamic sizes bound to the packing's token and sequence counts. Each
// argument draws from its own stream (seed, index), so adding an argument to
// a program does not change the values of the others.
//
//===----------------------------------------------------------------------===//

#include "gdn/Interpreter/InputGenerator.h"

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"
#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"
#include "gdn/Dialect/GdnKernel/IR/GdnKernelDialect.h"
#include "gdn/Interpreter/Distribution.h"
#include "gdn/Support/PackingValidation.h"

#include "RandomStream.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;

const char *mlir::gdn::interp::getInputRoleName(InputRole role) {
  switch (role) {
  case InputRole::Activation:
    return "activation";
  case InputRole::Offsets:
    return "cu_seqlens";
  case InputRole::PaddedOffsets:
    return "cu_padded";
  case InputRole::Decay:
    return "decay g";
  case InputRole::Beta:
    return "beta";
  case InputRole::UnitRows:
    return "unit-norm rows";
  case InputRole::LogDecayRate:
    return "A_log";
  case InputRole::DtBias:
    return "dt_bias";
  case InputRole::ProjectionWeight:
    return "projection weight";
  case InputRole::ConvWeight:
    return "conv weight";
  case InputRole::NormWeight:
    return "norm weight";
  case InputRole::State:
    return "state";
  }
  return "?";
}

/// A delta rule's gradient (gdn or kernel op) draws its operands as the
/// forward does; the cotangents as activations, the final states' as states.
template <class GradOp>
static InputRole deltaRuleGradRole(GradOp grad, Value value) {
  if (value == grad.getQ() || value == grad.getK())
    return InputRole::UnitRows;
  if (value == grad.getG())
    return InputRole::Decay;
  if (value == grad.getBeta())
    return InputRole::Beta;
  if (value == grad.getInitialState() || value == grad.getFinalStateGrad())
    return InputRole::State;
  return InputRole::Activation;
}

/// The role `use` gives its value, if it decides one.
static std::optional<InputRole> roleOfUse(OpOperand &use) {
  Operation *owner = use.getOwner();
  unsigned index = use.getOperandNumber();
  Value value = use.get();
  if (isa<PackingOp>(owner))
    return index == 0 ? InputRole::Offsets : InputRole::PaddedOffsets;
  if (auto delta = dyn_cast<DeltaRuleOp>(owner)) {
    if (value == delta.getQ() || value == delta.getK())
      return InputRole::UnitRows;
    if (value == delta.getG())
      return InputRole::Decay;
    if (value == delta.getBeta())
      return InputRole::Beta;
    if (value == delta.getInitialState())
      return InputRole::State;
    return InputRole::Activation;
  }
  if (auto grad = dyn_cast<DeltaRuleGradOp>(owner))
    return deltaRuleGradRole(grad, value);
  // Chunkwise CP's summaries read the delta rule's operands; their
  // cotangents and the per-sequence states are states.
  if (auto summary = dyn_cast<comm::StateSummaryOp>(owner)) {
    if (value == summary.getQ() || value == summary.getK())
      return InputRole::UnitRows;
    if (value == summary.getG())
      return InputRole::Decay;
    if (value == summary.getBeta())
      return InputRole::Beta;
    if (value == summary.getInitialState())
      return InputRole::State;
    return InputRole::Activation;
  }
  if (auto grad = dyn_cast<comm::StateSummaryGradOp>(owner)) {
    if (value == grad.getK())
      return InputRole::UnitRows;
    if (value == grad.getG())
      return InputRole::Decay;
    if (value == grad.getBeta())
      return InputRole::Beta;
    if (value == grad.getV())
      return InputRole::Activation;
    return InputRole::State;
  }
  if (isa<comm::ContinueStateOp, comm::SummaryInitialStatesOp>(owner))
    return InputRole::State;
  if (auto grad = dyn_cast<kernel::DeltaRuleGradOp>(owner))
    return deltaRuleGradRole(grad, value);
  // The other gradient ops (gdn-generate-backward's, before or after
  // gdn-fuse): parameters as the forward draws them, states (the final
  // states' cotangents too) per sequence, the rest as activations.
  if (auto conv = dyn_cast<CausalConv1dGradOp>(owner)) {
    if (value == conv.getWeight())
      return InputRole::ConvWeight;
    if (value == conv.getInitialState() || value == conv.getFinalStateGrad())
      return InputRole::State;
    return InputRole::Activation;
  }
  if (auto gates = dyn_cast<GatesGradOp>(owner)) {
    if (value == gates.getALog())
      return InputRole::LogDecayRate;
    if (value == gates.getDtBias())
      return InputRole::DtBias;
    return InputRole::Activation;
  }
  if (auto norm = dyn_cast<GatedRMSNormGradOp>(owner))
    return value == norm.getWeight() ? InputRole::NormWeight
                                     : InputRole::Activation;
  if (auto norm = dyn_cast<kernel::GatedRMSNormGradOp>(owner))
    return value == norm.getWeight() ? InputRole::NormWeight
                                     : InputRole::Activation;
  if (auto linear = dyn_cast<LinearGradOp>(owner))
    return value == linear.getWeight() ? InputRole::ProjectionWeight
                                       : InputRole::Activation;
  if (auto grad = dyn_cast<kernel::PrologueGradOp>(owner)) {
    if (value == grad.getConvWeight())
      return InputRole::ConvWeight;
    if (value == grad.getALog())
      return InputRole::LogDecayRate;
    if (value == grad.getDtBias())
      return InputRole::DtBias;
    if (value == grad.getConvInitialState() ||
        value == grad.getConvFinalStateGrad())
      return InputRole::State;
    return InputRole::Activation;
  }
  if (auto gates = dyn_cast<GatesOp>(owner)) {
    if (value == gates.getALog())
      return InputRole::LogDecayRate;
    if (value == gates.getDtBias())
      return InputRole::DtBias;
    return InputRole::Activation;
  }
  if (auto linear = dyn_cast<LinearOp>(owner))
    return value == linear.getWeight() ? InputRole::ProjectionWeight
                                       : InputRole::Activation;
  if (auto conv = dyn_cast<CausalConv1dOp>(owner)) {
    if (value == conv.getWeight())
      return InputRole::ConvWeight;
    if (value == conv.getInitialState())
      return InputRole::State;
    return InputRole::Activation;
  }
  if (auto norm = dyn_cast<GatedRMSNormOp>(owner))
    return value == norm.getWeight() ? InputRole::NormWeight
                                     : InputRole::Activation;
  if (auto rule = dyn_cast<kernel::DeltaRuleOp>(owner)) {
    if (value == rule.getQ() || value == rule.getK())
      return InputRole::UnitRows;
    if (value == rule.getG())
      return InputRole::Decay;
    if (value == rule.getBeta())
      return InputRole::Beta;
    if (value == rule.getInitialState())
      return InputRole::State;
    return InputRole::Activation;
  }
  if (auto prologue = dyn_cast<kernel::PrologueOp>(owner)) {
    if (value == prologue.getConvWeight())
      return InputRole::ConvWeight;
    if (value == prologue.getALog())
      return InputRole::LogDecayRate;
    if (value == prologue.getDtBias())
      return InputRole::DtBias;
    if (value == prologue.getConvInitialState())
      return InputRole::State;
    return InputRole::Activation;
  }
  if (auto norm = dyn_cast<kernel::GatedRMSNormOp>(owner))
    return value == norm.getWeight() ? InputRole::NormWeight
                                     : InputRole::Activation;
  if (auto layer = dyn_cast<LayerOp>(owner)) {
    LayerOp::Weights w = layer.getWeightsByRole();
    if (value == w.conv)
      return InputRole::ConvWeight;
    if (value == w.aLog)
      return InputRole::LogDecayRate;
    if (value == w.dtBias)
      return InputRole::DtBias;
    if (value == w.norm)
      return InputRole::NormWeight;
    if (value == layer.getX())
      return InputRole::Activation;
    if (value == layer.getConvInitialState() ||
        value == layer.getDeltaInitialState())
      return InputRole::State;
    return InputRole::ProjectionWeight;
  }
  return std::nullopt;
}

/// Follows `value` through ops that only move it (layout conversions,
/// collectives and the section regrouping of headwise CP) to the op that
/// decides its role.
static std::optional<InputRole> findRole(Value value, int depth) {
  for (OpOperand &use : value.getUses()) {
    if (auto role = roleOfUse(use))
      return role;
    Operation *owner = use.getOwner();
    bool moves = isa<ConvertLayoutOp, RegroupSectionsOp>(owner) ||
                 isa<comm::GdnCommDialect>(owner->getDialect());
    if (moves && depth < 4 && owner->getNumResults() == 1)
      if (auto role = findRole(owner->getResult(0), depth + 1))
        return role;
  }
  return std::nullopt;
}

std::vector<InputRole> mlir::gdn::interp::inferInputRoles(func::FuncOp func) {
  std::vector<InputRole> roles;
  if (func.isExternal()) // a declaration: no uses to read roles from
    return std::vector<InputRole>(func.getNumArguments(),
                                  InputRole::Activation);
  for (BlockArgument argument : func.getArguments())
    roles.push_back(findRole(argument, 0).value_or(InputRole::Activation));
  return roles;
}

namespace {
/// Static facts about the function's packing.
struct PackingFacts {
  std::optional<int64_t> seqs, tokens;
  bool padded = false;
  bool zigzag = false;
};

PackingFacts findPackingFacts(func::FuncOp func) {
  PackingFacts facts;
  func.walk([&](PackingOp op) {
    PackingType type = op.getPacking().getType();
    if (type.hasStaticSeqs())
      facts.seqs = type.getSeqs();
    if (type.hasStaticTokens())
      facts.tokens = type.getTokens();
    facts.padded |= type.getPadded();
  });
  for (Type type : func.getFunctionType().getInputs())
    if (auto seq = dyn_cast_or_null<SeqLayoutAttr>(getSequenceLayout(type)))
      facts.zigzag |= seq.getKind() == SeqLayoutKind::Zigzag;
  return facts;
}

std::vector<int64_t> cumulative(const std::vector<int64_t> &lengths) {
  std::vector<int64_t> offsets{0};
  for (int64_t length : lengths)
    offsets.push_back(offsets.back() + length);
  return offsets;
}

/// `count` random non-negative multiples of `unit` summing to `total`.
std::vector<int64_t> randomPartition(RandomStream &random, int64_t total,
                                     int64_t count, int64_t unit) {
  std::vector<int64_t> cuts;
  for (int64_t i = 0; i + 1 < count; ++i)
    cuts.push_back(static_cast<int64_t>(random.uniform() * (total / unit + 1)) *
                   unit);
  for (int64_t &cut : cuts)
    cut = std::min(cut, total);
  std::sort(cuts.begin(), cuts.end());
  std::vector<int64_t> lengths;
  int64_t previous = 0;
  for (int64_t cut : cuts) {
    lengths.push_back(cut - previous);
    previous = cut;
  }
  lengths.push_back(total - previous);
  return lengths;
}

/// The token count of `lengths` (each >= 0), or an error naming `what` when
/// it passes the int32 token limit of a packing.
llvm::Expected<int64_t> countTokens(llvm::ArrayRef<int64_t> lengths,
                                    llvm::StringRef what) {
  int64_t total = 0;
  for (auto [index, length] : llvm::enumerate(lengths)) {
    if (length < 0)
      return llvm::createStringError(
          llvm::formatv("{0}: length {1} of sequence {2} is negative", what,
                        length, index));
    if (length > kMaxPackedTokens - total)
      return llvm::createStringError(llvm::formatv(
          "{0}: sequence {1} ({2} tokens) brings the pack past {3} tokens, "
          "the int32 limit of a packing; split the pack",
          what, index, length, kMaxPackedTokens));
    total += length;
  }
  return total;
}
} // namespace

llvm::Expected<std::vector<Tensor>> mlir::gdn::interp::generateGlobalInputs(
    func::FuncOp func, int64_t ranks, const GeneratorOptions &options,
    const std::map<unsigned, Tensor> &provided) {
  std::vector<InputRole> roles = inferInputRoles(func);
  PackingFacts facts = findPackingFacts(func);
  const unsigned numArgs = func.getNumArguments();

  // 1. The real lengths and slots of the sequences.
  std::optional<std::vector<int64_t>> lengths = options.seqlens,
                                      slots = options.slots;
  // Where each came from, for messages.
  std::string lengthsSource = "the real lengths (--seqlens)",
              slotsSource = "the padded slots (--slots)";
  for (unsigned i = 0; i < numArgs; ++i) {
    auto it = provided.find(i);
    if (it == provided.end())
      continue;
    if (roles[i] != InputRole::Offsets && roles[i] != InputRole::PaddedOffsets)
      continue;
    auto integers = it->second.toIntegers(
        roles[i] == InputRole::Offsets ? "cu_seqlens" : "cu_padded");
    if (!integers)
      return llvm::createStringError(
          llvm::formatv("arg{0}.npy: {1}", i,
                        llvm::toString(integers.takeError()))
              .str());
    std::vector<int64_t> offsets = std::move(*integers);
    if (std::optional<std::string> error = checkOffsets(
            offsets, /*expectedTotal=*/-1,
            roles[i] == InputRole::Offsets ? "cu_seqlens" : "cu_padded"))
      return llvm::createStringError(
          llvm::formatv("arg{0}.npy: {1}", i, *error).str());
    std::vector<int64_t> diffs;
    for (size_t j = 1; j < offsets.size(); ++j)
      diffs.push_back(offsets[j] - offsets[j - 1]);
    if (roles[i] == InputRole::Offsets) {
      lengths = diffs;
      lengthsSource = llvm::formatv("arg{0}.npy (cu_seqlens)", i).str();
    } else {
      slots = diffs;
      slotsSource = llvm::formatv("arg{0}.npy (cu_padded)", i).str();
    }
  }
  const int64_t unit = facts.zigzag ? 2 * ranks : 1;
  if (!lengths) {
    std::optional<int64_t> tokens = facts.tokens;
    // Otherwise the token count of a token-indexed argument.
    for (unsigned i = 0; i < numArgs && !tokens; ++i) {
      auto type = dyn_cast<RankedTensorType>(func.getArgument(i).getType());
      bool tokenIndexed =
          llvm::is_contained({InputRole::Activation, InputRole::UnitRows,
                              InputRole::Decay, InputRole::Beta},
                             roles[i]);
      if (type && tokenIndexed && type.getRank() >= 2 &&
          !ShapedType::isDynamic(getGlobalShape(type)[0]))
        tokens = getGlobalShape(type)[0];
    }
    std::optional<int64_t> seqs = facts.seqs;
    for (unsigned i = 0; i < numArgs && !seqs; ++i)
      if (roles[i] == InputRole::Offsets)
        if (auto type =
                dyn_cast<RankedTensorType>(func.getArgument(i).getType());
            type && !type.isDynamicDim(0))
          seqs = type.getDimSize(0) - 1;
    bool needsPacking = llvm::is_contained(roles, InputRole::Offsets);
    if (needsPacking && (!tokens || !seqs))
      return llvm::createStringError(
          "cannot tell the number of tokens or sequences from the types of @" +
          func.getName().str() +
          "; pass --seqlens (e.g. --seqlens=5,0,64) or "
          "cu_seqlens through --inputs");
    if (needsPacking && (*tokens > kMaxPackedTokens || *seqs > kMaxPackedTokens))
      return llvm::createStringError(llvm::formatv(
          "the types of @{0} describe {1} tokens in {2} sequences, past the "
          "int32 limit of a packing ({3}); give smaller static sizes",
          func.getName(), *tokens, *seqs, kMaxPackedTokens));
    if (needsPacking) {
      lengthsSource = slotsSource =
          "the packing drawn from @" + func.getName().str() + "'s types";
      RandomStream random(options.seed, 0xC0FFEE);
      if (facts.padded) {
        slots = randomPartition(random, *tokens, *seqs, unit);
        lengths.emplace();
        for (int64_t slot : *slots)
          lengths->push_back(
              static_cast<int64_t>(random.uniform() * (slot + 1)));
      } else {
        lengths = randomPartition(random, *tokens, *seqs, unit);
      }
    }
  }
  int64_t bufferTokens = 0;
  if (lengths) {
    auto realTokens = countTokens(*lengths, lengthsSource);
    if (!realTokens)
      return realTokens.takeError();
    bufferTokens = *realTokens;
  }
  if (lengths && facts.padded && !slots) {
    // Alignment padding as trainers produce it: each slot a multiple of 8
    // (the lengths are within int32, so this cannot overflow).
    slots.emplace();
    for (int64_t length : *lengths)
      slots->push_back((length + 7) / 8 * 8);
    slotsSource = "the slots of " + lengthsSource + " rounded up to 8";
  }
  const int64_t seqs = lengths ? static_cast<int64_t>(lengths->size()) : 0;
  if (slots) {
    auto slotTokens = countTokens(*slots, slotsSource);
    if (!slotTokens)
      return slotTokens.takeError();
    bufferTokens = *slotTokens;
    if (lengths && slots->size() != lengths->size())
      return llvm::createStringError(llvm::formatv(
          "{0} padded slots ({2}) for {1} sequences ({3}); give one slot per "
          "sequence",
          slots->size(), lengths->size(), slotsSource, lengthsSource));
    for (size_t seq = 0; lengths && seq < lengths->size(); ++seq)
      if ((*lengths)[seq] > (*slots)[seq])
        return llvm::createStringError(llvm::formatv(
            "sequence {0} has {1} real tokens ({3}) but a padded slot of {2} "
            "({4}); give each slot at least its sequence's length",
            seq, (*lengths)[seq], (*slots)[seq], lengthsSource, slotsSource));
  }

  // 2. Shapes, then values.
  std::vector<Tensor> inputs;
  for (unsigned i = 0; i < numArgs; ++i) {
    auto type = dyn_cast<RankedTensorType>(func.getArgument(i).getType());
    if (!type)
      return llvm::createStringError(llvm::formatv(
          "argument #{0} of @{1} is not a ranked tensor", i, func.getName()));
    auto kind = getElementKind(type.getElementType());
    if (!kind)
      return kind.takeError();
    std::vector<int64_t> shape = getGlobalShape(type);
    for (size_t d = 0; d < shape.size(); ++d) {
      if (!ShapedType::isDynamic(shape[d]))
        continue;
      bool offsets = roles[i] == InputRole::Offsets ||
                     roles[i] == InputRole::PaddedOffsets;
      if (d == 0 && lengths)
        shape[d] = offsets                        ? seqs + 1
                   : roles[i] == InputRole::State ? seqs
                                                  : bufferTokens;
      else if (!provided.count(i))
        return llvm::createStringError(llvm::formatv(
            "argument #{0} of @{1} has a dynamic dimension {2} the generator "
            "cannot size; give it through --inputs",
            i, func.getName(), d));
    }

    // (Dimensions still dynamic here come from a provided .npy, which
    // readNpy sized.)
    if (llvm::none_of(shape, ShapedType::isDynamic))
      if (auto count = checkElementCount(
              shape,
              llvm::formatv("argument #{0} of @{1}", i, func.getName()).str());
          !count)
        return count.takeError();

    if (auto it = provided.find(i); it != provided.end()) {
      const Tensor &given = it->second;
      bool matches = given.getRank() == static_cast<int64_t>(shape.size());
      for (size_t d = 0; matches && d < shape.size(); ++d)
        matches =
            ShapedType::isDynamic(shape[d]) || given.getDimSize(d) == shape[d];
      if (!matches) {
        std::string expected;
        for (int64_t size : shape)
          expected += (expected.empty() ? "" : "x") +
                      (ShapedType::isDynamic(size) ? std::string("?")
                                                   : std::to_string(size));
        return llvm::createStringError(llvm::formatv(
            "arg{0}.npy has shape {1} but argument #{0} of @{2} needs {3} "
            "(global shape)",
            i, given.describe(), func.getName(), expected));
      }
      if (auto error = checkStorable(given.values(), *kind,
                                     llvm::formatv("arg{0}.npy", i).str()))
        return std::move(error);
      Tensor converted(*kind, std::vector<int64_t>(given.getShape()));
      converted.values() = given.values();
      converted.roundToStorage();
      inputs.push_back(std::move(converted));
      continue;
    }

    Tensor tensor(*kind, shape);
    RandomStream random(options.seed, i);
    std::vector<double> &values = tensor.values();
    const int64_t last = shape.empty() ? 1 : shape.back();
    switch (roles[i]) {
    case InputRole::Offsets:
    case InputRole::PaddedOffsets: {
      std::vector<int64_t> offsets =
          cumulative(roles[i] == InputRole::Offsets ? *lengths : *slots);
      if (offsets.size() != values.size())
        return llvm::createStringError(llvm::formatv(
            "argument #{0} of @{1} holds {2} offsets but the packing has {3} "
            "sequences",
            i, func.getName(), values.size(), offsets.size() - 1));
      std::copy(offsets.begin(), offsets.end(), values.begin());
      break;
    }
    case InputRole::Decay:
      // log(sigmoid(x)): mostly slow decay, with a tail of fast forgetting.
      for (double &v : values)
        v = -std::log1p(std::exp(-(2.0 + 1.5 * random.normal())));
      break;
    case InputRole::Beta:
      for (double &v : values)
        v = 1.0 / (1.0 + std::exp(-random.normal()));
      break;
    case InputRole::UnitRows:
      for (double &v : values)
        v = random.normal();
      for (size_t row = 0; last > 0 && row < values.size() / last; ++row) {
        double norm = 0.0;
        for (int64_t j = 0; j < last; ++j)
          norm += values[row * last + j] * values[row * last + j];
        norm = std::sqrt(norm);
        for (int64_t j = 0; j < last; ++j)
          values[row * last + j] /= norm;
      }
      break;
    case InputRole::LogDecayRate:
      for (double &v : values)
        v = std::log(1.0 + 15.0 * random.uniform());
      break;
    case InputRole::DtBias:
    case InputRole::NormWeight:
      for (double &v : values)
        v = 1.0 + 0.1 * random.normal();
      break;
    case InputRole::ProjectionWeight: {
      int64_t fanIn = 1;
      for (size_t d = 1; d < shape.size(); ++d)
        fanIn *= shape[d];
      for (double &v : values)
        v = random.normal() / std::sqrt(static_cast<double>(fanIn));
      break;
    }
    case InputRole::ConvWeight:
      for (double &v : values)
        v = random.normal() / std::sqrt(static_cast<double>(last));
      break;
    case InputRole::State:
      for (double &v : values)
        v = 0.1 * random.normal();
      break;
    case InputRole::Activation:
      for (double &v : values)
        v = random.normal();
      break;
    }
    tensor.roundToStorage();
    inputs.push_back(std::move(tensor));
  }
  return inputs;
}
