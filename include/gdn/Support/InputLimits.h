//===- InputLimits.h - limits the tools put on their input ------*- C++ -*-===//
//
// MLIR's parser recurses once per nested bracket, so a hostile or corrupted
// input (an array attribute 10,000 levels deep) overflows the stack before
// any diagnostic. The tools scan their input first and refuse it with a
// message naming the place instead. Depends on LLVM support only.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_SUPPORT_INPUTLIMITS_H
#define GDN_SUPPORT_INPUTLIMITS_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::gdn {

/// Deepest bracket nesting the tools accept. Real programs nest a few
/// levels; at this depth the parser uses well under 1 MiB of stack.
constexpr unsigned kMaxInputNesting = 1000;

/// Scans MLIR text for `(`, `[`, `{` and `<` nested deeper than `maxDepth`
/// (string literals and `//` comments skipped). Returns a message naming the
/// line and column where the limit is passed, or nullopt. `name` is the
/// input's name in the message.
std::optional<std::string>
checkNestingDepth(llvm::StringRef text, llvm::StringRef name,
                  unsigned maxDepth = kMaxInputNesting);

/// For a tool's main, before MLIR parses `path` ("-": standard input):
/// reads it and checks its nesting. Standard input, once read, is put back
/// on descriptor 0 (as an unlinked temporary file) for the parser to read
/// again. Prints `tool: error: ...` and returns false when the input is
/// refused. What cannot be read twice (a terminal, a pipe or FIFO given by
/// name), an empty path, and a file that cannot be read are left to the
/// parser unchecked.
bool checkToolInput(llvm::StringRef path, llvm::StringRef tool);

} // namespace mlir::gdn

#endif // GDN_SUPPORT_INPUTLIMITS_H
