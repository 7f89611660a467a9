//===- InputLimits.cpp - limits the tools put on their input --------------===//
//
// A scan, not a parse: brackets of every kind count toward one depth (the
// parser recurses on each), a closing bracket closes only its own kind of
// opening one (`->` closes nothing), and text in strings and comments is
// skipped.
//
//===----------------------------------------------------------------------===//

#include "gdn/Support/InputLimits.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

using namespace mlir::gdn;

/// The opening bracket a closing one closes.
static char openerOf(char closer) {
  switch (closer) {
  case ')':
    return '(';
  case ']':
    return '[';
  case '}':
    return '{';
  default:
    return '<';
  }
}

std::optional<std::string> mlir::gdn::checkNestingDepth(llvm::StringRef text,
                                                        llvm::StringRef name,
                                                        unsigned maxDepth) {
  // The open brackets, innermost last. A closer pops only its own opener,
  // so text that closes what it did not open (`->` inside `<(...) ->
  // (...)>`, stray brackets) can never hide depth from the scan.
  llvm::SmallVector<char> open;
  unsigned line = 1;
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
      open.push_back(c);
      if (open.size() > maxDepth)
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
      if (c == '>' && i > 0 && text[i - 1] == '-')
        break; // an arrow
      if (!open.empty() && open.back() == openerOf(c))
        open.pop_back();
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}

bool mlir::gdn::checkToolInput(llvm::StringRef path, llvm::StringRef tool) {
  const bool fromStdin = path == "-";
  // Only what can be read twice is read here: a regular file, or standard
  // input put back below. A terminal (someone typing) and pipes or FIFOs
  // given by name are left to the parser unchecked.
  if (fromStdin ? llvm::sys::Process::StandardInIsUserInput()
                : !llvm::sys::fs::is_regular_file(path))
    return true;
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
  const auto refuse = [&](const char *why) {
    llvm::errs() << tool << ": error: cannot put standard input back for the "
                 << "parser (" << why << "); pass the input as a file\n";
    return false;
  };
  int fd;
  llvm::SmallString<128> tempPath;
  if (llvm::sys::fs::createTemporaryFile("gdn-stdin", "mlir", fd, tempPath))
    return refuse("no temporary file");
  llvm::sys::fs::remove(tempPath);
  bool written;
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/false);
    os << (*buffer)->getBuffer();
    os.flush();
    written = !os.has_error();
    os.clear_error();
  }
  const bool restored =
      written && lseek(fd, 0, SEEK_SET) == 0 && dup2(fd, STDIN_FILENO) >= 0;
  close(fd);
  return restored ? true : refuse(written ? "dup2 failed" : "write failed");
}
