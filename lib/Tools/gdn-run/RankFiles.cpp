//===- RankFiles.cpp - what each rank took and returned, as files ---------===//
//
// --rank-files writes each rank's own values (float64 stored as float32)
// and, for a value with a layout, where its rows or heads sit in the global
// tensor, so the GPU harness can run the same program rank by rank and be
// checked against it (docs/interpreter.md).
//
//===----------------------------------------------------------------------===//

#include "GdnRun.h"

#include "gdn/Dialect/Gdn/IR/SequenceLayout.h"
#include "gdn/Interpreter/Distribution.h"
#include "gdn/Interpreter/Gradients.h"
#include "gdn/Interpreter/Npy.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;
using namespace mlir::gdn::run;
using llvm::StringRef;
using llvm::Twine;

namespace {
/// Writes `prefix`N.rows.npy (or .heads.npy) in `directory`: where rank
/// `rank`'s share of a value of `localType` and global `globalShape` sits.
llvm::Error writeShardIndices(StringRef directory, const Twine &prefix,
                              RankedTensorType localType,
                              ArrayRef<int64_t> globalShape, int64_t ranks,
                              int64_t rank, const PackingInfo *packing) {
  auto indices = getShardIndices(localType, globalShape, ranks, rank, packing);
  if (!indices)
    return indices.takeError();
  if (!*indices)
    return llvm::Error::success();
  Tensor tensor(ElementKind::I64,
                {static_cast<int64_t>((*indices)->indices.size())});
  for (auto [i, index] : llvm::enumerate((*indices)->indices))
    tensor.getData()[i] = static_cast<double>(index);
  llvm::SmallString<128> path(directory);
  llvm::sys::path::append(
      path, prefix + ((*indices)->dim == 0 ? ".rows.npy" : ".heads.npy"));
  return writeNpy(path, tensor);
}

/// A rank file: float64 values stored as float32, which holds the
/// arguments (drawn in the program's types) exactly and the references to
/// far better than any tolerance they are checked with.
llvm::Error writeRankTensor(StringRef directory, const Twine &name,
                            const Tensor &tensor) {
  if (auto ec = llvm::sys::fs::create_directories(directory))
    return llvm::createStringError("cannot create " + directory.str() + ": " +
                                   ec.message());
  llvm::SmallString<128> path(directory);
  llvm::sys::path::append(path, name + ".npy");
  if (tensor.getKind() != ElementKind::F64)
    return writeNpy(path, tensor);
  Tensor narrow(ElementKind::F32, std::vector<int64_t>(tensor.getShape()));
  narrow.values() = tensor.values();
  narrow.roundToStorage();
  return writeNpy(path, narrow);
}

} // namespace

llvm::Error
run::writeRankFiles(StringRef directory, func::FuncOp function,
                    const RankViews &views, size_t numResults,
                    const std::vector<Tensor> &globalResults,
                    const std::vector<std::optional<Tensor>> &gradients,
                    const std::vector<Tensor> &globalInputs) {
  const int64_t ranks = static_cast<int64_t>(views.arguments.size());
  const PackingInfo *packing = views.packing ? &*views.packing : nullptr;
  FunctionType type = function.getFunctionType();
  llvm::SmallString<128> all(directory);
  llvm::sys::path::append(all, "all");
  // Writes rank `rank`'s `tensor` (of `localType`) as `name`, with its map.
  auto write = [&](int64_t rank, const Twine &name, const Tensor &tensor,
                   Type localType, ArrayRef<int64_t> globalShape,
                   bool withMap) -> llvm::Error {
    auto tensorType = cast<RankedTensorType>(localType);
    const bool sharded = getSequenceLayout(tensorType) != nullptr;
    if (!sharded)
      return rank == 0 ? writeRankTensor(all, name, tensor)
                       : llvm::Error::success();
    llvm::SmallString<128> dir(directory);
    llvm::sys::path::append(dir, "rank" + std::to_string(rank));
    if (auto error = writeRankTensor(dir, name, tensor))
      return error;
    if (!withMap)
      return llvm::Error::success();
    return writeShardIndices(dir, name, tensorType, globalShape, ranks, rank,
                             packing);
  };
  for (int64_t rank = 0; rank < ranks; ++rank) {
    for (auto [index, argument] : llvm::enumerate(views.arguments[rank]))
      if (auto error = write(rank, "arg" + Twine(index), argument,
                             type.getInput(index), {}, /*withMap=*/false))
        return error;
    for (size_t i = 0; i < numResults; ++i)
      if (auto error = write(rank, "result" + Twine(i), views.results[rank][i],
                             type.getResult(i), globalResults[i].getShape(),
                             /*withMap=*/true))
        return error;
    if (views.cotangents.empty())
      continue;
    size_t cotangent = 0;
    for (auto [index, resultType] : llvm::enumerate(type.getResults()))
      if (isDifferentiable(resultType))
        if (auto error = write(rank, "cotangent" + Twine(index),
                               views.cotangents[rank][cotangent++], resultType,
                               {}, /*withMap=*/false))
          return error;
    // Gradient k of the backward is that of the k-th differentiable argument.
    size_t position = 0;
    for (auto [index, gradient] : llvm::enumerate(gradients)) {
      if (!gradient)
        continue;
      if (auto error =
              write(rank, "grad" + Twine(index),
                    views.gradients[rank][position++], type.getInput(index),
                    globalInputs[index].getShape(), /*withMap=*/true))
        return error;
    }
  }
  return llvm::Error::success();
}
