//===- ContextParallel.cpp - GDN cores over a context-parallel group ------===//
//
// Drives gdn-context-parallel: finds the function's GDN cores and the
// token-indexed values around them (a function-wide analysis, so stacked
// layers work), makes those values token shards, and rewrites each core in
// its mode: headwise (HeadwiseCP.cpp), chunkwise (ChunkwiseCP.cpp), or the
// cheaper of the two by the cost model (ContextParallelCost.h) for
// mode=auto. gdn-run --compare checks the result against the P = 1 function.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/GdnComm/Transforms/Passes.h"

#include "ContextParallel.h"
#include "ContextParallelCost.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <numeric>
#include <tuple>

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNCONTEXTPARALLEL
#include "gdn/Dialect/GdnComm/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::cp;

Value Sharding::toContiguous(OpBuilder &builder, Location loc, Value value,
                             Value packing) const {
  if (tokenShard == contiguous)
    return value;
  auto type = cast<RankedTensorType>(value.getType());
  return ConvertLayoutOp::create(
      builder, loc, withDim(type, 0, type.getDimSize(0), contiguous), value,
      packing);
}

Value Sharding::toTokenShard(OpBuilder &builder, Location loc, Value value,
                             Value packing) const {
  if (tokenShard == contiguous)
    return value;
  auto type = cast<RankedTensorType>(value.getType());
  return ConvertLayoutOp::create(
      builder, loc, withDim(type, 0, type.getDimSize(0), tokenShard), value,
      packing);
}

LogicalResult cp::shardTokenValues(ArrayRef<Value> starts,
                                   const DenseSet<Operation *> &stops,
                                   const Sharding &sharding) {
  SmallVector<Value> worklist(starts.begin(), starts.end());
  DenseSet<Value> done;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!done.insert(value).second)
      continue;
    auto type = cast<RankedTensorType>(value.getType());
    if (!getSequenceLayout(type))
      value.setType(withDim(type, 0,
                            divided(type.getDimSize(0), sharding.ranks),
                            sharding.tokenShard));
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (stops.contains(user) || isa<func::ReturnOp>(user))
        continue;
      auto linear = dyn_cast<LinearOp>(user);
      if ((linear && use.get() == linear.getX()) ||
          isa<SplitQkvzOp, GatedRMSNormOp>(user)) {
        for (Value result : user->getResults())
          worklist.push_back(result);
        continue;
      }
      // gdn-sequence-parallel's reduce-scatter of a layer's output: its SP
      // shard nests inside this rank's CP shard (SP ranks innermost).
      auto scatter = dyn_cast<comm::ReduceScatterOp>(user);
      auto result = scatter ? cast<RankedTensorType>(scatter.getResult().getType())
                            : RankedTensorType();
      auto sp = result ? dyn_cast_or_null<SeqLayoutAttr>(getSequenceLayout(result))
                       : SeqLayoutAttr();
      if (scatter && sp && scatter.getGroup().getKind() == comm::GroupKind::SP &&
          scatter.getDim() == 0) {
        // Reached again from another token-indexed operand: nested already.
        if (sp.getTotalRanks() != scatter.getGroup().getRanks())
          continue;
        scatter.getResult().setType(
            withDim(result, 0, divided(result.getDimSize(0), sharding.ranks),
                    sharding.nestedIn(sp.getRanks())));
        continue;
      }
      return user->emitError()
             << "gdn-context-parallel: reads a token-indexed value but is "
                "not one of the token-local ops the pass distributes "
                "(gdn.linear's input, gdn.split_qkvz, gdn.gated_rmsnorm)";
    }
  }
  return success();
}

void cp::eraseCore(Core core) {
  SmallVector<Operation *, 6> ops = getCoreOps(core);
  for (Operation *op : llvm::reverse(ops))
    op->erase();
}

namespace {

/// What mode=auto prices when the token count is dynamic and the `tokens`
/// option is not given: a 32K-token pack, the long-context reference shape
/// of docs/spec.md.
constexpr int64_t kDefaultPricedTokens = 32768;

struct GdnContextParallelPass
    : public mlir::gdn::impl::GdnContextParallelBase<GdnContextParallelPass> {
  using GdnContextParallelBase::GdnContextParallelBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (mode != "headwise" && mode != "chunkwise" && mode != "auto") {
      func.emitError() << "gdn-context-parallel: mode=" << mode
                       << " does not exist; use headwise, chunkwise or auto";
      return signalPassFailure();
    }
    if (layout != "contiguous" && layout != "zigzag") {
      func.emitError() << "gdn-context-parallel: layout=" << layout
                       << " is not a token sharding; use contiguous or zigzag";
      return signalPassFailure();
    }
    if (chain != "all_gather" && chain != "scan" && chain != "auto") {
      func.emitError() << "gdn-context-parallel: chain=" << chain
                       << " is not a state chain; use all_gather, scan or "
                          "auto";
      return signalPassFailure();
    }
    // The cost model divides by the rates: zero, negative or NaN would
    // price a mode as free or make every comparison false.
    for (auto [name, value, zeroAllowed] :
         {std::make_tuple("link-gbps", linkGBps.getValue(), false),
          std::make_tuple("tflops", tflops.getValue(), false),
          std::make_tuple("collective-us", collectiveUs.getValue(), true)}) {
      if (std::isfinite(value) && (value > 0 || (zeroAllowed && value == 0)))
        continue;
      std::string shown;
      llvm::raw_string_ostream(shown) << llvm::format("%g", value);
      func.emitError() << "gdn-context-parallel: " << name << "=" << shown
                       << " must be a finite number "
                       << (zeroAllowed ? ">= 0" : "> 0")
                       << " (mode=auto prices the modes with it)";
      return signalPassFailure();
    }
    if (tokens < 0) {
      func.emitError() << "gdn-context-parallel: tokens=" << tokens.getValue()
                       << " must be >= 0 (0: the program's own token count)";
      return signalPassFailure();
    }
    if (failed(checkRanks(func, "gdn-context-parallel", ranks)))
      return signalPassFailure();
    if (ranks == 1)
      return;
    FailureOr<SmallVector<Core>> cores =
        findCores(func, "gdn-context-parallel");
    if (failed(cores))
      return signalPassFailure();
    if (!cores->empty() && failed(distributeAll(func, *cores)))
      return signalPassFailure();
  }

  Sharding getSharding() {
    MLIRContext *context = &getContext();
    Sharding sharding;
    sharding.ranks = ranks;
    sharding.group = comm::GroupAttr::get(context, comm::GroupKind::CP, ranks);
    sharding.contiguous =
        SeqLayoutAttr::get(context, SeqLayoutKind::Contiguous, ranks);
    sharding.tokenShard =
        layout == "zigzag"
            ? SeqLayoutAttr::get(context, SeqLayoutKind::Zigzag, ranks)
            : sharding.contiguous;
    sharding.chain =
        chain == "scan" ? comm::ChainKind::Scan : comm::ChainKind::AllGather;
    return sharding;
  }

  /// The shapes of `core` the cost model reads.
  static CoreShape getCoreShape(Core core) {
    auto q = core.split.getQ().getType(), v = core.split.getV().getType();
    auto elementBytes = [](Type type) {
      return static_cast<int64_t>(
          getElementTypeOrSelf(type).getIntOrFloatBitWidth() / 8);
    };
    return CoreShape{q.getDimSize(1),
                     v.getDimSize(1),
                     q.getDimSize(2),
                     v.getDimSize(2),
                     core.conv.getY().getType().getDimSize(1),
                     static_cast<int64_t>(core.conv.getWidth()),
                     elementBytes(core.conv.getX().getType()),
                     elementBytes(core.conv.getY().getType()),
                     elementBytes(core.delta.getFinalState().getType())};
  }

  Machine getMachine() const {
    return Machine{linkGBps * 1e9, tflops * 1e12, collectiveUs * 1e-6};
  }

  /// The chain of one chunkwise core: the option, or the cost model's.
  comm::ChainKind chooseChain(Core core) {
    if (chain == "auto")
      return prefersScanChain(getCoreShape(core), ranks, getMachine())
                 ? comm::ChainKind::Scan
                 : comm::ChainKind::AllGather;
    return chain == "scan" ? comm::ChainKind::Scan
                           : comm::ChainKind::AllGather;
  }

  /// The mode of one core: the option, or the cost model's choice.
  FailureOr<Mode> chooseMode(Core core) {
    auto q = core.split.getQ().getType(), v = core.split.getV().getType();
    const int64_t p = ranks;
    const bool divisible = q.getDimSize(1) % p == 0 && v.getDimSize(1) % p == 0;
    if (mode == "headwise" && !divisible)
      return core.delta.emitError()
             << "gdn-context-parallel: headwise needs the key heads ("
             << q.getDimSize(1) << ") and value heads (" << v.getDimSize(1)
             << ") divisible by ranks = " << p
             << "; use mode=chunkwise, which has no head-count constraint";
    if (mode != "auto")
      return mode == "headwise" ? Mode::Headwise : Mode::Chunkwise;

    int64_t total = core.conv.getY().getType().getDimSize(0);
    if (tokens > 0)
      total = tokens;
    else if (ShapedType::isDynamic(total))
      total = kDefaultPricedTokens;
    const bool scan = chooseChain(core) == comm::ChainKind::Scan;
    CostEstimate cost =
        estimateCost(getCoreShape(core), total, p, scan, getMachine());
    if (reportCosts)
      core.delta.emitRemark() << llvm::formatv(
          "gdn-context-parallel: T = {0}, P = {1}: headwise sends {2:f2} MB "
          "per rank ({3:f1} us){4}; chunkwise sends {5:f2} MB and computes "
          "{6:f2} GFLOP more ({7:f1} us, {9} chain); auto chooses {8}",
          total, p, cost.headwise.bytes / 1e6, cost.headwise.seconds * 1e6,
          cost.headwisePossible ? "" : " but the heads do not divide",
          cost.chunkwise.bytes / 1e6, cost.chunkwise.flops / 1e9,
          cost.chunkwise.seconds * 1e6, getModeName(cost.choice),
          scan ? "scan" : "all-gather");
    return cost.choice;
  }

  /// Checks every core, shards the function's token-indexed values (a
  /// function-wide analysis, so that stacked layers work), then rewrites
  /// each core in its mode.
  LogicalResult distributeAll(func::FuncOp func, MutableArrayRef<Core> cores) {
    const int64_t p = ranks;
    if (!func.getBody().hasOneBlock())
      return func.emitError() << "gdn-context-parallel: expects a function "
                                 "of one block";
    DenseSet<Operation *> coreOps;
    for (Core &core : cores)
      for (Operation *op : getCoreOps(core))
        coreOps.insert(op);
    SmallVector<Mode> modes;
    for (Core &core : cores) {
      // The core's inner values stop existing; its output and final states
      // are replaced by their distributed forms.
      SmallVector<Value> inner = {core.conv.getY(), core.normQ.getY(),
                                  core.normK.getY(), core.gates.getG(),
                                  core.gates.getBeta()};
      llvm::append_range(inner, core.split.getResults());
      if (Operation *user = findOutsideUser(inner, coreOps))
        return user->emitError()
               << "gdn-context-parallel: reads a value inside a GDN core, "
                  "which the pass replaces by its distributed form";
      FailureOr<Mode> chosen = chooseMode(core);
      if (failed(chosen))
        return failure();
      modes.push_back(*chosen);
    }
    SetVector<BlockArgument> tokenArguments;
    SetVector<comm::AllGatherOp> spGathers;
    for (Core &core : cores)
      if (failed(findTokenArguments(func, core, coreOps, tokenArguments,
                                    spGathers)))
        return failure();
    // Zigzag cuts every sequence into 2P pieces, so the total is a
    // multiple of 2P too; under SP each rank's shard is cut S ways more.
    int64_t multiple = layout == "zigzag" ? 2 * p : p;
    if (!spGathers.empty()) {
      const int64_t s = comm::AllGatherOp(spGathers.front()).getGroup().getRanks();
      multiple = std::lcm(multiple, s * p);
    }
    for (BlockArgument argument : tokenArguments) {
      int64_t count = cast<RankedTensorType>(argument.getType()).getDimSize(0);
      if (!ShapedType::isDynamic(count) && count % multiple != 0)
        return cores.front().delta.emitError()
               << "gdn-context-parallel: " << count << " tokens do not split "
               << "into " << layout << " shards over " << p
               << " ranks; pad the pack to a multiple of " << multiple;
    }
    // The token-indexed arguments, and everything computed from them token
    // by token outside the cores, become this rank's token shard.
    Sharding sharding = getSharding();
    SmallVector<Value> starts(tokenArguments.begin(), tokenArguments.end());
    // Under SP, the tokens a layer gathers over its SP group become this
    // rank's CP shard, and the SP shards they come from nest inside it.
    for (comm::AllGatherOp gather : spGathers) {
      starts.push_back(gather.getResult());
      if (auto argument = dyn_cast<BlockArgument>(gather.getInput()))
        argument.setType(nestedShard(argument.getType(), sharding));
    }
    if (failed(shardTokenValues(starts, coreOps, sharding)))
      return failure();
    for (auto [core, chosen] : llvm::zip(cores, modes)) {
      // The mode stays visible in the IR, on the distributed delta rule.
      core.delta->setAttr("gdn.cp_mode",
                          StringAttr::get(&getContext(), getModeName(chosen)));
      Sharding coreSharding = sharding;
      coreSharding.chain = chooseChain(core);
      LogicalResult done =
          chosen == Mode::Headwise
              ? distributeHeadwise(func, core, coreOps, coreSharding)
              : distributeChunkwise(func, core, coreOps, coreSharding);
      if (failed(done))
        return failure();
    }
    return success();
  }

  /// gdn-sequence-parallel's gather of a layer's input over the SP group.
  static bool isSequenceParallelGather(comm::AllGatherOp gather) {
    return gather.getGroup().getKind() == comm::GroupKind::SP &&
           gather.getDim() == 0 && getSequenceLayout(gather.getInput().getType());
  }

  /// A token shard over the SP group of S ranks, nested in the CP shard.
  static Type nestedShard(Type type, const Sharding &sharding) {
    auto tensor = cast<RankedTensorType>(type);
    auto sp = cast<SeqLayoutAttr>(getSequenceLayout(tensor));
    return withDim(tensor, 0, divided(tensor.getDimSize(0), sharding.ranks),
                   sharding.nestedIn(sp.getRanks()));
  }

  /// The function arguments the core's token-indexed inputs come from,
  /// through token-local ops only (the input projections, split_qkvz, the
  /// gated RMSNorm and out_proj of a layer before it) or another core.
  LogicalResult findTokenArguments(func::FuncOp func, Core &core,
                                   const DenseSet<Operation *> &coreOps,
                                   SetVector<BlockArgument> &arguments,
                                   SetVector<comm::AllGatherOp> &spGathers) {
    SmallVector<Value> worklist = {core.conv.getX(), core.gates.getA(),
                                   core.gates.getB()};
    // The gated RMSNorm that reads the core's output reads z token by token
    // with it: z is token-indexed too.
    for (Operation *user : core.delta.getO().getUsers())
      if (auto norm = dyn_cast<GatedRMSNormOp>(user))
        worklist.push_back(norm.getZ());
    while (!worklist.empty()) {
      Value value = worklist.pop_back_val();
      if (auto argument = dyn_cast<BlockArgument>(value)) {
        if (argument.getOwner() != &func.getBody().front())
          return core.delta.emitError()
                 << "gdn-context-parallel: the core's inputs must come from "
                    "the function's body block";
        if (getSequenceLayout(argument.getType()))
          return core.delta.emitError()
                 << "gdn-context-parallel: argument #"
                 << argument.getArgNumber() << " is already distributed";
        arguments.insert(argument);
        continue;
      }
      Operation *def = value.getDefiningOp();
      if (auto gather = dyn_cast_or_null<comm::AllGatherOp>(def);
          gather && isSequenceParallelGather(gather)) {
        spGathers.insert(gather);
        continue;
      }
      if (def && coreOps.contains(def) && isa<DeltaRuleOp>(def)) {
        continue; // another core's output: sharded when that core is
      } else if (auto linear = dyn_cast_or_null<LinearOp>(def)) {
        worklist.push_back(linear.getX());
      } else if (auto split = dyn_cast_or_null<SplitQkvzOp>(def)) {
        worklist.push_back(split.getQkvz());
        worklist.push_back(split.getBa());
      } else if (auto norm = dyn_cast_or_null<GatedRMSNormOp>(def)) {
        worklist.push_back(norm.getX());
        worklist.push_back(norm.getZ());
      } else {
        InFlightDiagnostic diag = core.delta.emitError()
                                  << "gdn-context-parallel: the core's token "
                                     "inputs must come from function "
                                     "arguments through gdn.linear, "
                                     "gdn.split_qkvz and gdn.gated_rmsnorm "
                                     "only";
        if (def)
          diag.attachNote(def->getLoc()) << "produced here by " << def->getName();
        return diag;
      }
    }
    return success();
  }

};

} // namespace
