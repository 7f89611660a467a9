//===- TensorFiles.cpp - the .npy folders gdn-run reads and writes --------===//
//
// Inputs (argN.npy), cotangents (cotangentN.npy), gradients (gradN.npy) and
// results (resultN.npy) in global shapes. A file whose shape disagrees with
// the program is refused with both shapes named.
//
//===----------------------------------------------------------------------===//

#include "GdnRun.h"

#include "gdn/Interpreter/Gradients.h"
#include "gdn/Interpreter/Npy.h"
#include "gdn/Interpreter/ReferenceGradients.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;
using namespace mlir::gdn::run;
using llvm::StringRef;

namespace {
llvm::Error createDirectory(StringRef directory) {
  if (auto ec = llvm::sys::fs::create_directories(directory))
    return llvm::createStringError("cannot create " + directory.str() + ": " +
                                   ec.message());
  return llvm::Error::success();
}

/// DIRECTORY/NAME.
llvm::SmallString<128> inFolder(StringRef directory, const llvm::Twine &name) {
  llvm::SmallString<128> path(directory);
  llvm::sys::path::append(path, name);
  return path;
}
} // namespace

llvm::Expected<std::map<unsigned, Tensor>>
run::loadProvidedInputs(StringRef directory, func::FuncOp function) {
  std::map<unsigned, Tensor> provided;
  if (directory.empty())
    return provided;
  if (!llvm::sys::fs::is_directory(directory))
    return llvm::createStringError("--inputs " + directory.str() +
                                   " is not a directory");
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    llvm::SmallString<128> path =
        inFolder(directory, "arg" + std::to_string(i) + ".npy");
    if (!llvm::sys::fs::exists(path))
      continue;
    auto tensor = readNpy(path);
    if (!tensor)
      return tensor.takeError();
    provided.emplace(i, std::move(*tensor));
  }
  return provided;
}

llvm::Error run::writeTensors(StringRef directory, StringRef prefix,
                              const std::vector<Tensor> &tensors) {
  if (auto error = createDirectory(directory))
    return error;
  for (auto [index, tensor] : llvm::enumerate(tensors))
    if (auto error = writeNpy(
            inFolder(directory, prefix + std::to_string(index) + ".npy"),
            tensor))
      return error;
  return llvm::Error::success();
}

llvm::Expected<std::vector<Tensor>>
run::convertInputs(const std::vector<Tensor> &inputs, func::FuncOp function) {
  std::vector<Tensor> converted;
  for (auto [index, type] :
       llvm::enumerate(function.getFunctionType().getInputs())) {
    auto tensorType = dyn_cast<RankedTensorType>(type);
    if (!tensorType)
      return llvm::createStringError("argument #" + std::to_string(index) +
                                     " of @" + function.getName().str() +
                                     " is not a ranked tensor");
    auto kind = getElementKind(tensorType.getElementType());
    if (!kind)
      return kind.takeError();
    Tensor tensor(*kind, std::vector<int64_t>(inputs[index].getShape()));
    tensor.values() = inputs[index].values();
    tensor.roundToStorage();
    converted.push_back(std::move(tensor));
  }
  return converted;
}

llvm::Expected<std::vector<Tensor>>
run::loadCotangents(func::FuncOp function, const std::vector<Tensor> &results,
                    uint64_t seed, StringRef directory) {
  std::vector<Tensor> cotangents = generateCotangents(results, seed);
  if (directory.empty())
    return cotangents;
  if (!llvm::sys::fs::is_directory(directory))
    return llvm::createStringError("--cotangents " + directory.str() +
                                   " is not a directory");
  for (unsigned i = 0; i < results.size(); ++i) {
    llvm::SmallString<128> path =
        inFolder(directory, "cotangent" + std::to_string(i) + ".npy");
    if (!llvm::sys::fs::exists(path) ||
        !isDifferentiable(function.getFunctionType().getResult(i)))
      continue;
    auto tensor = readNpy(path);
    if (!tensor)
      return tensor.takeError();
    if (tensor->getShape() != results[i].getShape())
      return llvm::createStringError(
          llvm::formatv("{0} has shape {1} but result #{2} of @{3} has "
                        "shape {4}",
                        path, tensor->describe(), i, function.getName(),
                        results[i].describe()));
    cotangents[i] = zerosLike(results[i]);
    cotangents[i].values() = tensor->values();
  }
  return cotangents;
}

llvm::Expected<std::vector<std::optional<Tensor>>>
run::loadGradients(func::FuncOp function, const std::vector<Tensor> &inputs,
                   StringRef directory) {
  std::vector<std::optional<Tensor>> gradients;
  for (auto [index, type] :
       llvm::enumerate(function.getFunctionType().getInputs())) {
    if (!isDifferentiable(type)) {
      gradients.push_back(std::nullopt);
      continue;
    }
    llvm::SmallString<128> path =
        inFolder(directory, "grad" + std::to_string(index) + ".npy");
    auto tensor = readNpy(path);
    if (!tensor)
      return tensor.takeError();
    if (tensor->getShape() != inputs[index].getShape())
      return llvm::createStringError(
          llvm::formatv("{0} has shape {1} but argument #{2} of @{3} has "
                        "shape {4}",
                        path, tensor->describe(), index, function.getName(),
                        inputs[index].describe()));
    Tensor gradient = zerosLike(inputs[index]);
    gradient.values() = tensor->values();
    gradients.push_back(std::move(gradient));
  }
  return gradients;
}

llvm::Error
run::writeGradients(StringRef directory,
                    const std::vector<std::optional<Tensor>> &gradients) {
  if (auto error = createDirectory(directory))
    return error;
  for (auto [index, gradient] : llvm::enumerate(gradients)) {
    if (!gradient)
      continue;
    if (auto error = writeNpy(
            inFolder(directory, "grad" + std::to_string(index) + ".npy"),
            *gradient))
      return error;
  }
  return llvm::Error::success();
}
