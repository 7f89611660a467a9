//===- Engine.h - interpreter internals shared by its files -----*- C++ -*-===//
//
// The run-time value of an SSA value, the per-rank environment, and the entry
// points of the two kinds of op execution: local ops (one rank at a time) and
// collectives (all ranks at once).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_INTERPRETER_ENGINE_H
#define GDN_LIB_INTERPRETER_ENGINE_H

#include "gdn/Interpreter/Distribution.h"
#include "gdn/Interpreter/Interpreter.h"
#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"
#include "gdn/Interpreter/Packing.h"
#include "gdn/Interpreter/ReferenceKernels.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <variant>

namespace mlir::gdn {
class LayerOp;
} // namespace mlir::gdn

namespace mlir::gdn::interp {

/// Elements before, along and after `dim` of a shape: the view collectives
/// and their gradients cut and concatenate tensors in.
struct Extents {
  Extents(ArrayRef<int64_t> shape, unsigned dim) : along(shape[dim]) {
    for (unsigned d = 0; d < dim; ++d)
      outer *= shape[d];
    for (unsigned d = dim + 1; d < shape.size(); ++d)
      inner *= shape[d];
  }
  int64_t outer = 1, along, inner = 1;
};

/// What an SSA value holds at run time.
using RuntimeValue = std::variant<Tensor, PackingInfo, int64_t>;

/// How the simulated ranks form process groups. A program with one kind of
/// group runs it over all ranks. A program with both an SP group of S ranks
/// and a CP group of P ranks runs on S * P ranks with SP innermost (Megatron's
/// order, TP/SP inside a node): rank g is SP rank g % S of SP group g / S,
/// and CP rank g / S of CP group g % S.
struct RankGrid {
  int64_t spRanks = 0, cpRanks = 0; ///< 0: the program has no such group

  bool isTwoDimensional() const { return spRanks > 0 && cpRanks > 0; }
};

/// One rank's values.
class Environment {
public:
  Environment(int64_t rank, RankGrid grid) : rank(rank), grid(grid) {}

  int64_t getRank() const { return rank; }
  const RankGrid &getGrid() const { return grid; }
  void bind(Value value, RuntimeValue runtime) {
    values[value] = std::move(runtime);
  }
  void erase(Value value) { values.erase(value); }
  bool contains(Value value) const { return values.count(value) != 0; }
  const Tensor &tensor(Value value) const {
    return std::get<Tensor>(values.find(value)->second);
  }
  const Tensor *optionalTensor(Value value) const {
    return value ? &tensor(value) : nullptr;
  }
  const PackingInfo &packing(Value value) const {
    return std::get<PackingInfo>(values.find(value)->second);
  }
  int64_t index(Value value) const {
    return std::get<int64_t>(values.find(value)->second);
  }

private:
  int64_t rank;
  RankGrid grid;
  llvm::DenseMap<Value, RuntimeValue> values;
};

/// Builds an error "'op' at LOC on rank R: MESSAGE".
llvm::Error makeOpError(Operation *op, int64_t rank,
                        const llvm::Twine &message);

/// True for ops that need every rank at once (gdn_comm collectives and
/// gdn.convert_layout).
bool isCollective(Operation *op);

/// Executes a non-collective op on one rank, binding its results.
llvm::Error executeLocalOp(Operation *op, Environment &env,
                           const InterpreterOptions &options);

/// Executes one of the per-rank ops of chunkwise context parallelism
/// (ChunkwiseOps.cpp); std::nullopt when `op` is not one of them.
std::optional<llvm::Error> executeChunkwiseOp(Operation *op, Environment &env);

/// Executes one of the local gradient ops of a generated backward program
/// (gdn.*_grad, the inverse copies, gdn_comm's per-rank gradient ops) with
/// the reverse sweep's VJPs (Gradients/GradientOpExecution.cpp);
/// std::nullopt when `op` is not one of them.
std::optional<llvm::Error> executeGradientOp(Operation *op, Environment &env);

/// Executes one of the transposed collectives (gdn_comm.all_reduce,
/// return_halo, reverse_state_exchange, reduce_sequence_states) for all
/// ranks of a group; std::nullopt when `op` is not one of them.
std::optional<llvm::Error>
executeTransposedCollective(llvm::ArrayRef<Operation *> rankOps,
                            llvm::MutableArrayRef<Environment> envs);

/// The position of `env`'s rank within its instance of `group`.
int64_t getRankInGroup(const Environment &env, comm::GroupAttr group);

/// Executes a collective op for all ranks (envs[r] is rank r's environment),
/// checking every rank's operands and results against the op's types.
llvm::Error executeCollective(llvm::ArrayRef<Operation *> rankOps,
                              llvm::MutableArrayRef<Environment> envs);

/// Every rank's operand of a collective (`inputs[r]` is rank r's) must have
/// the same shape; an error names the first rank that differs.
llvm::Error checkSameShapeOnRanks(Operation *op,
                                  llvm::ArrayRef<const Tensor *> inputs);

/// Per-sequence states (`[N, ...]`) must have the packing's N entries.
llvm::Error checkSequenceCount(Operation *op, const Tensor &states,
                               const PackingInfo &packing);

/// The collective itself, on operands already checked against their types.
llvm::Error executeCollectiveUnchecked(llvm::ArrayRef<Operation *> rankOps,
                                       llvm::MutableArrayRef<Environment> envs);

/// The process grid of `function` run on `ranks` ranks; an error when its
/// groups do not tile them.
llvm::Expected<RankGrid> findRankGrid(func::FuncOp function, int64_t ranks);

/// The ranks that execute one instance of the collective `op` together with
/// `rank`: all of them, or (two-dimensional grids) `rank`'s SP or CP group.
SmallVector<int64_t> getGroupMembers(Operation *op, const RankGrid &grid,
                                     int64_t ranks, int64_t rank);

/// "'op' at LOC (group G)", for messages about ranks waiting at collectives.
std::string describeWaiting(Operation *op);

/// Two ranks agree on a collective when it is the same op with the same
/// attributes (group, dims, chain) on the same types.
bool isSameCollective(Operation *a, Operation *b);

/// runOnRanks, but every value each rank computed stays bound: `envs`
/// receives the ranks' environments (the gradient driver reads forward
/// values from them).
llvm::Expected<RankTensors>
runOnRanksKeepingValues(llvm::ArrayRef<func::FuncOp> rankFunctions,
                        RankTensors inputs, const InterpreterOptions &options,
                        SmallVectorImpl<Environment> &envs);

/// The global packing of `func`'s inputs, needed to cut zigzag shards:
/// std::nullopt when it takes no cu_seqlens, or when they are invalid and no
/// zigzag layout needs them (the program's gdn.packing reports them then).
llvm::Expected<std::optional<PackingInfo>>
getDistributionPacking(func::FuncOp func,
                       const std::vector<Tensor> &globalInputs);

/// This rank's shard of `packing` in the chunkwise-CP `group`, or an error
/// naming `op`.
llvm::Expected<ChunkwiseShard> shardOf(Operation *op, const Environment &env,
                                       const PackingInfo &packing,
                                       comm::GroupAttr group);

/// The operands of a delta rule (gdn.delta_rule or gdn_kernel.delta_rule)
/// as the reference kernels and their gradients take them.
template <class Op>
DeltaRuleInputs deltaRuleInputsOf(Op op, const Environment &env,
                                  double scale) {
  return {env.tensor(op.getQ()),           env.tensor(op.getK()),
          env.tensor(op.getV()),           env.tensor(op.getG()),
          env.tensor(op.getBeta()),        env.packing(op.getPacking()),
          env.optionalTensor(op.getInitialState()), scale};
}

/// Every rank runs a function of one signature; an error names the first
/// that differs.
llvm::Error checkSameSignature(ArrayRef<func::FuncOp> rankFunctions);

/// `function`'s global arguments cut into each rank's shards by their
/// layouts (an error names the argument).
llvm::Expected<RankTensors> scatterArguments(func::FuncOp function,
                                             const std::vector<Tensor> &globalInputs,
                                             int64_t ranks,
                                             const PackingInfo *packing);

/// The ranks' results of `function` put back together by their layouts
/// (an error names the result).
llvm::Expected<std::vector<Tensor>> gatherResults(func::FuncOp function,
                                                  const RankTensors &rankOutputs,
                                                  const PackingInfo *packing);

/// gdn.regroup_sections's permutation along its dimension: result index i
/// reads operand index `sources[i]`.
std::vector<int64_t> getRegroupSources(ArrayRef<int64_t> sectionSizes,
                                       int64_t groups, bool inverse);

/// The inner values of a gdn.layer as the interpreter computes it: its own
/// kernels in the order of docs/spec.md, each value stored in the
/// activations' precision (gates and states in fp32). executeLayer projects
/// `normed` by out_proj; the layer's gradient rule walks these backwards.
struct LayerValues {
  Tensor qkvz, ba; ///< the interleaved projections (qwen3_next only)
  Tensor mixed, z, b, a;
  ConvResult conv;
  SplitQkvResult qkv;
  Tensor q, k; ///< qkv.q and qkv.k, L2-normalised
  GatesResult gate;
  double scale = 0.0;
  DeltaRuleResult delta;
  Tensor normed;
  /// The layer's initial states (initial_states), or null.
  const Tensor *convInitialState = nullptr, *deltaInitialState = nullptr;

  /// The delta rule's operands (referring to this object's tensors).
  DeltaRuleInputs deltaRuleInputs(const PackingInfo &packing) const {
    return {q, k, qkv.v, gate.g, gate.beta, packing, deltaInitialState, scale};
  }
};

/// Computes the inner values of `op` (operands already checked).
LayerValues computeLayerValues(LayerOp op, const Environment &env,
                               const InterpreterOptions &options);

/// Checks a tensor against the static parts of the MLIR type it is bound to:
/// rank, static sizes and element type.
llvm::Error checkAgainstType(const Tensor &tensor, Type type,
                             const llvm::Twine &what);

} // namespace mlir::gdn::interp

#endif // GDN_LIB_INTERPRETER_ENGINE_H
