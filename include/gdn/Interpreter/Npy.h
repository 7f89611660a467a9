//===- Npy.h - reading and writing NumPy .npy files -------------*- C++ -*-===//
//
// The interpreter exchanges tensors with the outside world (PyTorch, NumPy,
// the GPU test harness) as .npy files (format version 1.0, little-endian,
// C order). bf16 has no NumPy dtype; bf16 tensors are written as float32,
// which holds every bf16 value exactly.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_INTERPRETER_NPY_H
#define GDN_INTERPRETER_NPY_H

#include "gdn/Interpreter/Tensor.h"

#include "llvm/ADT/StringRef.h"

namespace mlir::gdn::interp {

/// Reads a .npy file of dtype f2, f4, f8, i4 or i8. The values are kept
/// exactly; the returned tensor's kind is the file's (f16, f32, f64, i32, i64).
llvm::Expected<Tensor> readNpy(llvm::StringRef path);

/// readNpy of a file's bytes; `name` stands for the file in messages.
llvm::Expected<Tensor> parseNpy(llvm::StringRef bytes, llvm::StringRef name);

/// Writes `tensor` to `path` (bf16 as float32, other kinds as themselves).
llvm::Error writeNpy(llvm::StringRef path, const Tensor &tensor);

} // namespace mlir::gdn::interp

#endif // GDN_INTERPRETER_NPY_H
