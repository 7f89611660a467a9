//===- StridedCopiesTest.cpp - data-movement ops as block copies ----------===//
//
// gdn.split_qkvz, gdn.regroup_sections and the backward's merges
// (gdn.merge_qkvz, gdn.merge_qkv) run on the GPU as the block copies of
// getStridedCopies, which no CI machine can execute. Here the copies run
// on host bytes, by their definition, and must give exactly what the
// reference interpreter computes, writing every result byte once: the
// offsets, pitches and slice counts are where such lowerings go wrong.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"

#include "gdn/InitAllDialects.h"
#include "gdn/Interpreter/Interpreter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace mlir;
using namespace mlir::gdn;

namespace {

/// Split with a bf16 `ba` beside an f32 `qkvz` (element sizes must not mix),
/// 3 value heads per key head; the conv channels (28) are a whole number of
/// q/k parts (4) but not of v parts (6), so both copy shapes are printed.
/// Then one key head, the regroups of Qwen3.5's sections along each
/// dimension and their inverses, with uneven sections; the merges of the
/// same geometries (the split's copies the other way) and merge_qkv.
constexpr const char *kProgram = R"mlir(
func.func @split(%qkvz: tensor<?x40xf32>, %ba: tensor<?x12xbf16>)
    -> (tensor<?x28xf32>, tensor<?x6x2xf32>, tensor<?x6xbf16>, tensor<?x6xbf16>) {
  %m, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x40xf32>, tensor<?x12xbf16>)
      -> (tensor<?x28xf32>, tensor<?x6x2xf32>, tensor<?x6xbf16>, tensor<?x6xbf16>)
  return %m, %z, %b, %a : tensor<?x28xf32>, tensor<?x6x2xf32>, tensor<?x6xbf16>, tensor<?x6xbf16>
}
func.func @split_one_head(%qkvz: tensor<?x24xf32>, %ba: tensor<?x4xf32>)
    -> (tensor<?x16xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<?x2xf32>) {
  %m, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 1 : i64, head_dim_k = 4 : i64}
      : (tensor<?x24xf32>, tensor<?x4xf32>)
      -> (tensor<?x16xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<?x2xf32>)
  return %m, %z, %b, %a : tensor<?x16xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<?x2xf32>
}
func.func @channels(%x: tensor<?x12xf32>) -> tensor<?x12xf32> {
  %y = gdn.regroup_sections %x {dim = 1 : i64, section_sizes = array<i64: 4, 2, 6>, groups = 2 : i64}
      : tensor<?x12xf32> -> tensor<?x12xf32>
  return %y : tensor<?x12xf32>
}
func.func @channels_inverse(%x: tensor<?x12xbf16>) -> tensor<?x12xbf16> {
  %y = gdn.regroup_sections %x {dim = 1 : i64, section_sizes = array<i64: 4, 2, 6>, groups = 2 : i64, inverse = true}
      : tensor<?x12xbf16> -> tensor<?x12xbf16>
  return %y : tensor<?x12xbf16>
}
func.func @rows(%w: tensor<12x3xf32>) -> tensor<12x3xf32> {
  %y = gdn.regroup_sections %w {dim = 0 : i64, section_sizes = array<i64: 3, 3, 6>, groups = 3 : i64}
      : tensor<12x3xf32> -> tensor<12x3xf32>
  return %y : tensor<12x3xf32>
}
func.func @middle_inverse(%x: tensor<?x12x2xf32>) -> tensor<?x12x2xf32> {
  %y = gdn.regroup_sections %x {dim = 1 : i64, section_sizes = array<i64: 4, 2, 6>, groups = 2 : i64, inverse = true}
      : tensor<?x12x2xf32> -> tensor<?x12x2xf32>
  return %y : tensor<?x12x2xf32>
}
func.func @merge(%m: tensor<?x28xf32>, %z: tensor<?x6x2xf32>, %b: tensor<?x6xbf16>, %a: tensor<?x6xbf16>)
    -> (tensor<?x40xf32>, tensor<?x12xbf16>) {
  %qkvz, %ba = gdn.merge_qkvz %m, %z, %b, %a {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x28xf32>, tensor<?x6x2xf32>, tensor<?x6xbf16>, tensor<?x6xbf16>)
      -> (tensor<?x40xf32>, tensor<?x12xbf16>)
  return %qkvz, %ba : tensor<?x40xf32>, tensor<?x12xbf16>
}
func.func @merge_one_head(%m: tensor<?x16xf32>, %z: tensor<?x2x4xf32>, %b: tensor<?x2xf32>, %a: tensor<?x2xf32>)
    -> (tensor<?x24xf32>, tensor<?x4xf32>) {
  %qkvz, %ba = gdn.merge_qkvz %m, %z, %b, %a {key_heads = 1 : i64, head_dim_k = 4 : i64}
      : (tensor<?x16xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<?x2xf32>)
      -> (tensor<?x24xf32>, tensor<?x4xf32>)
  return %qkvz, %ba : tensor<?x24xf32>, tensor<?x4xf32>
}
func.func @merge_qkv(%q: tensor<?x2x4xbf16>, %k: tensor<?x2x4xbf16>, %v: tensor<?x6x2xbf16>) -> tensor<?x28xbf16> {
  %m = gdn.merge_qkv %q, %k, %v : tensor<?x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x6x2xbf16> -> tensor<?x28xbf16>
  return %m : tensor<?x28xbf16>
}
func.func @last(%x: tensor<?x2x12xf32>) -> tensor<?x2x12xf32> {
  %y = gdn.regroup_sections %x {dim = 2 : i64, section_sizes = array<i64: 4, 2, 6>, groups = 2 : i64}
      : tensor<?x2x12xf32> -> tensor<?x2x12xf32>
  return %y : tensor<?x2x12xf32>
}
)mlir";

constexpr int64_t kTokens = 5;

/// A tensor as bytes: element i holds the integer i + 1, `width` bytes
/// little-endian, so that a copied element names where it came from (and
/// the interpreter, given the same numbers, holds them exactly).
struct Bytes {
  int64_t width = 0;
  std::vector<uint8_t> data;

  int64_t elements() const { return data.size() / width; }
  uint64_t at(int64_t i) const {
    uint64_t value = 0;
    std::memcpy(&value, data.data() + i * width, width);
    return value;
  }
};

std::vector<int64_t> shapeOf(Value value) {
  std::vector<int64_t> shape;
  for (int64_t size : cast<RankedTensorType>(value.getType()).getShape())
    shape.push_back(ShapedType::isDynamic(size) ? kTokens : size);
  return shape;
}

int64_t countOf(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t size : shape)
    n *= size;
  return n;
}

int64_t widthOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getElementTypeBitWidth() / 8;
}

/// Runs `op`'s copies on numbered inputs and compares with the interpreter.
void checkCopies(func::FuncOp function) {
  SCOPED_TRACE(function.getName().str());
  Operation *op = &function.getBody().front().front();
  std::vector<cuda::StridedCopy> copies = cuda::getStridedCopies(op);
  ASSERT_FALSE(copies.empty());

  std::vector<interp::Tensor> inputs;
  std::vector<Bytes> sources;
  for (Value operand : op->getOperands()) {
    std::vector<int64_t> shape = shapeOf(operand);
    auto kind = llvm::cantFail(interp::getElementKind(
        cast<RankedTensorType>(operand.getType()).getElementType()));
    interp::Tensor tensor(kind, shape);
    Bytes bytes{widthOf(operand),
                std::vector<uint8_t>(countOf(shape) * widthOf(operand))};
    for (int64_t i = 0; i < countOf(shape); ++i) {
      const uint64_t id = i + 1;
      tensor.values()[i] = static_cast<double>(id);
      std::memcpy(bytes.data.data() + i * bytes.width, &id, bytes.width);
    }
    inputs.push_back(std::move(tensor));
    sources.push_back(std::move(bytes));
  }
  auto expected =
      interp::runOnRanks({function}, {inputs}, interp::InterpreterOptions());
  ASSERT_TRUE(static_cast<bool>(expected))
      << llvm::toString(expected.takeError());

  std::vector<Bytes> targets;
  std::vector<std::vector<int>> writes;
  for (Value result : op->getResults()) {
    Bytes bytes{widthOf(result), std::vector<uint8_t>(countOf(shapeOf(result)) *
                                                      widthOf(result))};
    writes.emplace_back(bytes.data.size(), 0);
    targets.push_back(std::move(bytes));
  }
  // The definition of a strided copy (RuntimeCalls.h).
  for (const cuda::StridedCopy &copy : copies) {
    std::vector<int64_t> shape = shapeOf(op->getOperand(copy.source));
    int64_t slices = 1;
    for (unsigned d = 0; d < copy.sliceDims; ++d)
      slices *= shape[d];
    const Bytes &from = sources[copy.source];
    Bytes &to = targets[copy.target];
    for (int64_t s = 0; s < slices; ++s)
      for (int64_t r = 0; r < copy.rows; ++r) {
        const int64_t src = copy.sourceOffset + s * copy.sourceSlicePitch +
                            r * copy.sourceRowPitch;
        const int64_t dst = copy.targetOffset + s * copy.targetSlicePitch +
                            r * copy.targetRowPitch;
        ASSERT_LE(src + copy.width, static_cast<int64_t>(from.data.size()));
        ASSERT_LE(dst + copy.width, static_cast<int64_t>(to.data.size()));
        std::memcpy(to.data.data() + dst, from.data.data() + src, copy.width);
        for (int64_t b = 0; b < copy.width; ++b)
          ++writes[copy.target][dst + b];
      }
  }
  for (size_t r = 0; r < targets.size(); ++r) {
    const interp::Tensor &reference = (*expected)[0][r];
    ASSERT_EQ(targets[r].elements(), reference.getNumElements());
    for (int64_t i = 0; i < reference.getNumElements(); ++i)
      ASSERT_EQ(static_cast<double>(targets[r].at(i)), reference.values()[i])
          << "result #" << r << ", element " << i;
    for (size_t b = 0; b < writes[r].size(); ++b)
      ASSERT_EQ(writes[r][b], 1) << "result #" << r << ", byte " << b;
  }
}

TEST(StridedCopies, MatchTheInterpreter) {
  DialectRegistry registry;
  registerAllGdnDialects(registry);
  MLIRContext context(registry);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kProgram, ParserConfig(&context));
  ASSERT_TRUE(module);
  int checked = 0;
  for (func::FuncOp function : module->getOps<func::FuncOp>()) {
    checkCopies(function);
    ++checked;
  }
  EXPECT_EQ(checked, 10);
}

} // namespace
