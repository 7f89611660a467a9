//===- Interpreter.cpp - the rank scheduler -------------------------------===//
//
// Runs P rank programs in lockstep without threads: each rank executes local
// ops until it reaches a collective or returns; when no rank can move, either
// all wait at matching collectives (run it), or they disagree (report which
// rank waits where), or some returned while others wait (a deadlock, also
// reported). Values are dropped after their last use so realistic sizes fit.
//
//===----------------------------------------------------------------------===//

#include "Engine.h"

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"
#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;

static std::string describeLocation(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << op->getLoc();
  return text;
}

llvm::Error mlir::gdn::interp::makeOpError(Operation *op, int64_t rank,
                                           const llvm::Twine &message) {
  return llvm::createStringError(llvm::formatv("'{0}' at {1} on rank {2}: {3}",
                                               op->getName().getStringRef(),
                                               describeLocation(op), rank,
                                               message.str())
                                     .str());
}

bool mlir::gdn::interp::isCollective(Operation *op) {
  // The gdn_comm ops that only read the rank are Pure; collectives are not.
  return isa<ConvertLayoutOp>(op) ||
         (isa<comm::GdnCommDialect>(op->getDialect()) && !isPure(op));
}

llvm::Error mlir::gdn::interp::checkAgainstType(const Tensor &tensor, Type type,
                                                const llvm::Twine &what) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked)
    return llvm::createStringError(what.str() + " is not a ranked tensor");
  auto describeType = [&] {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << type;
    return text;
  };
  bool shapeOk = ranked.getRank() == tensor.getRank();
  for (int64_t d = 0; shapeOk && d < ranked.getRank(); ++d)
    shapeOk =
        ranked.isDynamicDim(d) || ranked.getDimSize(d) == tensor.getDimSize(d);
  if (!shapeOk)
    return llvm::createStringError(what.str() + " has shape " +
                                   tensor.describe() + " but its type is " +
                                   describeType());
  auto kind = getElementKind(ranked.getElementType());
  if (!kind)
    return kind.takeError();
  if (*kind != tensor.getKind())
    return llvm::createStringError(
        what.str() + " holds " + getElementKindName(tensor.getKind()) +
        " elements but its type is " + describeType());
  return llvm::Error::success();
}

int64_t mlir::gdn::interp::getRankInGroup(const Environment &env,
                                          comm::GroupAttr group) {
  const RankGrid &grid = env.getGrid();
  if (!grid.isTwoDimensional())
    return env.getRank() % group.getRanks();
  return group.getKind() == comm::GroupKind::SP ? env.getRank() % grid.spRanks
                                                : env.getRank() / grid.spRanks;
}

/// Checks the static part of `type`'s size (dynamic sizes come from
/// inputs, checked where they are made).
static llvm::Error checkStaticSize(Type type, const llvm::Twine &what) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked)
    return llvm::Error::success();
  SmallVector<int64_t> sizes;
  for (int64_t size : ranked.getShape())
    sizes.push_back(ShapedType::isDynamic(size) ? 1 : size);
  auto count = checkElementCount(sizes, what);
  return count ? llvm::Error::success() : count.takeError();
}

llvm::Error mlir::gdn::interp::checkRunnable(func::FuncOp func) {
  if (func.isExternal())
    return llvm::createStringError("@" + func.getName().str() +
                                   " is a declaration without a body; give "
                                   "the function a body to run");
  FunctionType type = func.getFunctionType();
  for (auto [what, types] :
       {std::make_pair("argument", type.getInputs()),
        std::make_pair("result", type.getResults())}) {
    for (auto [index, valueType] : llvm::enumerate(types)) {
      std::string name = llvm::formatv("{0} #{1} of @{2}", what, index,
                                       func.getName())
                             .str();
      auto ranked = dyn_cast<RankedTensorType>(valueType);
      if (!ranked) {
        std::string typeText;
        llvm::raw_string_ostream os(typeText);
        os << valueType;
        return llvm::createStringError(
            name + " is " + typeText +
            "; gdn-run runs functions whose arguments and results are "
            "ranked tensors (return a tensor<...> instead)");
      }
      if (auto kind = getElementKind(ranked.getElementType()); !kind)
        return llvm::createStringError(
            name + ": " + llvm::toString(kind.takeError()));
      if (auto error = checkStaticSize(ranked, name))
        return error;
    }
  }
  return llvm::Error::success();
}

int64_t mlir::gdn::interp::getRequiredRanks(func::FuncOp func) {
  int64_t ranks = 1;
  for (Type type : func.getFunctionType().getInputs())
    ranks = std::max(ranks, getLayoutRanks(type));
  for (Type type : func.getFunctionType().getResults())
    ranks = std::max(ranks, getLayoutRanks(type));
  func.walk([&](Operation *op) {
    if (auto group = op->getAttrOfType<comm::GroupAttr>("group"))
      ranks = std::max(ranks, group.getRanks());
    for (Type type : op->getResultTypes())
      ranks = std::max(ranks, getLayoutRanks(type));
  });
  return ranks;
}

llvm::Expected<RankGrid> mlir::gdn::interp::findRankGrid(func::FuncOp function,
                                                         int64_t ranks) {
  RankGrid grid;
  std::string error;
  function.walk([&](Operation *op) {
    auto group = op->getAttrOfType<comm::GroupAttr>("group");
    if (!group || !error.empty())
      return;
    int64_t &size = group.getKind() == comm::GroupKind::SP ? grid.spRanks
                                                           : grid.cpRanks;
    if (size != 0 && size != group.getRanks())
      error = llvm::formatv("@{0} uses {1} groups of {2} and {3} ranks; a "
                            "program has one group size per kind",
                            function.getName(),
                            comm::stringifyGroupKind(group.getKind()), size,
                            group.getRanks())
                  .str();
    size = group.getRanks();
  });
  if (!error.empty())
    return llvm::createStringError(error);
  if (grid.isTwoDimensional() && grid.spRanks * grid.cpRanks != ranks)
    return llvm::createStringError(llvm::formatv(
        "@{0} has an SP group of {1} and a CP group of {2} ranks, which "
        "need {3} ranks, but it runs on {4}",
        function.getName(), grid.spRanks, grid.cpRanks,
        grid.spRanks * grid.cpRanks, ranks));
  return grid;
}

SmallVector<int64_t> mlir::gdn::interp::getGroupMembers(Operation *op,
                                                        const RankGrid &grid,
                                                        int64_t ranks,
                                                        int64_t rank) {
  SmallVector<int64_t> members;
  auto group = op->getAttrOfType<comm::GroupAttr>("group");
  // A layout conversion names no group: the layouts it converts between are
  // CP shards (SP moves tokens only with collectives, and the verifier
  // rejects converting a nested SP x CP shard), so in an S x P grid it runs
  // over each CP group.
  if (isa<ConvertLayoutOp>(op) && grid.isTwoDimensional())
    group = comm::GroupAttr::get(op->getContext(), comm::GroupKind::CP,
                                 grid.cpRanks);
  if (!group || !grid.isTwoDimensional()) {
    for (int64_t r = 0; r < ranks; ++r)
      members.push_back(r);
    return members;
  }
  const int64_t s = grid.spRanks;
  if (group.getKind() == comm::GroupKind::SP)
    for (int64_t i = 0; i < s; ++i)
      members.push_back(rank / s * s + i);
  else
    for (int64_t j = 0; j < grid.cpRanks; ++j)
      members.push_back(j * s + rank % s);
  return members;
}

std::string mlir::gdn::interp::describeWaiting(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << op->getName().getStringRef() << "' at " << op->getLoc();
  if (auto group = op->getAttrOfType<comm::GroupAttr>("group"))
    os << " (group " << group << ")";
  return text;
}

bool mlir::gdn::interp::isSameCollective(Operation *a, Operation *b) {
  return a->getName() == b->getName() &&
         a->getAttrDictionary() == b->getAttrDictionary() &&
         a->getPropertiesAsAttribute() == b->getPropertiesAsAttribute() &&
         a->getOperandTypes() == b->getOperandTypes() &&
         a->getResultTypes() == b->getResultTypes();
}

namespace {
/// Runs a collective instance by instance over its groups.
llvm::Error executeGrouped(ArrayRef<Operation *> ops,
                           MutableArrayRef<Environment> envs,
                           const RankGrid &grid) {
  const int64_t ranks = static_cast<int64_t>(envs.size());
  llvm::SmallDenseSet<int64_t> done;
  for (int64_t rank = 0; rank < ranks; ++rank) {
    if (done.contains(rank))
      continue;
    SmallVector<int64_t> members = getGroupMembers(ops[0], grid, ranks, rank);
    if (members.size() == static_cast<size_t>(ranks) &&
        llvm::equal(members, llvm::seq<int64_t>(0, ranks)))
      return executeCollective(ops, envs);
    // Move the members' environments into one array for the collective
    // (which indexes them by rank within the group), and back.
    SmallVector<Operation *> groupOps;
    SmallVector<Environment> groupEnvs;
    for (int64_t member : members) {
      groupOps.push_back(ops[member]);
      groupEnvs.push_back(std::move(envs[member]));
      done.insert(member);
    }
    llvm::Error error = executeCollective(groupOps, groupEnvs);
    for (auto [index, member] : llvm::enumerate(members))
      envs[member] = std::move(groupEnvs[index]);
    if (error) {
      // The collective counts ranks within its group; say which global
      // ranks the group is, so "rank 1" can be found in the grid.
      std::string globals;
      for (int64_t member : members)
        globals += (globals.empty() ? "" : ", ") + std::to_string(member);
      auto group = groupOps[0]->getAttrOfType<comm::GroupAttr>("group");
      return llvm::createStringError(llvm::formatv(
          "{0} (ranks are counted within the {1} group of global ranks {2})",
          llvm::toString(std::move(error)),
          group ? comm::stringifyGroupKind(group.getKind()) : "CP", globals));
    }
  }
  return llvm::Error::success();
}

/// A rank's position in its program.
struct RankCursor {
  func::FuncOp function;
  Block::iterator next;
  bool returned = false;
  std::vector<Tensor> results;
  /// Values to drop after each op (their last use).
  llvm::DenseMap<Operation *, SmallVector<Value>> deadAfter;
};

/// Records, for every value of `function`, the op after which it is dead.
void computeLastUses(RankCursor &cursor) {
  llvm::DenseMap<Value, Operation *> lastUse;
  Block &body = cursor.function.getBody().front();
  for (Operation &op : body)
    for (Value operand : op.getOperands())
      lastUse[operand] = &op;
  for (auto [value, op] : lastUse)
    cursor.deadAfter[op].push_back(value);
}

} // namespace

/// runOnRanks, keeping every rank's values in `*kept` when it is given (the
/// gradient driver's rules read them) instead of dropping them after their
/// last use.
static llvm::Expected<RankTensors>
runRanks(llvm::ArrayRef<func::FuncOp> rankFunctions, RankTensors inputs,
         const InterpreterOptions &options,
         SmallVectorImpl<Environment> *kept) {
  const int64_t ranks = static_cast<int64_t>(rankFunctions.size());
  SmallVector<RankCursor> cursors(ranks);
  SmallVector<Environment> envs;
  if (rankFunctions.empty())
    return llvm::createStringError("no rank to run");
  auto grid = findRankGrid(rankFunctions[0], ranks);
  if (!grid)
    return grid.takeError();
  for (int64_t rank = 0; rank < ranks; ++rank) {
    func::FuncOp function = rankFunctions[rank];
    if (auto error = checkRunnable(function))
      return std::move(error);
    Block &body = function.getBody().front();
    if (inputs[rank].size() != body.getNumArguments())
      return llvm::createStringError(
          llvm::formatv("@{0} takes {1} arguments but rank {2} was given {3}",
                        function.getName(), body.getNumArguments(), rank,
                        inputs[rank].size()));
    envs.emplace_back(rank, *grid);
    for (auto [index, argument] : llvm::enumerate(body.getArguments())) {
      if (auto error = checkAgainstType(
              inputs[rank][index], argument.getType(),
              llvm::formatv("argument #{0} of @{1} on rank {2}", index,
                            function.getName(), rank)))
        return std::move(error);
      envs[rank].bind(argument, std::move(inputs[rank][index]));
    }
    cursors[rank].function = function;
    cursors[rank].next = body.begin();
    computeLastUses(cursors[rank]);
  }

  auto retire = [&](int64_t rank, Operation *op) {
    if (kept)
      return;
    for (Value value : cursors[rank].deadAfter.lookup(op))
      envs[rank].erase(value);
  };

  while (true) {
    // Run every rank up to its next collective or its return.
    for (int64_t rank = 0; rank < ranks; ++rank) {
      RankCursor &cursor = cursors[rank];
      while (!cursor.returned) {
        Operation *op = &*cursor.next;
        if (auto ret = dyn_cast<func::ReturnOp>(op)) {
          for (auto [index, operand] : llvm::enumerate(ret.getOperands())) {
            if (auto error = checkAgainstType(
                    envs[rank].tensor(operand),
                    cursor.function.getFunctionType().getResult(index),
                    "result #" + llvm::Twine(index) + " of @" +
                        cursor.function.getName()))
              return makeOpError(op, rank, llvm::toString(std::move(error)));
            cursor.results.push_back(envs[rank].tensor(operand));
          }
          cursor.returned = true;
          break;
        }
        for (auto [index, type] : llvm::enumerate(op->getResultTypes()))
          if (auto error = checkStaticSize(
                  type, "result #" + llvm::Twine(index)))
            return makeOpError(op, rank, llvm::toString(std::move(error)));
        if (isCollective(op))
          break;
        if (auto error = executeLocalOp(op, envs[rank], options))
          return std::move(error);
        retire(rank, op);
        ++cursor.next;
      }
    }

    SmallVector<int64_t> waiting, returned;
    for (int64_t rank = 0; rank < ranks; ++rank)
      (cursors[rank].returned ? returned : waiting).push_back(rank);
    if (waiting.empty())
      break;

    if (!returned.empty()) {
      std::string message = "deadlock: ";
      llvm::raw_string_ostream os(message);
      os << "rank" << (returned.size() > 1 ? "s " : " ");
      llvm::interleaveComma(returned, os);
      os << " returned while";
      for (int64_t rank : waiting)
        os << " rank " << rank << " waits at "
           << describeWaiting(&*cursors[rank].next) << ";";
      return llvm::createStringError(message);
    }

    SmallVector<Operation *> ops;
    for (int64_t rank = 0; rank < ranks; ++rank)
      ops.push_back(&*cursors[rank].next);
    for (int64_t rank = 1; rank < ranks; ++rank)
      if (!isSameCollective(ops[0], ops[rank]))
        return llvm::createStringError("collective mismatch: rank 0 waits at " +
                                       describeWaiting(ops[0]) + " but rank " +
                                       std::to_string(rank) + " waits at " +
                                       describeWaiting(ops[rank]));
    if (auto group = ops[0]->getAttrOfType<comm::GroupAttr>("group");
        group && !grid->isTwoDimensional() && group.getRanks() != ranks)
      return makeOpError(ops[0], 0,
                         llvm::formatv("the group has {0} ranks but the "
                                       "program runs on {1}; run with "
                                       "--ranks {0}",
                                       group.getRanks(), ranks));
    if (auto error = executeGrouped(ops, envs, *grid))
      return std::move(error);
    for (int64_t rank = 0; rank < ranks; ++rank) {
      retire(rank, ops[rank]);
      ++cursors[rank].next;
    }
  }

  RankTensors outputs;
  for (RankCursor &cursor : cursors)
    outputs.push_back(std::move(cursor.results));
  if (kept)
    for (Environment &env : envs)
      kept->push_back(std::move(env));
  return outputs;
}

llvm::Expected<RankTensors>
mlir::gdn::interp::runOnRanks(llvm::ArrayRef<func::FuncOp> rankFunctions,
                              RankTensors inputs,
                              const InterpreterOptions &options) {
  return runRanks(rankFunctions, std::move(inputs), options, nullptr);
}

llvm::Expected<RankTensors> mlir::gdn::interp::runOnRanksKeepingValues(
    llvm::ArrayRef<func::FuncOp> rankFunctions, RankTensors inputs,
    const InterpreterOptions &options, SmallVectorImpl<Environment> &envs) {
  return runRanks(rankFunctions, std::move(inputs), options, &envs);
}
