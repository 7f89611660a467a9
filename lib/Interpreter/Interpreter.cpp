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

#include "gdn/Dialect/Gdn/GdnOps.h"
#include "gdn/Dialect/Gdn/SequenceLayout.h"
#include "gdn/Dialect/GdnComm/GdnCommDialect.h"

#include "mlir/IR/BuiltinTypes.h"
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
  // Programs have one group of all simulated ranks today.
  return env.getRank() % group.getRanks();
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

namespace {
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

std::string describeWaiting(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << op->getName().getStringRef() << "' at " << op->getLoc();
  if (auto group = op->getAttrOfType<comm::GroupAttr>("group"))
    os << " (group " << group << ")";
  return text;
}

/// Two ranks agree on a collective when it is the same op with the same
/// attributes (group, dims, chain) on the same types.
bool sameCollective(Operation *a, Operation *b) {
  return a->getName() == b->getName() &&
         a->getAttrDictionary() == b->getAttrDictionary() &&
         a->getPropertiesAsAttribute() == b->getPropertiesAsAttribute() &&
         a->getOperandTypes() == b->getOperandTypes() &&
         a->getResultTypes() == b->getResultTypes();
}
} // namespace

llvm::Expected<RankTensors>
mlir::gdn::interp::runOnRanks(llvm::ArrayRef<func::FuncOp> rankFunctions,
                              RankTensors inputs,
                              const InterpreterOptions &options) {
  const int64_t ranks = static_cast<int64_t>(rankFunctions.size());
  SmallVector<RankCursor> cursors(ranks);
  SmallVector<Environment> envs;
  for (int64_t rank = 0; rank < ranks; ++rank) {
    func::FuncOp function = rankFunctions[rank];
    if (function.isExternal())
      return llvm::createStringError("function @" + function.getName().str() +
                                     " has no body to run");
    Block &body = function.getBody().front();
    if (inputs[rank].size() != body.getNumArguments())
      return llvm::createStringError(
          llvm::formatv("@{0} takes {1} arguments but rank {2} was given {3}",
                        function.getName(), body.getNumArguments(), rank,
                        inputs[rank].size()));
    envs.emplace_back(rank);
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
      if (!sameCollective(ops[0], ops[rank]))
        return llvm::createStringError("collective mismatch: rank 0 waits at " +
                                       describeWaiting(ops[0]) + " but rank " +
                                       std::to_string(rank) + " waits at " +
                                       describeWaiting(ops[rank]));
    if (auto group = ops[0]->getAttrOfType<comm::GroupAttr>("group");
        group && group.getRanks() != ranks)
      return makeOpError(ops[0], 0,
                         llvm::formatv("the group has {0} ranks but the "
                                       "program runs on {1}; run with "
                                       "--ranks {0}",
                                       group.getRanks(), ranks));
    if (auto error = executeCollective(ops, envs))
      return std::move(error);
    for (int64_t rank = 0; rank < ranks; ++rank) {
      retire(rank, ops[rank]);
      ++cursors[rank].next;
    }
  }

  RankTensors outputs;
  for (RankCursor &cursor : cursors)
    outputs.push_back(std::move(cursor.results));
  return outputs;
}
