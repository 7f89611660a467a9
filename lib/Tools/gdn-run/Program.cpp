//===- Program.cpp - the programs gdn-run runs ----------------------------===//
//
// Parsing a program (input nested too deep refused before the parser), the
// function or functions each rank runs, and the generated forward and
// backward --run-backward takes instead of the interpreter's sweep.
//
//===----------------------------------------------------------------------===//

#include "GdnRun.h"

#include "gdn/Support/InputLimits.h"

#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;
using namespace mlir::gdn::run;
using llvm::SMLoc;
using llvm::StringRef;

int run::fail(const llvm::Twine &message) {
  llvm::errs() << "gdn-run: error: " << message << "\n";
  return 1;
}

llvm::Expected<Program> run::loadProgram(MLIRContext &context, StringRef path,
                                         StringRef entryList) {
  Program program;
  program.path = path.str();
  llvm::SourceMgr sourceMgr;
  std::string errorMessage;
  auto file = openInputFile(path, &errorMessage);
  if (!file)
    return llvm::createStringError(errorMessage);
  // Input nested past what the parser's recursion survives is refused first.
  if (std::optional<std::string> error =
          checkNestingDepth(file->getBuffer(), path))
    return llvm::createStringError(*error);
  sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  program.module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!program.module)
    return llvm::createStringError(path.str() + " does not parse or verify");

  SmallVector<func::FuncOp> functions(program.module->getOps<func::FuncOp>());
  auto lookup = [&](StringRef name) -> llvm::Expected<func::FuncOp> {
    if (auto function = program.module->lookupSymbol<func::FuncOp>(name))
      return function;
    std::string known;
    for (func::FuncOp function : functions)
      known += (known.empty() ? "@" : ", @") + function.getName().str();
    return llvm::createStringError("no function @" + name.str() + " in " +
                                   path.str() + " (it has " + known + ")");
  };
  if (functions.empty())
    return llvm::createStringError(path.str() +
                                   " holds no function to run; write a "
                                   "func.func (see docs/interpreter.md)");
  if (entryList.empty()) {
    if (functions.size() == 1) {
      program.rankFunctions.push_back(functions.front());
    } else {
      auto main = lookup("main");
      if (!main)
        return llvm::createStringError(
            path.str() + " has several functions; choose one with --entry (" +
            llvm::toString(main.takeError()) + ")");
      program.rankFunctions.push_back(*main);
    }
  } else {
    SmallVector<StringRef> names;
    entryList.split(names, ',');
    for (StringRef name : names) {
      auto function = lookup(name.trim());
      if (!function)
        return function.takeError();
      program.rankFunctions.push_back(*function);
    }
  }
  for (func::FuncOp function : program.rankFunctions)
    if (auto error = checkRunnable(function))
      return llvm::createStringError(path.str() + ": " +
                                     llvm::toString(std::move(error)));
  return program;
}

llvm::Error run::expandRanks(Program &program, int64_t requested) {
  if (program.rankFunctions.size() > 1) {
    if (requested &&
        requested != static_cast<int64_t>(program.rankFunctions.size()))
      return llvm::createStringError("--ranks disagrees with the number of "
                                     "functions given to --entry");
    return llvm::Error::success();
  }
  int64_t count =
      requested ? requested : getRequiredRanks(program.rankFunctions[0]);
  program.rankFunctions.assign(count, program.rankFunctions[0]);
  return llvm::Error::success();
}

llvm::Expected<std::pair<std::vector<func::FuncOp>, std::vector<func::FuncOp>>>
run::findGeneratedBackward(Program &program) {
  std::vector<func::FuncOp> forwards, backwards;
  for (func::FuncOp function : program.rankFunctions) {
    std::string name = function.getName().str();
    auto forward =
        program.module->lookupSymbol<func::FuncOp>(name + "_forward");
    auto backward =
        program.module->lookupSymbol<func::FuncOp>(name + "_backward");
    if (!forward || !backward || forward.isExternal() || backward.isExternal())
      return llvm::createStringError(
          "--run-backward needs @" + name + "_forward and @" + name +
          "_backward in " + program.path +
          "; make them with gdn-opt --gdn-generate-backward");
    forwards.push_back(forward);
    backwards.push_back(backward);
  }
  return std::make_pair(std::move(forwards), std::move(backwards));
}
