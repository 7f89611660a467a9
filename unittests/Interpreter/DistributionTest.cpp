//===- DistributionTest.cpp - scatter and gather by layout ----------------===//
//
// Zigzag shards hold pieces r and 2P-1-r of every sequence; scattering and
// gathering by any layout is the identity on the global tensor.
//
//===----------------------------------------------------------------------===//

#include "TestInputs.h"

#include "gdn/Dialect/Gdn/IR/GdnDialect.h"
#include "gdn/Interpreter/Distribution.h"

#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::interp;
using namespace mlir::gdn::interp::testing;

namespace {

TEST(Zigzag, PiecesRAndTwoPMinusOneMinusR) {
  // Two sequences of 4 and 8 tokens over 2 ranks: pieces of 1 and 2 tokens.
  PackingInfo packing = packingOf({4, 8});
  EXPECT_EQ(llvm::cantFail(getZigzagRows(packing, 2, 0)),
            (std::vector<int64_t>{0, 3, 4, 5, 10, 11}));
  EXPECT_EQ(llvm::cantFail(getZigzagRows(packing, 2, 1)),
            (std::vector<int64_t>{1, 2, 6, 7, 8, 9}));
  auto odd = getZigzagRows(packingOf({4, 6}), 2, 0);
  ASSERT_FALSE(static_cast<bool>(odd));
  EXPECT_NE(llvm::toString(odd.takeError()).find("sequence 1 has length 6"),
            std::string::npos);
}

TEST(Distribution, ScatterThenGatherIsIdentity) {
  MLIRContext context;
  context.loadDialect<GdnDialect>();
  std::mt19937_64 rng(1);
  PackingInfo packing = packingOf({8, 16, 0, 8});
  Tensor global = randomTensor(rng, ElementKind::F64, {32, 4, 3});
  auto f64 = Float64Type::get(&context);
  for (Attribute layout :
       {Attribute(SeqLayoutAttr::get(&context, SeqLayoutKind::Contiguous, 4)),
        Attribute(SeqLayoutAttr::get(&context, SeqLayoutKind::Zigzag, 4)),
        Attribute(HeadsLayoutAttr::get(&context, 4)), Attribute()}) {
    auto local =
        RankedTensorType::get(isa_and_nonnull<HeadsLayoutAttr>(layout)
                                  ? SmallVector<int64_t>{32, 1, 3}
                              : layout ? SmallVector<int64_t>{8, 4, 3}
                                       : SmallVector<int64_t>{32, 4, 3},
                              f64, layout);
    auto shards = llvm::cantFail(scatterToRanks(global, local, 4, &packing));
    ASSERT_EQ(shards.size(), 4u);
    Tensor back = llvm::cantFail(gatherFromRanks(shards, local, &packing));
    EXPECT_EQ(back.values(), global.values());
  }
}

} // namespace
