//===- TensorTest.cpp - storage rounding and .npy files -------------------===//
//
// Storage rounding must round once (ties to even), including the cases where
// going through float first would round twice; .npy files round-trip.
//
//===----------------------------------------------------------------------===//

#include "gdn/Interpreter/Tensor.h"
#include "gdn/Interpreter/Npy.h"

#include "llvm/Support/FileSystem.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace mlir::gdn::interp;

namespace {

TEST(StorageRounding, BF16TiesToEvenWithoutDoubleRounding) {
  const double ulp = std::ldexp(1.0, -7); // bf16 spacing at 1
  EXPECT_EQ(roundToStorage(1.0 + ulp / 2, ElementKind::BF16), 1.0);
  EXPECT_EQ(roundToStorage(1.0 + 3 * ulp / 2, ElementKind::BF16),
            1.0 + 2 * ulp);
  // Just above the tie: float rounding first would land on the tie and then
  // round down to even; rounding once goes up.
  EXPECT_EQ(
      roundToStorage(1.0 + ulp / 2 + std::ldexp(1.0, -40), ElementKind::BF16),
      1.0 + ulp);
  EXPECT_EQ(roundToStorage(-257.0, ElementKind::BF16), -256.0);
  EXPECT_TRUE(std::isinf(roundToStorage(1e300, ElementKind::BF16)));
  EXPECT_TRUE(std::isnan(roundToStorage(NAN, ElementKind::BF16)));
}

TEST(StorageRounding, OtherKinds) {
  EXPECT_EQ(roundToStorage(1.0 / 3.0, ElementKind::F32),
            static_cast<double>(1.0f / 3.0f));
  EXPECT_EQ(roundToStorage(2049.0, ElementKind::F16), 2048.0);
  EXPECT_EQ(roundToStorage(0.1, ElementKind::F64), 0.1);
  EXPECT_EQ(roundToStorage(2.5, ElementKind::I32), 2.0);
}

TEST(Npy, RoundTrip) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("gdn-npy", "npy", path));
  for (ElementKind kind :
       {ElementKind::F64, ElementKind::F32, ElementKind::BF16, ElementKind::F16,
        ElementKind::I32, ElementKind::I64}) {
    Tensor tensor(kind, {2, 3});
    for (int64_t i = 0; i < 6; ++i)
      tensor.getData()[i] = i * 1.5 - 2;
    tensor.roundToStorage();
    ASSERT_FALSE(static_cast<bool>(writeNpy(path, tensor)));
    Tensor back = llvm::cantFail(readNpy(path));
    EXPECT_EQ(back.getShape(), tensor.getShape());
    EXPECT_EQ(back.values(), tensor.values()) << getElementKindName(kind);
  }
  Tensor scalarish(ElementKind::F64, {4});
  ASSERT_FALSE(static_cast<bool>(writeNpy(path, scalarish)));
  EXPECT_EQ(llvm::cantFail(readNpy(path)).getShape(),
            llvm::ArrayRef<int64_t>({4}));
  llvm::sys::fs::remove(path);
}

TEST(Npy, RefusesIntegersItCannotStore) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("gdn-npy", "npy", path));
  struct Case {
    ElementKind kind;
    double value;
    const char *expected;
  };
  for (const Case &c :
       {Case{ElementKind::I32, 3e9, "is outside the range of i32"},
        Case{ElementKind::I64, 1e19, "is outside the range of i64"},
        Case{ElementKind::I32, NAN, "is not a whole number"}}) {
    Tensor tensor(c.kind, {2});
    tensor.getData()[1] = c.value;
    llvm::Error error = writeNpy(path, tensor);
    ASSERT_TRUE(static_cast<bool>(error)) << c.value;
    const std::string message = llvm::toString(std::move(error));
    EXPECT_NE(message.find("[1] = "), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
  }
  llvm::sys::fs::remove(path);
}

TEST(Npy, RejectsGarbage) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("gdn-npy", "npy", path));
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << "not an npy file";
  }
  auto result = readNpy(path);
  ASSERT_FALSE(static_cast<bool>(result));
  EXPECT_NE(llvm::toString(result.takeError()).find("not a .npy file"),
            std::string::npos);
  llvm::sys::fs::remove(path);
}

} // namespace
