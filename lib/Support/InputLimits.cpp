//===- InputLimits.cpp - limits the tools put on their input --------------===//
//
// A scan, not a parse: brackets of every kind count toward one depth (the
// parser recurses on each), a closing bracket never takes the depth below
// zero (`->` closes nothing), and text in strings and comments is skipped.
//
//===----------------------------------------------------------------------===//

#include "gdn/Support/InputLimits.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

using namespace mlir::gdn;

std::optional<std::string> mlir::gdn::checkNestingDepth(llvm::StringRef text,
                                                        llvm::StringRef name,
                                                        unsigned maxDepth) {
  unsigned depth = 0, line = 1;
  size_t lineStart = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    switch (c) {
    case '\n':
      ++line;
      lineStart = i + 1;
      break;
    case '"':
      // A string literal, with backslash escapes, to its closing quote.
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
        else if (text[i] == '\n') {
          ++line;
          lineStart = i + 1;
        }
      break;
    case '/':
      if (i + 1 < text.size() && text[i + 1] == '/')
        while (i + 1 < text.size() && text[i + 1] != '\n')
          ++i;
      break;
    case '(':
    case '[':
    case '{':
    case '<':
      if (++depth > maxDepth)
        return (name + ":" + llvm::Twine(line) + ":" +
                llvm::Twine(i - lineStart + 1) + ": brackets nest deeper than " +
                llvm::Twine(maxDepth) +
                " levels; the input is not a program the GDN tools accept "
                "(flatten the nested attribute or type)")
            .str();
      break;
    case ')':
    case ']':
    case '}':
    case '>':
      if (depth > 0)
        --depth;
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}

bool mlir::gdn::checkToolInput(llvm::StringRef path, llvm::StringRef tool) {
  const bool fromStdin = path == "-";
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      fromStdin ? llvm::MemoryBuffer::getSTDIN()
                : llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return true;
  if (std::optional<std::string> error = checkNestingDepth(
          (*buffer)->getBuffer(), fromStdin ? "<stdin>" : path)) {
    llvm::errs() << tool << ": error: " << *error << "\n";
    return false;
  }
  if (!fromStdin)
    return true;
  // Hand the bytes back: a temporary file, unlinked, read from its start.
  int fd;
  llvm::SmallString<128> tempPath;
  if (llvm::sys::fs::createTemporaryFile("gdn-stdin", "mlir", fd, tempPath)) {
    llvm::errs() << tool
                 << ": error: cannot keep standard input for the parser "
                    "(no temporary file); pass the input as a file\n";
    return false;
  }
  llvm::sys::fs::remove(tempPath);
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/false);
    os << (*buffer)->getBuffer();
  }
  if (lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, STDIN_FILENO) < 0) {
    llvm::errs() << tool
                 << ": error: cannot put standard input back for the parser; "
                    "pass the input as a file\n";
    close(fd);
    return false;
  }
  close(fd);
  return true;
}
