//===- LocalOps.cpp - executing gdn ops on one rank -----------------------===//
//
// Binds each op to its reference kernel. Before a kernel runs, the operands'
// run-time shapes are checked against each other and the packing (types may
// leave sizes dynamic, and a kernel given inconsistent shapes would read out
// of bounds); after it runs, results are checked against their types. Each
// failure names the op, the rank and the sizes involved.
//
//===----------------------------------------------------------------------===//

#include "Engine.h"

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/GdnComm/IR/GdnCommDialect.h"
#include "gdn/Dialect/GdnKernel/IR/GdnKernelDialect.h"
#include "gdn/Interpreter/ReferenceKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;

namespace {

/// Shape checks of one op on one rank.
class RuntimeChecker {
public:
  RuntimeChecker(Operation *op, const Environment &env) : op(op), env(env) {}

  /// `tensor`'s dimension `dim` must be `expected`.
  llvm::Error dim(const Tensor &tensor, StringRef name, unsigned dim,
                  int64_t expected, StringRef meaning) {
    if (tensor.getDimSize(dim) == expected)
      return llvm::Error::success();
    return makeOpError(op, env.getRank(),
                       llvm::formatv("{0} dimension {1} ({2}) is {3} at run "
                                     "time but must be {4}",
                                     name, dim, meaning, tensor.getDimSize(dim),
                                     expected));
  }

  /// All `tensors` cover the same tokens, and the packing's buffer if given.
  llvm::Error tokens(ArrayRef<std::pair<const Tensor *, StringRef>> tensors,
                     const PackingInfo *packing) {
    int64_t expected = packing ? packing->getBufferTokens()
                               : tensors.front().first->getDimSize(0);
    StringRef source = packing ? "the packing" : tensors.front().second;
    for (auto [tensor, name] : tensors)
      if (tensor->getDimSize(0) != expected)
        return makeOpError(op, env.getRank(),
                           llvm::formatv("{0} has {1} tokens at run time but "
                                         "{2} has {3}",
                                         name, tensor->getDimSize(0), source,
                                         expected));
    return llvm::Error::success();
  }

private:
  Operation *op;
  const Environment &env;
};

/// The element kind of result `index` of `op` (types were verified).
ElementKind resultKind(Operation *op, unsigned index) {
  return cantFail(getElementKind(
      cast<RankedTensorType>(op->getResult(index).getType()).getElementType()));
}

llvm::Error executeConstant(arith::ConstantOp op, Environment &env) {
  if (auto integer = dyn_cast<IntegerAttr>(op.getValue())) {
    env.bind(op.getResult(), integer.getInt());
    return llvm::Error::success();
  }
  // A float scalar (what tensor.splat fills a tensor with) is a rank-0
  // tensor.
  if (auto scalar = dyn_cast<FloatAttr>(op.getValue())) {
    Tensor tensor(ElementKind::F64, {});
    tensor.getData()[0] = scalar.getValueAsDouble();
    env.bind(op.getResult(), std::move(tensor));
    return llvm::Error::success();
  }
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!dense)
    return makeOpError(op, env.getRank(),
                       "only dense tensor and integer constants are supported");
  auto type = cast<RankedTensorType>(dense.getType());
  auto kind = getElementKind(type.getElementType());
  if (!kind)
    return kind.takeError();
  Tensor tensor(*kind, std::vector<int64_t>(type.getShape()));
  if (isa<FloatType>(type.getElementType())) {
    int64_t i = 0;
    for (APFloat value : dense.getValues<APFloat>())
      tensor.getData()[i++] = value.convertToDouble();
  } else {
    int64_t i = 0;
    for (APInt value : dense.getValues<APInt>())
      tensor.getData()[i++] = static_cast<double>(value.getSExtValue());
  }
  env.bind(op.getResult(), std::move(tensor));
  return llvm::Error::success();
}

llvm::Error executePacking(PackingOp op, Environment &env) {
  PackingType type = op.getPacking().getType();
  std::optional<std::vector<int64_t>> padded;
  if (op.getCuPadded()) {
    auto values = env.tensor(op.getCuPadded()).toIntegers("cu_padded");
    if (!values)
      return makeOpError(op, env.getRank(),
                         llvm::toString(values.takeError()));
    padded = std::move(*values);
  }
  auto offsets = env.tensor(op.getCuSeqlens()).toIntegers("cu_seqlens");
  if (!offsets)
    return makeOpError(op, env.getRank(), llvm::toString(offsets.takeError()));
  auto info = PackingInfo::create(std::move(*offsets), padded,
                                  type.hasStaticTokens() ? type.getTokens()
                                                         : -1);
  if (!info)
    return makeOpError(op, env.getRank(), llvm::toString(info.takeError()));
  if (type.hasStaticSeqs() && info->getNumSeqs() != type.getSeqs())
    return makeOpError(op, env.getRank(),
                       llvm::formatv("cu_seqlens describes {0} sequences but "
                                     "the packing type has seqs = {1}",
                                     info->getNumSeqs(), type.getSeqs()));
  if (type.hasMaxLen())
    for (int64_t seq = 0; seq < info->getNumSeqs(); ++seq)
      if (info->getLength(seq) > type.getMaxLen())
        return makeOpError(op, env.getRank(),
                           llvm::formatv("sequence {0} has length {1}, above "
                                         "max_len = {2}",
                                         seq, info->getLength(seq),
                                         type.getMaxLen()));
  env.bind(op.getPacking(), std::move(*info));
  return llvm::Error::success();
}

llvm::Error executeConv(CausalConv1dOp op, Environment &env) {
  RuntimeChecker check(op, env);
  const Tensor &x = env.tensor(op.getX()), &weight = env.tensor(op.getWeight());
  const PackingInfo &packing = env.packing(op.getPacking());
  const Tensor *bias = env.optionalTensor(op.getBias());
  const Tensor *initial = env.optionalTensor(op.getInitialState());
  const int64_t channels = x.getDimSize(1);
  if (auto error = check.tokens({{&x, "x"}}, &packing))
    return error;
  const int64_t width = op.getWidth();
  if (auto error = check.dim(weight, "weight", 0, channels, "channels"))
    return error;
  if (auto error = check.dim(weight, "weight", 1, width, "width"))
    return error;
  if (bias)
    if (auto error = check.dim(*bias, "bias", 0, channels, "channels"))
      return error;
  if (initial) {
    if (auto error = check.dim(*initial, "initial_state", 0,
                               packing.getNumSeqs(), "sequences"))
      return error;
    if (auto error =
            check.dim(*initial, "initial_state", 1, channels, "channels"))
      return error;
    if (auto error =
            check.dim(*initial, "initial_state", 2, width - 1, "width - 1"))
      return error;
  }
  bool wantState = static_cast<bool>(op.getFinalState());
  ConvResult result =
      causalConv1d(x, weight, bias, packing, initial,
                   op.getActivation() == Activation::Silu, resultKind(op, 0),
                   wantState, wantState ? resultKind(op, 1) : ElementKind::F32);
  env.bind(op.getY(), std::move(result.y));
  if (wantState)
    env.bind(op.getFinalState(), std::move(result.finalState));
  return llvm::Error::success();
}

llvm::Error executeGates(GatesOp op, Environment &env) {
  RuntimeChecker check(op, env);
  const Tensor &a = env.tensor(op.getA()), &b = env.tensor(op.getB());
  const Tensor &aLog = env.tensor(op.getALog());
  const Tensor &dtBias = env.tensor(op.getDtBias());
  const int64_t heads = a.getDimSize(1);
  if (auto error = check.tokens({{&a, "a"}, {&b, "b"}}, nullptr))
    return error;
  for (auto [tensor, name, dim] :
       {std::tuple<const Tensor *, StringRef, unsigned>{&b, "b", 1},
        {&aLog, "a_log", 0},
        {&dtBias, "dt_bias", 0}})
    if (auto error = check.dim(*tensor, name, dim, heads, "value heads"))
      return error;
  GatesResult result =
      gates(a, b, aLog, dtBias, op.getAllowNegEigval(), resultKind(op, 0));
  env.bind(op.getG(), std::move(result.g));
  env.bind(op.getBeta(), std::move(result.beta));
  return llvm::Error::success();
}

/// Shape checks of the delta rule's operands.
llvm::Error checkDeltaRule(Operation *op, const Environment &env,
                           const DeltaRuleInputs &in) {
  RuntimeChecker check(op, env);
  if (auto error = check.tokens({{&in.q, "q"},
                                 {&in.k, "k"},
                                 {&in.v, "v"},
                                 {&in.g, "g"},
                                 {&in.beta, "beta"}},
                                &in.packing))
    return error;
  const int64_t keyHeads = in.q.getDimSize(1), headDimK = in.q.getDimSize(2);
  const int64_t valueHeads = in.v.getDimSize(1), headDimV = in.v.getDimSize(2);
  if (keyHeads == 0 || valueHeads % keyHeads != 0)
    return makeOpError(op, env.getRank(),
                       llvm::formatv("value heads ({0}) must be a multiple of "
                                     "key heads ({1})",
                                     valueHeads, keyHeads));
  for (auto [name, dim, expected] :
       {std::tuple<StringRef, unsigned, int64_t>{"k", 1, keyHeads},
        {"k", 2, headDimK}})
    if (auto error = check.dim(in.k, name, dim, expected, "like q"))
      return error;
  if (auto error = check.dim(in.g, "g", 1, valueHeads, "value heads"))
    return error;
  if (auto error = check.dim(in.beta, "beta", 1, valueHeads, "value heads"))
    return error;
  if (in.initialState) {
    const int64_t expected[] = {in.packing.getNumSeqs(), valueHeads, headDimK,
                                headDimV};
    for (unsigned dim = 0; dim < 4; ++dim)
      if (auto error = check.dim(*in.initialState, "initial_state", dim,
                                 expected[dim], "[N, HV, K, V]"))
        return error;
  }
  return llvm::Error::success();
}

/// The gated delta rule of `op` (gdn.delta_rule or gdn_kernel.delta_rule):
/// binds the output, and the final state when `finalState` is given.
template <class Op>
llvm::Error runDeltaRule(Op op, Environment &env,
                         const InterpreterOptions &options, double scale,
                         int64_t chunkSize, Value finalState) {
  DeltaRuleInputs inputs = deltaRuleInputsOf(op, env, scale);
  if (auto error = checkDeltaRule(op, env, inputs))
    return error;
  const ElementKind stateKind =
      finalState ? resultKind(op, 1) : ElementKind::F32;
  DeltaRuleResult result =
      options.deltaRule == DeltaRuleAlgorithm::Chunked
          ? deltaRuleChunked(inputs, chunkSize, resultKind(op, 0), stateKind)
          : deltaRuleRecurrent(inputs, resultKind(op, 0), stateKind);
  env.bind(op.getO(), std::move(result.o));
  if (finalState)
    env.bind(finalState, std::move(result.finalState));
  return llvm::Error::success();
}

llvm::Error executeGatedRMSNorm(GatedRMSNormOp op, Environment &env) {
  RuntimeChecker check(op, env);
  const Tensor &x = env.tensor(op.getX()), &z = env.tensor(op.getZ());
  const Tensor &weight = env.tensor(op.getWeight());
  if (auto error = check.tokens({{&x, "x"}, {&z, "z"}}, nullptr))
    return error;
  for (unsigned dim = 1; dim < 3; ++dim)
    if (auto error = check.dim(z, "z", dim, x.getDimSize(dim), "like x"))
      return error;
  if (auto error = check.dim(weight, "weight", 0, x.getDimSize(2), "V"))
    return error;
  env.bind(op.getY(), gatedRMSNorm(x, z, weight, op.getEps().convertToDouble(),
                                   resultKind(op, 0)));
  return llvm::Error::success();
}

llvm::Error executeLinear(LinearOp op, Environment &env) {
  RuntimeChecker check(op, env);
  const Tensor &x = env.tensor(op.getX()), &weight = env.tensor(op.getWeight());
  int64_t in = 1;
  for (int64_t size : x.getShape().drop_front())
    in *= size;
  if (auto error = check.dim(weight, "weight", 1, in, "In = features of x"))
    return error;
  auto type = op.getY().getType();
  std::vector<int64_t> shape{x.getDimSize(0)};
  int64_t out = 1;
  for (int64_t size : type.getShape().drop_front()) {
    if (ShapedType::isDynamic(size))
      return makeOpError(op, env.getRank(),
                         "y must have static feature dimensions to be "
                         "interpreted");
    shape.push_back(size);
    out *= size;
  }
  if (auto error = check.dim(weight, "weight", 0, out, "Out = features of y"))
    return error;
  env.bind(op.getY(), linear(x, weight, shape, resultKind(op, 0)));
  return llvm::Error::success();
}

llvm::Error executeSplitQkvz(SplitQkvzOp op, Environment &env) {
  RuntimeChecker check(op, env);
  const Tensor &qkvz = env.tensor(op.getQkvz()), &ba = env.tensor(op.getBa());
  auto zType = op.getZ().getType();
  const int64_t keyHeads = op.getKeyHeads(), headDimK = op.getHeadDimK();
  const int64_t valueHeads = zType.getDimSize(1),
                headDimV = zType.getDimSize(2);
  if (auto error = check.tokens({{&qkvz, "qkvz"}, {&ba, "ba"}}, nullptr))
    return error;
  if (auto error = check.dim(
          qkvz, "qkvz", 1, 2 * keyHeads * headDimK + 2 * valueHeads * headDimV,
          "2HK + 2HV*V"))
    return error;
  if (auto error = check.dim(ba, "ba", 1, 2 * valueHeads, "2HV"))
    return error;
  SplitQkvzResult result =
      splitQkvz(qkvz, ba, keyHeads, headDimK, valueHeads, headDimV);
  env.bind(op.getMixedQkv(), std::move(result.mixedQkv));
  env.bind(op.getZ(), std::move(result.z));
  env.bind(op.getB(), std::move(result.b));
  env.bind(op.getA(), std::move(result.a));
  return llvm::Error::success();
}

llvm::Error executeSplitQkv(SplitQkvOp op, Environment &env) {
  RuntimeChecker check(op, env);
  const Tensor &mixed = env.tensor(op.getMixedQkv());
  auto qType = op.getQ().getType(), vType = op.getV().getType();
  const int64_t keyHeads = qType.getDimSize(1), headDimK = qType.getDimSize(2);
  const int64_t valueHeads = vType.getDimSize(1),
                headDimV = vType.getDimSize(2);
  if (auto error = check.dim(mixed, "mixed_qkv", 1,
                             2 * keyHeads * headDimK + valueHeads * headDimV,
                             "2HK + HV*V"))
    return error;
  SplitQkvResult result =
      splitQkv(mixed, keyHeads, headDimK, valueHeads, headDimV);
  env.bind(op.getQ(), std::move(result.q));
  env.bind(op.getK(), std::move(result.k));
  env.bind(op.getV(), std::move(result.v));
  return llvm::Error::success();
}

/// arith.addf on tensors of one shape (cotangents of a value with several
/// uses add up), rounded to the result's element type.
llvm::Error executeAddF(arith::AddFOp op, Environment &env) {
  const Tensor &lhs = env.tensor(op.getLhs()), &rhs = env.tensor(op.getRhs());
  if (lhs.getShape() != rhs.getShape())
    return makeOpError(op, env.getRank(),
                       "adds " + lhs.describe() + " and " + rhs.describe() +
                           "; the shapes must be equal at run time");
  Tensor sum(resultKind(op, 0), std::vector<int64_t>(lhs.getShape()));
  for (int64_t i = 0; i < sum.getNumElements(); ++i)
    sum.getData()[i] = lhs.getData()[i] + rhs.getData()[i];
  sum.roundToStorage();
  env.bind(op.getResult(), std::move(sum));
  return llvm::Error::success();
}

/// tensor.splat: the scalar in every element, dynamic sizes from operands.
llvm::Error executeSplat(tensor::SplatOp op, Environment &env) {
  auto type = op.getType();
  std::vector<int64_t> shape;
  unsigned dynamicIndex = 0;
  for (int64_t size : type.getShape())
    shape.push_back(ShapedType::isDynamic(size)
                        ? env.index(op.getDynamicSizes()[dynamicIndex++])
                        : size);
  Tensor tensor(resultKind(op, 0), shape);
  std::fill(tensor.values().begin(), tensor.values().end(),
            env.tensor(op.getInput()).getData()[0]);
  tensor.roundToStorage();
  env.bind(op.getResult(), std::move(tensor));
  return llvm::Error::success();
}

/// Visits every element of a slice of a tensor of `shape`: `visit` gets
/// the slice element's index (row-major over `sizes`) and the tensor
/// element's. Offsets and sizes static or index values of `env`; unit
/// strides only; false when the slice is not inside `shape`.
bool forEachSliceElement(OffsetSizeAndStrideOpInterface slice,
                         ArrayRef<int64_t> shape, const Environment &env,
                         llvm::function_ref<void(int64_t, int64_t)> visit) {
  auto resolve = [&](ArrayRef<OpFoldResult> mixed) {
    std::vector<int64_t> values;
    for (OpFoldResult value : mixed)
      values.push_back(isa<Attribute>(value)
                           ? cast<IntegerAttr>(cast<Attribute>(value)).getInt()
                           : env.index(cast<Value>(value)));
    return values;
  };
  const std::vector<int64_t> offsets = resolve(slice.getMixedOffsets()),
                             sizes = resolve(slice.getMixedSizes());
  ArrayRef<int64_t> strides = slice.getStaticStrides();
  const size_t rank = shape.size();
  if (offsets.size() != rank || sizes.size() != rank)
    return false;
  for (size_t d = 0; d < rank; ++d)
    if (strides[d] != 1 || offsets[d] < 0 || sizes[d] < 0 ||
        offsets[d] + sizes[d] > shape[d])
      return false;
  int64_t count = 1;
  for (int64_t size : sizes)
    count *= size;
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t linear = 0;
    for (size_t d = 0; d < rank; ++d)
      linear = linear * shape[d] + offsets[d] + index[d];
    visit(i, linear);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < sizes[d])
        break;
      index[d] = 0;
    }
  }
  return true;
}

/// tensor.extract_slice with static sizes and unit strides (the result may
/// drop unit dimensions).
llvm::Error executeExtractSlice(tensor::ExtractSliceOp op, Environment &env) {
  const Tensor &source = env.tensor(op.getSource());
  auto type = op.getType();
  if (!type.hasStaticShape())
    return makeOpError(op, env.getRank(),
                       "the interpreter takes slices of static sizes only");
  Tensor result(resultKind(op, 0), std::vector<int64_t>(type.getShape().begin(),
                                                        type.getShape().end()));
  if (!forEachSliceElement(op, source.getShape(), env,
                           [&](int64_t i, int64_t from) {
                             result.getData()[i] = source.getData()[from];
                           }))
    return makeOpError(op, env.getRank(),
                       "the interpreter takes slices with unit strides "
                       "inside " +
                           source.describe());
  env.bind(op.getResult(), std::move(result));
  return llvm::Error::success();
}

/// tensor.insert_slice with unit strides; dynamic offsets and sizes are
/// index values.
llvm::Error executeInsertSlice(tensor::InsertSliceOp op, Environment &env) {
  const Tensor &source = env.tensor(op.getSource());
  Tensor result = env.tensor(op.getDest());
  int64_t sliceElements = 1;
  bool staticSizes = true;
  for (int64_t size : op.getStaticSizes()) {
    staticSizes &= !ShapedType::isDynamic(size);
    sliceElements *= staticSizes ? size : 1;
  }
  if (staticSizes && source.getNumElements() != sliceElements)
    return makeOpError(op, env.getRank(),
                       "the inserted " + source.describe() +
                           " does not fill the slice's " +
                           std::to_string(sliceElements) + " elements");
  // Dynamic sizes are checked as the slice is walked.
  int64_t visited = 0;
  if (!forEachSliceElement(op, result.getShape(), env,
                           [&](int64_t i, int64_t to) {
                             if (i < source.getNumElements())
                               result.getData()[to] = source.getData()[i];
                             ++visited;
                           }))
    return makeOpError(op, env.getRank(),
                       "the interpreter inserts slices with unit strides "
                       "inside " +
                           result.describe());
  if (visited != source.getNumElements())
    return makeOpError(op, env.getRank(),
                       "the inserted " + source.describe() +
                           " does not fill the slice's " +
                           std::to_string(visited) + " elements");
  env.bind(op.getResult(), std::move(result));
  return llvm::Error::success();
}

/// tensor.collapse_shape / tensor.expand_shape: the same row-major data with
/// a new shape (dynamic result sizes follow from the operand's).
llvm::Error executeReshape(Operation *op, Environment &env) {
  const Tensor &input = env.tensor(op->getOperand(0));
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  int64_t known = 1, dynamicDims = 0;
  for (int64_t size : shape)
    ShapedType::isDynamic(size) ? ++dynamicDims : known *= size;
  if (dynamicDims > 1)
    return makeOpError(
        op, env.getRank(),
        "the interpreter can infer only one dynamic result size");
  for (int64_t &size : shape)
    if (ShapedType::isDynamic(size))
      size = known ? input.getNumElements() / known : 0;
  Tensor result(input.getKind(), shape);
  if (result.getNumElements() != input.getNumElements())
    return makeOpError(op, env.getRank(),
                       "the reshape changes the number of elements");
  result.values() = input.values();
  env.bind(op->getResult(0), std::move(result));
  return llvm::Error::success();
}

/// Copies `input` with dimension `dim` reindexed: result index i along `dim`
/// takes input index source(i).
Tensor permuteAlong(const Tensor &input, unsigned dim,
                    llvm::function_ref<int64_t(int64_t)> source,
                    int64_t resultExtent) {
  std::vector<int64_t> shape(input.getShape().begin(), input.getShape().end());
  const int64_t extent = shape[dim];
  shape[dim] = resultExtent;
  int64_t outer = 1, inner = 1;
  for (unsigned d = 0; d < dim; ++d)
    outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d)
    inner *= shape[d];
  Tensor result(input.getKind(), shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < resultExtent; ++i)
      std::copy_n(input.getData() + (o * extent + source(i)) * inner, inner,
                  result.getData() + (o * resultExtent + i) * inner);
  return result;
}

} // namespace

std::vector<int64_t>
mlir::gdn::interp::getRegroupSources(ArrayRef<int64_t> sections, int64_t groups,
                                     bool inverse) {
  // regrouped[i] = original[index[i]].
  std::vector<int64_t> index;
  for (int64_t g = 0; g < groups; ++g) {
    int64_t start = 0;
    for (int64_t size : sections) {
      const int64_t part = size / groups;
      for (int64_t j = 0; j < part; ++j)
        index.push_back(start + g * part + j);
      start += size;
    }
  }
  if (!inverse)
    return index;
  std::vector<int64_t> source(index.size());
  for (size_t i = 0; i < index.size(); ++i)
    source[index[i]] = static_cast<int64_t>(i);
  return source;
}

namespace {

/// gdn.regroup_sections: part g of every section, for g = 0 .. groups-1.
llvm::Error executeRegroupSections(RegroupSectionsOp op, Environment &env) {
  const Tensor &x = env.tensor(op.getX());
  const unsigned dim = op.getDim();
  ArrayRef<int64_t> sections = op.getSectionSizes();
  const int64_t groups = op.getGroups();
  int64_t total = 0;
  for (int64_t size : sections)
    total += size;
  if (x.getDimSize(dim) != total)
    return makeOpError(op, env.getRank(),
                       "dimension " + std::to_string(dim) + " has " +
                           std::to_string(x.getDimSize(dim)) +
                           " elements, but the sections cover " +
                           std::to_string(total));
  std::vector<int64_t> source =
      getRegroupSources(sections, groups, op.getInverse());
  env.bind(op.getY(), permuteAlong(
                          x, dim, [&](int64_t i) { return source[i]; }, total));
  return llvm::Error::success();
}

/// gdn_comm.local_shard: block `rank` of `ranks` along `dim`.
llvm::Error executeLocalShard(comm::LocalShardOp op, Environment &env) {
  const Tensor &input = env.tensor(op.getInput());
  const unsigned dim = op.getDim();
  const int64_t ranks = op.getGroup().getRanks();
  if (input.getDimSize(dim) % ranks != 0)
    return makeOpError(op, env.getRank(),
                       "dimension " + std::to_string(dim) + " (" +
                           std::to_string(input.getDimSize(dim)) +
                           ") is not divisible by the group's " +
                           std::to_string(ranks) + " ranks");
  const int64_t block = input.getDimSize(dim) / ranks;
  const int64_t first = getRankInGroup(env, op.getGroup()) * block;
  env.bind(op.getResult(),
           permuteAlong(
               input, dim, [&](int64_t i) { return first + i; }, block));
  return llvm::Error::success();
}

/// gdn.layer, composed from the kernels directly (not through the expansion
/// pass), so that comparing a layer with its expansion checks the pass.
llvm::Error executeLayer(LayerOp op, Environment &env,
                         const InterpreterOptions &options) {
  const Tensor &x = env.tensor(op.getX());
  RuntimeChecker check(op, env);
  if (auto error = check.tokens({{&x, "x"}}, &env.packing(op.getPacking())))
    return error;
  for (auto [state, name] :
       {std::pair{op.getConvInitialState(), "conv initial state"},
        std::pair{op.getDeltaInitialState(), "initial state"}})
    if (state)
      if (auto error = check.dim(env.tensor(state), name, 0,
                                 env.packing(op.getPacking()).getNumSeqs(),
                                 "sequences"))
        return error;
  LayerValues values = computeLayerValues(op, env, options);
  const Tensor &outProj = env.tensor(op.getWeightsByRole().outProj);
  env.bind(op.getY(),
           linear(values.normed, outProj, {x.getDimSize(0), x.getDimSize(1)},
                  resultKind(op, 0)));
  if (op.getConvFinalState()) {
    env.bind(op.getConvFinalState(), std::move(values.conv.finalState));
    env.bind(op.getDeltaFinalState(), std::move(values.delta.finalState));
  }
  return llvm::Error::success();
}

/// gdn_kernel.prologue: the conv, split, L2 norms and gates it fuses, with
/// the conv output kept in float64 (the fused kernel never stores it), so
/// comparing a fused program with its source checks gdn-fuse.
llvm::Error executePrologue(kernel::PrologueOp op, Environment &env) {
  RuntimeChecker check(op, env);
  const Tensor &mixed = env.tensor(op.getMixedQkv());
  const PackingInfo &packing = env.packing(op.getPacking());
  const Tensor &a = env.tensor(op.getA()), &b = env.tensor(op.getB());
  if (auto error =
          check.tokens({{&mixed, "mixed_qkv"}, {&a, "a"}, {&b, "b"}}, &packing))
    return error;
  const Tensor *initial = env.optionalTensor(op.getConvInitialState());
  if (initial)
    if (auto error = check.dim(*initial, "conv_initial_state", 0,
                               packing.getNumSeqs(), "sequences"))
      return error;
  const bool wantState = static_cast<bool>(op.getConvFinalState());
  ConvResult conv =
      causalConv1d(mixed, env.tensor(op.getConvWeight()),
                   env.optionalTensor(op.getConvBias()), packing, initial,
                   op.getActivation() == Activation::Silu, ElementKind::F64,
                   wantState, wantState ? resultKind(op, 5) : ElementKind::F32);
  SplitQkvResult split = splitQkv(conv.y, op.getKeyHeads(), op.getHeadDimK(),
                                  op.getValueHeads(), op.getHeadDimV());
  const double eps = op.getL2normEps().convertToDouble();
  Tensor q = l2norm(split.q, eps), k = l2norm(split.k, eps);
  auto store = [&](Tensor tensor, ElementKind kind) {
    Tensor stored(kind, std::vector<int64_t>(tensor.getShape()));
    stored.values() = std::move(tensor.values());
    stored.roundToStorage();
    return stored;
  };
  GatesResult gate =
      gates(a, b, env.tensor(op.getALog()), env.tensor(op.getDtBias()),
            op.getAllowNegEigval(), resultKind(op, 3));
  env.bind(op.getQ(), store(std::move(q), resultKind(op, 0)));
  env.bind(op.getK(), store(std::move(k), resultKind(op, 1)));
  env.bind(op.getV(), store(std::move(split.v), resultKind(op, 2)));
  env.bind(op.getG(), std::move(gate.g));
  env.bind(op.getBeta(), std::move(gate.beta));
  if (wantState)
    env.bind(op.getConvFinalState(), std::move(conv.finalState));
  return llvm::Error::success();
}

} // namespace

LayerValues
mlir::gdn::interp::computeLayerValues(LayerOp op, const Environment &env,
                                      const InterpreterOptions &options) {
  const Tensor &x = env.tensor(op.getX());
  const PackingInfo &packing = env.packing(op.getPacking());
  LayerOp::Weights w = op.getWeightsByRole();
  const int64_t tokens = x.getDimSize(0);
  const int64_t keyHeads = op.getKeyHeads(), valueHeads = op.getValueHeads();
  const int64_t headDimK = op.getHeadDimK(), headDimV = op.getHeadDimV();
  const int64_t channels = op.getConvChannels();
  const ElementKind act = x.getKind();
  const ElementKind state =
      act == ElementKind::F64 ? ElementKind::F64 : ElementKind::F32;

  LayerValues v;
  if (op.getProjections() == Projections::Qwen3Next) {
    v.qkvz = linear(
        x, env.tensor(w.inProjQkvz),
        {tokens, 2 * keyHeads * headDimK + 2 * valueHeads * headDimV}, act);
    v.ba = linear(x, env.tensor(w.inProjBa), {tokens, 2 * valueHeads}, act);
    SplitQkvzResult split =
        splitQkvz(v.qkvz, v.ba, keyHeads, headDimK, valueHeads, headDimV);
    v.mixed = std::move(split.mixedQkv);
    v.z = std::move(split.z);
    v.b = std::move(split.b);
    v.a = std::move(split.a);
  } else {
    v.mixed = linear(x, env.tensor(w.inProjQkv), {tokens, channels}, act);
    v.z = linear(x, env.tensor(w.inProjZ), {tokens, valueHeads, headDimV}, act);
    v.b = linear(x, env.tensor(w.inProjB), {tokens, valueHeads}, act);
    v.a = linear(x, env.tensor(w.inProjA), {tokens, valueHeads}, act);
  }
  v.convInitialState = env.optionalTensor(op.getConvInitialState());
  v.deltaInitialState = env.optionalTensor(op.getDeltaInitialState());
  // The conv's final state is stored in the type the layer gives it.
  const bool wantStates = static_cast<bool>(op.getConvFinalState());
  v.conv = causalConv1d(
      v.mixed, env.tensor(w.conv), nullptr, packing, v.convInitialState,
      /*silu=*/true, act, wantStates,
      wantStates ? resultKind(op, 1) : state);
  v.qkv = splitQkv(v.conv.y, keyHeads, headDimK, valueHeads, headDimV);
  v.q = l2norm(v.qkv.q, 1e-6);
  v.k = l2norm(v.qkv.k, 1e-6);
  v.gate = gates(v.a, v.b, env.tensor(w.aLog), env.tensor(w.dtBias),
                 op.getAllowNegEigval(), state);
  v.scale = op.getScaleAttr() ? op.getScaleAttr().getValueAsDouble()
                              : getDefaultDeltaRuleScale(headDimK);
  DeltaRuleInputs inputs = v.deltaRuleInputs(packing);
  v.delta = options.deltaRule == DeltaRuleAlgorithm::Chunked
                ? deltaRuleChunked(inputs, op.getChunkSize(), act, state)
                : deltaRuleRecurrent(inputs, act, state);
  v.normed = gatedRMSNorm(v.delta.o, v.z, env.tensor(w.norm),
                          op.getNormEps().convertToDouble(), act);
  return v;
}

llvm::Error
mlir::gdn::interp::executeLocalOp(Operation *op, Environment &env,
                                  const InterpreterOptions &options) {
  for (auto [index, operand] : llvm::enumerate(op->getOperands()))
    if (isa<RankedTensorType>(operand.getType()))
      if (auto error = checkAgainstType(env.tensor(operand), operand.getType(),
                                        "operand #" + llvm::Twine(index)))
        return makeOpError(op, env.getRank(), llvm::toString(std::move(error)));

  llvm::Error error = llvm::Error::success();
  if (auto constant = dyn_cast<arith::ConstantOp>(op))
    error = executeConstant(constant, env);
  else if (auto packing = dyn_cast<PackingOp>(op))
    error = executePacking(packing, env);
  else if (auto conv = dyn_cast<CausalConv1dOp>(op))
    error = executeConv(conv, env);
  else if (auto norm = dyn_cast<L2NormOp>(op))
    env.bind(norm.getY(),
             l2norm(env.tensor(norm.getX()), norm.getEps().convertToDouble()));
  else if (auto gatesOp = dyn_cast<GatesOp>(op))
    error = executeGates(gatesOp, env);
  else if (auto delta = dyn_cast<DeltaRuleOp>(op))
    error = runDeltaRule(delta, env, options, delta.getEffectiveScale(),
                         delta.getChunkSize(), delta.getFinalState());
  else if (auto rmsNorm = dyn_cast<GatedRMSNormOp>(op))
    error = executeGatedRMSNorm(rmsNorm, env);
  else if (auto linearOp = dyn_cast<LinearOp>(op))
    error = executeLinear(linearOp, env);
  else if (auto split = dyn_cast<SplitQkvzOp>(op))
    error = executeSplitQkvz(split, env);
  else if (auto split = dyn_cast<SplitQkvOp>(op))
    error = executeSplitQkv(split, env);
  else if (auto layer = dyn_cast<LayerOp>(op))
    error = executeLayer(layer, env, options);
  else if (auto prologue = dyn_cast<kernel::PrologueOp>(op))
    error = executePrologue(prologue, env);
  else if (auto rule = dyn_cast<kernel::DeltaRuleOp>(op))
    // The kernel's chunks are 64 tokens; the final state only when it
    // returns one.
    error = runDeltaRule(rule, env, options, rule.getScale().convertToDouble(),
                         64, rule.getFinalState());
  else if (auto norm = dyn_cast<kernel::GatedRMSNormOp>(op))
    env.bind(norm.getY(),
             gatedRMSNorm(env.tensor(norm.getX()), env.tensor(norm.getZ()),
                          env.tensor(norm.getWeight()),
                          norm.getEps().convertToDouble(), resultKind(op, 0)));
  else if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op))
    error = executeReshape(op, env);
  else if (auto regroup = dyn_cast<RegroupSectionsOp>(op))
    error = executeRegroupSections(regroup, env);
  else if (auto shard = dyn_cast<comm::LocalShardOp>(op))
    error = executeLocalShard(shard, env);
  else if (auto rank = dyn_cast<comm::RankOp>(op))
    env.bind(rank.getRank(), getRankInGroup(env, rank.getGroup()));
  else if (std::optional<llvm::Error> chunkwise = executeChunkwiseOp(op, env))
    error = std::move(*chunkwise);
  else if (std::optional<llvm::Error> gradient = executeGradientOp(op, env))
    error = std::move(*gradient);
  else if (auto add = dyn_cast<arith::AddFOp>(op))
    error = executeAddF(add, env);
  else if (auto splat = dyn_cast<tensor::SplatOp>(op))
    error = executeSplat(splat, env);
  else if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op))
    error = executeExtractSlice(slice, env);
  else if (auto slice = dyn_cast<tensor::InsertSliceOp>(op))
    error = executeInsertSlice(slice, env);
  else if (auto dim = dyn_cast<tensor::DimOp>(op))
    env.bind(dim.getResult(),
             env.tensor(dim.getSource())
                 .getDimSize(static_cast<unsigned>(env.index(dim.getIndex()))));
  else
    return makeOpError(op, env.getRank(),
                       "the reference interpreter does not support this op");
  if (error)
    return error;

  for (auto [index, result] : llvm::enumerate(op->getResults()))
    if (isa<RankedTensorType>(result.getType()))
      if (auto mismatch = checkAgainstType(env.tensor(result), result.getType(),
                                           "result #" + llvm::Twine(index)))
        return makeOpError(op, env.getRank(),
                           llvm::toString(std::move(mismatch)));
  return llvm::Error::success();
}
