//===- ApiTest.cpp - gdnrt's C API rejects bad calls before touching CUDA -===//
//
// Contexts and communicators are built by hand here (no GPU, no NCCL), so
// these checks run in CI: every call below must fail with its code and a
// message naming the value and the fix, without enqueueing anything. The
// threads backend's joins, splits and gdnrt_run_ranks need no device and
// run here too.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "ProgressBoard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace {

gdn_tensor_t tensor(std::vector<int64_t> shape, gdn_dtype_t dtype,
                    void *data = reinterpret_cast<void *>(0x1000)) {
  gdn_tensor_t t{};
  t.data = data;
  t.rank = static_cast<int32_t>(shape.size());
  t.dtype = dtype;
  for (size_t d = 0; d < shape.size(); ++d)
    t.shape[d] = shape[d];
  return t;
}

/// A context and a CP communicator of `size` ranks, with no device behind.
struct FakeRuntime {
  gdnrt_context context;
  gdnrt_comm comm;
  explicit FakeRuntime(int size, int rank = 0) {
    comm.size = size;
    comm.rank = rank;
    gdnrt_context_bind(&context, GDNRT_GROUP_CP, &comm);
  }
};

TEST(ApiTest, ErrorNames) {
  EXPECT_STREQ(gdnrt_error_name(GDN_SUCCESS), "GDN_SUCCESS");
  EXPECT_STREQ(gdnrt_error_name(GDN_ERROR_TIMEOUT), "GDN_ERROR_TIMEOUT");
  EXPECT_STREQ(gdnrt_error_name(GDN_ERROR_NCCL), "GDN_ERROR_NCCL");
  EXPECT_STREQ(gdnrt_error_name(99), "unknown gdn error code");
}

TEST(ApiTest, NullPointers) {
  EXPECT_EQ(gdnrt_context_create(0, nullptr, nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_context_create: the output pointer is null");
  gdnrt_context_t *context = reinterpret_cast<gdnrt_context_t *>(0x1);
  EXPECT_EQ(gdnrt_context_create(-1, nullptr, &context),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(context, nullptr);
  gdn_tensor_t x = tensor({4, 8}, GDN_BF16);
  EXPECT_EQ(gdnrt_all_gather(nullptr, GDNRT_GROUP_CP, 2, &x, &x, 0, nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(), "gdnrt_all_gather: the context is null");
  EXPECT_EQ(gdnrt_linear(nullptr, &x, &x, &x), GDN_ERROR_INVALID_ARGUMENT);
  FakeRuntime runtime(2);
  EXPECT_EQ(gdnrt_all_gather(&runtime.context, GDNRT_GROUP_CP, 2, nullptr, &x,
                             0, nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_all_gather: the input is a null pointer");
  gdn_tensor_t noData = tensor({4, 8}, GDN_BF16, nullptr);
  gdn_tensor_t out = tensor({8, 8}, GDN_BF16);
  EXPECT_EQ(gdnrt_all_gather(&runtime.context, GDNRT_GROUP_CP, 2, &noData,
                             &out, 0, nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(), "gdnrt_all_gather: the input has 32 "
                                   "elements but a null data pointer");
  int rank = 0;
  EXPECT_EQ(gdnrt_group_rank(&runtime.context, GDNRT_GROUP_CP, 2, nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gdnrt_group_rank(&runtime.context, GDNRT_GROUP_CP, 2, &rank),
            GDN_SUCCESS);
  EXPECT_STREQ(gdnrt_last_error(), "");
}

TEST(ApiTest, GroupBindingMustMatchTheProgram) {
  FakeRuntime runtime(2);
  gdn_tensor_t in = tensor({4, 8}, GDN_BF16), out = tensor({16, 8}, GDN_BF16);
  EXPECT_EQ(gdnrt_all_gather(&runtime.context, GDNRT_GROUP_SP, 2, &in, &out, 0,
                             nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_all_gather: no communicator is bound to the sp group; "
               "call gdnrt_context_bind first");
  EXPECT_EQ(gdnrt_all_gather(&runtime.context, GDNRT_GROUP_CP, 4, &in, &out, 0,
                             nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_all_gather: the program was compiled for a cp group of 4 "
               "ranks but the communicator bound to it has 2");
  runtime.comm.broken = "rank 0 of 2: ncclAllGather failed";
  EXPECT_EQ(gdnrt_halo_exchange(&runtime.context, GDNRT_GROUP_CP, 2, &in, &in),
            GDN_ERROR_NCCL);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_halo_exchange: the cp communicator was aborted: rank 0 "
               "of 2: ncclAllGather failed");
}

TEST(ApiTest, SizeMismatchesNameTheShapesAndTheRank) {
  FakeRuntime runtime(2, 1);
  gdn_tensor_t in = tensor({4, 8}, GDN_BF16), out = tensor({4, 8}, GDN_BF16);
  EXPECT_EQ(gdnrt_all_gather(&runtime.context, GDNRT_GROUP_CP, 2, &in, &out, 0,
                             nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_all_gather (rank 1 of 2 of the cp group): the output has "
               "shape [4, 8] but all_gather of [4, 8] over 2 ranks along dim 0 "
               "gives [8, 8]");
  gdn_tensor_t wide = tensor({4, 16}, GDN_BF16);
  EXPECT_EQ(gdnrt_all_gather(&runtime.context, GDNRT_GROUP_CP, 2, &in, &wide, 1,
                             nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_all_gather: the workspace is null but this call needs "
               "128 bytes (see the matching _workspace_bytes query)");
  EXPECT_EQ(gdnrt_all_gather_workspace_bytes(&in, 2, 1), 128u);
  EXPECT_EQ(gdnrt_all_gather_workspace_bytes(&in, 2, 0), 0u);
  EXPECT_EQ(gdnrt_all_gather_workspace_bytes(nullptr, 2, 0), 0u);
  gdn_tensor_t m = tensor({2, 4, 4}, GDN_F32), s = tensor({2, 4, 3}, GDN_F32);
  EXPECT_EQ(gdnrt_state_exchange(&runtime.context, GDNRT_GROUP_CP, 2, &m, &s,
                                 &s, static_cast<gdnrt_chain_t>(7), nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_state_exchange: chain 7 is neither "
               "GDNRT_CHAIN_ALL_GATHER nor GDNRT_CHAIN_SCAN");
  EXPECT_GT(gdnrt_state_exchange_workspace_bytes(&s, 2, GDNRT_CHAIN_SCAN), 0u);
}

TEST(ApiTest, TransposedCollectivesNameTheBadValue) {
  FakeRuntime runtime(2, 1);
  gdnrt_context *context = &runtime.context;
  const std::string rank = " (rank 1 of 2 of the cp group): ";
  auto at = [](uintptr_t slot) { return reinterpret_cast<void *>(slot << 16); };
  gdn_tensor_t x = tensor({4, 8}, GDN_BF16, at(1)),
               y = tensor({4, 8}, GDN_BF16, at(2));
  // all_reduce
  EXPECT_EQ(gdnrt_all_reduce(context, GDNRT_GROUP_CP, 2, &x, nullptr, nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_all_reduce: the output is a null pointer");
  gdn_tensor_t transposed = tensor({8, 4}, GDN_BF16, at(2));
  EXPECT_EQ(
      gdnrt_all_reduce(context, GDNRT_GROUP_CP, 2, &x, &transposed, nullptr),
      GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(gdnrt_last_error()),
            "gdnrt_all_reduce" + rank +
                "the output has shape [8, 4] but all_reduce of [4, 8] over 2 "
                "ranks gives [4, 8]");
  gdn_tensor_t ints = tensor({4, 8}, GDN_I32, at(3));
  EXPECT_EQ(gdnrt_all_reduce(context, GDNRT_GROUP_CP, 2, &ints, &ints, nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(gdnrt_last_error()),
            "gdnrt_all_reduce" + rank +
                "all_reduce sums floating-point tensors only, and the output "
                "has the input's dtype");
  gdn_tensor_t halfOut = tensor({4, 8}, GDN_F16, at(2));
  EXPECT_EQ(gdnrt_all_reduce(context, GDNRT_GROUP_CP, 2, &x, &halfOut, nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gdnrt_all_reduce_workspace_bytes(&x, 2), 0u);
  EXPECT_EQ(gdnrt_all_reduce_workspace_bytes(nullptr, 2), 0u);
  // local_unshard and replicated_to_partial
  gdn_tensor_t unsharded = tensor({8, 8}, GDN_BF16, at(2));
  EXPECT_EQ(gdnrt_local_unshard(context, GDNRT_GROUP_CP, 2, &x, &unsharded, 1),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(gdnrt_last_error()),
            "gdnrt_local_unshard" + rank +
                "the output has shape [8, 8] but local_unshard of [4, 8] over "
                "2 ranks along dim 1 gives [4, 16]");
  EXPECT_EQ(
      gdnrt_local_unshard(context, GDNRT_GROUP_CP, 2, nullptr, &unsharded, 0),
      GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_local_unshard: the input is a null pointer");
  EXPECT_EQ(
      gdnrt_replicated_to_partial(context, GDNRT_GROUP_CP, 2, &x, &transposed),
      GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(gdnrt_last_error()),
            "gdnrt_replicated_to_partial" + rank +
                "the output has shape [8, 4] but replicated_to_partial of "
                "[4, 8] over 2 ranks gives [4, 8]");
  EXPECT_EQ(gdnrt_replicated_to_partial(context, GDNRT_GROUP_SP, 2, &x, &y),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_replicated_to_partial: no communicator is bound to the "
               "sp group; call gdnrt_context_bind first");
  // return_halo: a halo of 6 rows onto shards of 4 (it reaches two ranks
  // back).
  gdn_tensor_t halo = tensor({6, 8}, GDN_BF16, at(4)),
               dest = tensor({4, 8}, GDN_BF16, at(5)),
               out = tensor({4, 8}, GDN_BF16, at(6));
  EXPECT_EQ(gdnrt_return_halo(context, GDNRT_GROUP_CP, 2, &halo, nullptr, &out,
                              nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_return_halo: the shard gradient dest is a null pointer");
  gdn_tensor_t narrowHalo = tensor({6, 4}, GDN_BF16, at(4));
  EXPECT_EQ(gdnrt_return_halo(context, GDNRT_GROUP_CP, 2, &narrowHalo, &dest,
                              &out, nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(gdnrt_last_error()),
            "gdnrt_return_halo" + rank +
                "the halo gradient has shape [6, 4] but the rows of the shard "
                "gradient [4, 8] give [6, 8] (and dest's element type)");
  gdn_tensor_t longOut = tensor({5, 8}, GDN_BF16, at(6));
  EXPECT_EQ(gdnrt_return_halo(context, GDNRT_GROUP_CP, 2, &halo, &dest,
                              &longOut, nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(gdnrt_last_error()),
            "gdnrt_return_halo" + rank +
                "the output has shape [5, 8] but return_halo onto a shard "
                "gradient [4, 8] gives [4, 8]");
  gdn_tensor_t f32Out = tensor({4, 8}, GDN_F32, at(6));
  EXPECT_EQ(gdnrt_return_halo(context, GDNRT_GROUP_CP, 2, &halo, &dest, &f32Out,
                              nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(gdnrt_last_error()),
            "gdnrt_return_halo" + rank +
                "the halo gradient, dest and the output must share one "
                "floating-point dtype (the halo's rows are added to dest)");
  // Rank 0 of 4 sums dest's last 4 rows with ranks 1's and 2's: three slots
  // of 4 rows of 16 bytes.
  EXPECT_EQ(gdnrt_return_halo_workspace_bytes(&halo, &dest, 4), 192u);
  EXPECT_EQ(gdnrt_return_halo_workspace_bytes(&halo, nullptr, 4), 0u);
  FakeRuntime first(4, 0);
  EXPECT_EQ(gdnrt_return_halo(&first.context, GDNRT_GROUP_CP, 4, &halo, &dest,
                              &out, nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_return_halo: the workspace is null but this call needs "
               "192 bytes (see the matching _workspace_bytes query)");
  // reverse_state_exchange: M [2, 4, 4], S [2, 4, 3].
  gdn_tensor_t m = tensor({2, 4, 4}, GDN_F32, at(7)),
               s = tensor({2, 4, 3}, GDN_F32, at(8)),
               dIn = tensor({2, 4, 3}, GDN_F32, at(9)),
               dM = tensor({2, 4, 4}, GDN_F32, at(10)),
               dS = tensor({2, 4, 3}, GDN_F32, at(11));
  EXPECT_EQ(gdnrt_reverse_state_exchange(context, GDNRT_GROUP_CP, 2, nullptr,
                                         &m, &s, &dM, &dS,
                                         GDNRT_CHAIN_ALL_GATHER, nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_reverse_state_exchange: the incoming state gradient is a "
               "null pointer");
  EXPECT_EQ(gdnrt_reverse_state_exchange(context, GDNRT_GROUP_CP, 2, &dIn, &m,
                                         &s, &dM, nullptr,
                                         GDNRT_CHAIN_ALL_GATHER, nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_reverse_state_exchange: the partial state gradient is a "
               "null pointer");
  EXPECT_EQ(gdnrt_reverse_state_exchange(context, GDNRT_GROUP_CP, 2, &dIn, &m,
                                         &s, &dS, &dS, GDNRT_CHAIN_SCAN,
                                         nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(gdnrt_last_error()),
            "gdnrt_reverse_state_exchange" + rank +
                "the transition gradient has shape [2, 4, 3] but a partial "
                "state [2, 4, 3] ([HV, K, V]) gives [2, 4, 4]");
  gdn_tensor_t dIn64 = tensor({2, 4, 3}, GDN_F64, at(9));
  EXPECT_EQ(gdnrt_reverse_state_exchange(context, GDNRT_GROUP_CP, 2, &dIn64, &m,
                                         &s, &dM, &dS, GDNRT_CHAIN_ALL_GATHER,
                                         nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(gdnrt_last_error()),
            "gdnrt_reverse_state_exchange" + rank +
                "the incoming state gradient, transition, partial state and "
                "both gradients must share one element type");
  EXPECT_EQ(gdnrt_reverse_state_exchange(
                context, GDNRT_GROUP_CP, 2, &dIn, &m, &s, &dM, &dS,
                static_cast<gdnrt_chain_t>(3), nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_reverse_state_exchange: chain 3 is neither "
               "GDNRT_CHAIN_ALL_GATHER nor GDNRT_CHAIN_SCAN");
  // M, S and dS_in of 2 ranks gathered, and three temporaries.
  EXPECT_EQ(
      gdnrt_reverse_state_exchange_workspace_bytes(&s, 2, GDNRT_CHAIN_SCAN),
      (2u * 128 + 2 * 96 + 2 * 96) + 3 * 96);
  EXPECT_EQ(
      gdnrt_reverse_state_exchange_workspace_bytes(&m, 2, GDNRT_CHAIN_SCAN),
      (2u * 128 + 2 * 128 + 2 * 128) + 3 * 128);
  gdn_tensor_t flat = tensor({24}, GDN_F32, at(8));
  EXPECT_EQ(
      gdnrt_reverse_state_exchange_workspace_bytes(&flat, 2, GDNRT_CHAIN_SCAN),
      0u);
  EXPECT_EQ(gdnrt_reverse_state_exchange(context, GDNRT_GROUP_CP, 2, &dIn, &m,
                                         &s, &dM, &dS, GDNRT_CHAIN_ALL_GATHER,
                                         nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gdnrt_last_error()).find("the workspace is null"),
            std::string::npos)
      << gdnrt_last_error();
}

TEST(ApiTest, LinearChecksDtypesAndFeatures) {
  gdnrt_context context;
  gdn_tensor_t x = tensor({16, 4, 8}, GDN_BF16), w = tensor({12, 32}, GDN_BF16),
               y = tensor({16, 12}, GDN_BF16);
  gdn_tensor_t wrongWeight = tensor({12, 30}, GDN_BF16);
  EXPECT_EQ(gdnrt_linear(&context, &x, &wrongWeight, &y),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(), "gdnrt_linear: the weight has 30 input "
                                   "features but every token of x has 32");
  gdn_tensor_t wrongY = tensor({15, 3, 4}, GDN_BF16);
  EXPECT_EQ(gdnrt_linear(&context, &x, &w, &wrongY), GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_linear: y has 15 tokens of 12 features but x has 16 "
               "tokens and the weight 12 outputs");
  // y may be f32 beside bf16 x and weight (an f32 projection output; that
  // call reaches cuBLASLt), never another 16-bit type or narrower than x.
  const char *dtypes = "gdnrt_linear: x and the weight must share one dtype "
                       "among bf16, f16 and f32, and y must have it too or be "
                       "f32";
  gdn_tensor_t f16 = tensor({16, 12}, GDN_F16);
  EXPECT_EQ(gdnrt_linear(&context, &x, &w, &f16), GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(), dtypes);
  gdn_tensor_t x32 = tensor({16, 4, 8}, GDN_F32), w32 = tensor({12, 32}, GDN_F32);
  EXPECT_EQ(gdnrt_linear(&context, &x32, &w32, &y), GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(), dtypes);
  EXPECT_EQ(gdnrt_linear(&context, &x, &w32, &y), GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(), dtypes);
}

/// out_proj's backward: x [T, 4, 8] per head, W [12, 32], dy [T, 12], at
/// fake device addresses 64 KiB apart (slot n at n << 16): the argument
/// checks dereference nothing.
struct OutProjGradient {
  static void *at(uintptr_t slot) { return reinterpret_cast<void *>(slot << 16); }
  gdn_tensor_t dy = tensor({16, 12}, GDN_BF16, at(1)),
               x = tensor({16, 4, 8}, GDN_BF16, at(2)),
               w = tensor({12, 32}, GDN_BF16, at(3)),
               dx = tensor({16, 4, 8}, GDN_BF16, at(4)),
               dw = tensor({12, 32}, GDN_BF16, at(5));
};

TEST(ApiTest, LinearGradChecksShapesDtypesAndAliasing) {
  gdnrt_context context;
  OutProjGradient g;
  auto at = &OutProjGradient::at;
  auto &[dy, x, w, dx, dw] = g;
  auto expectError = [&](const gdn_tensor_t &dyArg, const gdn_tensor_t &xArg,
                         const gdn_tensor_t &wArg, const gdn_tensor_t &dxArg,
                         const gdn_tensor_t &dwArg, const char *message) {
    EXPECT_EQ(gdnrt_linear_grad(&context, &dyArg, &xArg, &wArg, &dxArg, &dwArg),
              GDN_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(gdnrt_last_error()),
              std::string("gdnrt_linear_grad: ") + message);
  };
  EXPECT_EQ(gdnrt_linear_grad(nullptr, &dy, &x, &w, &dx, &dw),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(), "gdnrt_linear_grad: the context is null");
  EXPECT_EQ(gdnrt_linear_grad(&context, &dy, &x, &w, nullptr, &dw),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_linear_grad: the input gradient dx is a null pointer");
  gdn_tensor_t noData = tensor({12, 32}, GDN_BF16, nullptr);
  expectError(dy, x, w, dx, noData,
              "the weight gradient dweight has 384 elements but a null data "
              "pointer");
  expectError(dy, x, w, dx, tensor({12, 32}, GDN_F32, at(5)),
              "dy, x, the weight, dx and dweight must share one dtype among "
              "bf16, f16 and f32");
  expectError(
      tensor({16, 12}, GDN_F64, at(1)), tensor({16, 4, 8}, GDN_F64, at(2)),
      tensor({12, 32}, GDN_F64, at(3)), tensor({16, 4, 8}, GDN_F64, at(4)),
      tensor({12, 32}, GDN_F64, at(5)),
      "dy, x, the weight, dx and dweight must share one dtype among "
      "bf16, f16 and f32");
  expectError(dy, x, tensor({12, 4, 8}, GDN_BF16, at(3)), dx, dw,
              "the weight has rank 3; it must be [Out, In]");
  expectError(dy, x, tensor({12, 30}, GDN_BF16, at(3)), dx, dw,
              "the weight has 30 input features but every token of x has 32");
  expectError(tensor({15, 12}, GDN_BF16, at(1)), x, w, dx, dw,
              "dy has 15 tokens of 12 features but x has 16 tokens and the "
              "weight 12 outputs");
  expectError(tensor({16, 3, 3}, GDN_BF16, at(1)), x, w, dx, dw,
              "dy has 16 tokens of 9 features but x has 16 tokens and the "
              "weight 12 outputs");
  expectError(dy, x, w, tensor({16, 32}, GDN_BF16, at(4)), dw,
              "dx has shape [16, 32] but x has [16, 4, 8]; dx must have x's "
              "shape");
  expectError(dy, x, w, dx, tensor({32, 12}, GDN_BF16, at(5)),
              "dweight has shape [32, 12] but the weight has [12, 32]; "
              "dweight must have the weight's shape");
  expectError(dy, x, w, tensor({16, 4, 8}, GDN_BF16, at(2)), dw,
              "dx overlaps x in memory; give each gradient a buffer of its "
              "own");
  // dw's 768 bytes start 256 bytes before dx's.
  gdn_tensor_t dwIntoDx = tensor(
      {12, 32}, GDN_BF16, reinterpret_cast<void *>((uintptr_t(4) << 16) - 256));
  expectError(dy, x, w, dx, dwIntoDx,
              "dx overlaps dweight in memory; give each gradient a buffer of "
              "its own");
  expectError(dy, x, w, dx, tensor({12, 32}, GDN_BF16, at(3)),
              "dweight overlaps the weight in memory; give each gradient a "
              "buffer of its own");
  // The accumulating form checks the same and names itself.
  EXPECT_EQ(gdnrt_linear_grad_accumulate(&context, &dy, &x, &w, &x, &dw),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_linear_grad_accumulate: dx overlaps x in memory; give "
               "each gradient a buffer of its own");
}

TEST(ApiTest, LinearGradHalvesCheckWhatTheyTake) {
  // The halves take what their GEMM reads and writes, x's shape from dx and
  // the weight's from dweight, and name themselves in their errors.
  gdnrt_context context;
  OutProjGradient g;
  auto at = &OutProjGradient::at;
  auto &[dy, x, w, dx, dw] = g;
  auto refused = [](int status, const std::string &message) {
    EXPECT_EQ(status, GDN_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(gdnrt_last_error()), message);
  };
  const std::string data = "gdnrt_linear_data_grad: ",
                    weights = "gdnrt_linear_weight_grad: ";
  refused(gdnrt_linear_data_grad(nullptr, &dy, &w, &dx), data + "the context is null");
  refused(gdnrt_linear_data_grad(&context, &dy, nullptr, &dx),
          data + "the weight is a null pointer");
  gdn_tensor_t narrow = tensor({16, 4, 7}, GDN_BF16, at(4));
  refused(gdnrt_linear_data_grad(&context, &dy, &w, &narrow),
          data + "the weight has 32 input features but every token of dx has 28");
  gdn_tensor_t fewTokens = tensor({15, 4, 8}, GDN_BF16, at(4));
  refused(gdnrt_linear_data_grad(&context, &dy, &w, &fewTokens),
          data + "dy has 16 tokens of 12 features but dx has 15 tokens and the "
                 "weight 12 outputs");
  gdn_tensor_t dx32 = tensor({16, 4, 8}, GDN_F32, at(4));
  refused(gdnrt_linear_data_grad(&context, &dy, &w, &dx32),
          data + "dy, the weight and dx must share one dtype among bf16, f16 "
                 "and f32");
  gdn_tensor_t dxOverDy = tensor({16, 4, 8}, GDN_BF16, at(1));
  refused(gdnrt_linear_data_grad(&context, &dy, &w, &dxOverDy),
          data + "dx overlaps dy in memory; give each gradient a buffer of its own");

  refused(gdnrt_linear_weight_grad(&context, &dy, &x, nullptr),
          weights + "the weight gradient dweight is a null pointer");
  gdn_tensor_t dwWide = tensor({12, 33}, GDN_BF16, at(5));
  refused(gdnrt_linear_weight_grad(&context, &dy, &x, &dwWide),
          weights + "dweight has 33 input features but every token of x has 32");
  gdn_tensor_t dy16 = tensor({16, 12}, GDN_F16, at(1));
  refused(gdnrt_linear_weight_grad(&context, &dy16, &x, &dw),
          weights + "dy, x and dweight must share one dtype among bf16, f16 and "
                    "f32");
  gdn_tensor_t dwOverX = tensor({12, 32}, GDN_BF16, at(2));
  refused(gdnrt_linear_weight_grad(&context, &dy, &x, &dwOverX),
          weights + "dweight overlaps x in memory; give each gradient a buffer "
                    "of its own");
}

TEST(ApiTest, CommunicatorSetUpErrors) {
  gdnrt_context context;
  gdnrt_comm_t *comm = nullptr;
  unsetenv("GDNRT_RANK");
  EXPECT_EQ(gdnrt_comm_from_environment(&context, &comm),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_comm_from_environment: GDNRT_RANK is not set; start the "
               "ranks with gdnrt-launch, or set GDNRT_RANK, GDNRT_WORLD_SIZE "
               "and GDNRT_RENDEZVOUS");
  EXPECT_EQ(gdnrt_comm_bootstrap(&context, "tcp:127.0.0.1:1", 3, 2, &comm),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(), "gdnrt_comm_bootstrap: rank 3 is not in 0..1");
  EXPECT_EQ(gdnrt_context_set_timeout(&context, 0), GDN_ERROR_INVALID_ARGUMENT);
  gdnrt_comm world;
  world.size = 4;
  EXPECT_EQ(gdnrt_comm_split_grid(&world, 3, &comm, nullptr),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_comm_split_grid: an SP group of 3 ranks does not divide "
               "the world of 4; the grid is S x P with S * P = world size");
  EXPECT_EQ(gdnrt_context_bind(&context, static_cast<gdnrt_group_t>(5), &world),
            GDN_ERROR_INVALID_ARGUMENT);
}

TEST(ApiTest, ProgressPeersMakeABoardOverTheNetwork) {
  // A communicator as gdnrt_comm_init leaves it (no NCCL needed to set its
  // board): rank 0 of 3, its job's key from the unique id.
  int port = 0;
  ASSERT_EQ(gdnrt_progress_port(&port), GDN_SUCCESS) << gdnrt_last_error();
  EXPECT_GT(port, 0);
  const std::string here = "127.0.0.1:" + std::to_string(port);
  const char *peers[3] = {here.c_str(), here.c_str(), here.c_str()};
  gdnrt_comm comm;
  comm.size = 3;
  comm.jobKey = 77;
  EXPECT_EQ(gdnrt_comm_set_progress_peers(nullptr, peers, 3),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_comm_set_progress_peers: the communicator is null");
  EXPECT_EQ(gdnrt_comm_set_progress_peers(&comm, peers, 2),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_comm_set_progress_peers: got 2 peers for a communicator "
               "of 3 ranks; pass one \"host:port\" a rank, in rank order");
  const char *bad[3] = {here.c_str(), "node-2", here.c_str()};
  EXPECT_EQ(gdnrt_comm_set_progress_peers(&comm, bad, 3),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_comm_set_progress_peers: peer 1 is \"node-2\", not "
               "host:port (what that rank's gdnrt_progress_port answers on)");
  comm.entered = 2;
  EXPECT_EQ(gdnrt_comm_set_progress_peers(&comm, peers, 3),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(
      std::string(gdnrt_last_error()).find("set its peers before the first"),
      std::string::npos)
      << gdnrt_last_error();
  comm.entered = 0;
  ASSERT_EQ(gdnrt_comm_set_progress_peers(&comm, peers, 3), GDN_SUCCESS)
      << gdnrt_last_error();
  ASSERT_TRUE(comm.board);
  // Ranks 1 and 2 (this process's service, no board of theirs) hold no
  // such board; rank 0 joined.
  EXPECT_EQ(comm.board->missing(1),
            "rank 0 (had entered no collective), rank 1 (its process holds no "
            "such board: not started yet, or it has left the job), rank 2 (its "
            "process holds no such board: not started yet, or it has left the "
            "job)");
  EXPECT_EQ(gdnrt_comm_set_progress_peers(&comm, peers, 3),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(), "gdnrt_comm_set_progress_peers: the "
                                   "communicator has a progress board already");
  gdnrt_comm split;
  split.size = 3;
  EXPECT_EQ(gdnrt_comm_set_progress_peers(&split, peers, 3),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(
      std::string(gdnrt_last_error()).find("a split one gets its world's"),
      std::string::npos)
      << gdnrt_last_error();
  EXPECT_EQ(gdnrt_progress_port(nullptr), GDN_ERROR_INVALID_ARGUMENT);
}

/// Runs `body(rank)` on `ranks` threads and waits for them.
void onThreads(int ranks, const std::function<void(int)> &body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back(body, r);
  for (std::thread &thread : threads)
    thread.join();
}

/// Sets an environment variable for a scope, then restores it.
struct ScopedEnvironment {
  std::string name;
  std::optional<std::string> saved;
  ScopedEnvironment(std::string variable, const char *value)
      : name(std::move(variable)) {
    if (const char *old = std::getenv(name.c_str()))
      saved = old;
    if (value)
      setenv(name.c_str(), value, 1);
    else
      unsetenv(name.c_str());
  }
  ~ScopedEnvironment() {
    if (saved)
      setenv(name.c_str(), saved->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
};

TEST(ApiTest, ThreadsCommunicatorsNeedNoDevice) {
  // Joining, splitting and leaving a threads group are host work: contexts
  // built by hand suffice.
  const int P = 4;
  std::vector<gdnrt_context> contexts(P);
  std::vector<gdnrt_comm_t *> worlds(P, nullptr), sps(P, nullptr),
      cps(P, nullptr);
  for (int job = 0; job < 2; ++job) {
    onThreads(P, [&](int r) {
      ASSERT_EQ(gdnrt_comm_bootstrap(&contexts[r], "threads:api-grid", r, P,
                                     &worlds[r]),
                GDN_SUCCESS)
          << gdnrt_last_error();
      EXPECT_EQ(gdnrt_comm_rank(worlds[r]), r);
      EXPECT_EQ(gdnrt_comm_size(worlds[r]), P);
      EXPECT_EQ(gdnrt_comm_nccl(worlds[r]), nullptr);
      // 2 x 2, SP innermost.
      ASSERT_EQ(gdnrt_comm_split_grid(worlds[r], 2, &sps[r], &cps[r]),
                GDN_SUCCESS)
          << gdnrt_last_error();
      EXPECT_EQ(gdnrt_comm_rank(sps[r]), r % 2);
      EXPECT_EQ(gdnrt_comm_size(sps[r]), 2);
      EXPECT_EQ(gdnrt_comm_rank(cps[r]), r / 2);
      EXPECT_EQ(gdnrt_comm_size(cps[r]), 2);
      EXPECT_EQ(gdnrt_comm_nccl(cps[r]), nullptr);
      gdnrt_comm_t *onlySp = nullptr;
      ASSERT_EQ(gdnrt_comm_split_grid(worlds[r], P, &onlySp, nullptr),
                GDN_SUCCESS)
          << gdnrt_last_error();
      EXPECT_EQ(gdnrt_comm_rank(onlySp), r);
      EXPECT_EQ(gdnrt_comm_destroy(onlySp), GDN_SUCCESS);
    });
    // The job still holds the name.
    gdnrt_comm_t *late = nullptr;
    EXPECT_EQ(
        gdnrt_comm_bootstrap(&contexts[0], "threads:api-grid", 0, P, &late),
        GDN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(gdnrt_last_error()).find("is in use by a job of 4"),
              std::string::npos)
        << gdnrt_last_error();
    for (int r = 0; r < P; ++r)
      for (gdnrt_comm_t *comm : {sps[r], cps[r], worlds[r]})
        EXPECT_EQ(gdnrt_comm_destroy(comm), GDN_SUCCESS);
  } // the second job reuses the name
}

TEST(ApiTest, ThreadsBootstrapNamesTheMissingRanksAndRefusesMismatches) {
  std::vector<gdnrt_context> contexts(3);
  for (gdnrt_context &context : contexts)
    ASSERT_EQ(gdnrt_context_set_timeout(&context, 300), GDN_SUCCESS);
  std::vector<int> codes(3, -1);
  std::vector<std::string> errors(3);
  const auto start = std::chrono::steady_clock::now();
  onThreads(3, [&](int r) {
    if (r == 1)
      return; // never comes
    gdnrt_comm_t *comm = nullptr;
    codes[r] =
        gdnrt_comm_bootstrap(&contexts[r], "threads:api-missing", r, 3, &comm);
    errors[r] = gdnrt_last_error();
    EXPECT_EQ(comm, nullptr);
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  for (int r : {0, 2}) {
    EXPECT_EQ(codes[r], GDN_ERROR_TIMEOUT);
    EXPECT_EQ(errors[r],
              "gdnrt_comm_bootstrap: rank " + std::to_string(r) +
                  " of 3: only 2 of 3 ranks joined the threads group "
                  "\"api-missing\" within 300 ms (missing ranks: 1)");
  }
  // Rank 1 asks for another size and is refused at once; rank 0 times out.
  onThreads(2, [&](int r) {
    gdnrt_comm_t *comm = nullptr;
    if (r == 1)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    codes[r] = gdnrt_comm_bootstrap(&contexts[r], "threads:api-sizes", r,
                                    r == 0 ? 2 : 3, &comm);
    errors[r] = gdnrt_last_error();
  });
  EXPECT_EQ(codes[0], GDN_ERROR_TIMEOUT);
  EXPECT_EQ(codes[1], GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(errors[1], "gdnrt_comm_bootstrap: rank 1 of 3: asked for 3 ranks "
                       "but the threads group \"api-sizes\" has 2 (every "
                       "rank must pass the same size)");
  gdnrt_comm_t *comm = nullptr;
  EXPECT_EQ(gdnrt_comm_bootstrap(&contexts[0], "threads:", 0, 1, &comm),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gdnrt_last_error(),
               "gdnrt_comm_bootstrap: the rendezvous \"threads:\" names no "
               "group; write threads:<name>");
}

TEST(ApiTest, AFailedSplitAbortsTheThreadsGroupForLaterCalls) {
  // Rank 1 never splits: rank 0's split times out and aborts the group, and
  // a collective on it afterwards fails at once saying why.
  std::vector<gdnrt_context> contexts(2);
  std::vector<gdnrt_comm_t *> worlds(2, nullptr);
  onThreads(2, [&](int r) {
    ASSERT_EQ(gdnrt_context_set_timeout(&contexts[r], 300), GDN_SUCCESS);
    ASSERT_EQ(gdnrt_comm_bootstrap(&contexts[r], "threads:api-split", r, 2,
                                   &worlds[r]),
              GDN_SUCCESS)
        << gdnrt_last_error();
  });
  gdnrt_comm_t *sp = nullptr;
  EXPECT_EQ(gdnrt_comm_split_grid(worlds[0], 2, &sp, nullptr),
            GDN_ERROR_TIMEOUT);
  EXPECT_EQ(sp, nullptr);
  const std::string reason =
      "rank 0 of 2: only 1 of 2 ranks reached gdnrt_comm_split_grid for the "
      "threads group \"api-split/sp0\" within 300 ms (missing ranks of "
      "\"api-split\": 1)";
  EXPECT_EQ(gdnrt_last_error(), "gdnrt_comm_split_grid: " + reason);
  ASSERT_EQ(gdnrt_context_bind(&contexts[0], GDNRT_GROUP_CP, worlds[0]),
            GDN_SUCCESS);
  gdn_tensor_t in = tensor({4, 8}, GDN_BF16), out = tensor({8, 8}, GDN_BF16);
  EXPECT_EQ(
      gdnrt_all_gather(&contexts[0], GDNRT_GROUP_CP, 2, &in, &out, 0, nullptr),
      GDN_ERROR_NCCL);
  EXPECT_EQ(gdnrt_last_error(),
            "gdnrt_all_gather: the cp communicator was aborted: " + reason);
  EXPECT_EQ(gdnrt_comm_split_grid(worlds[1], 1, &sp, nullptr), GDN_ERROR_NCCL);
  for (gdnrt_comm_t *world : worlds)
    EXPECT_EQ(gdnrt_comm_destroy(world), GDN_SUCCESS);
}

struct RankRecord {
  std::mutex mutex;
  std::vector<int> ranks;
  std::vector<int> commRanks;
  int failing = -1;
};

int recordRank(int rank, void *user) {
  auto &record = *static_cast<RankRecord *>(user);
  gdnrt_context context;
  gdnrt_comm_t *comm = nullptr;
  int joined = gdnrt_comm_from_environment(&context, &comm);
  {
    std::lock_guard<std::mutex> lock(record.mutex);
    record.ranks.push_back(rank);
    record.commRanks.push_back(joined ? -1 : gdnrt_comm_rank(comm));
  }
  gdnrt_comm_destroy(comm);
  if (joined)
    return joined;
  if (rank == record.failing) // fails, leaving its error on this thread
    return gdnrt_context_set_timeout(nullptr, 1000) * 10;
  return 0;
}

TEST(ApiTest, RunRanksRunsTheLaunchersRanks) {
  RankRecord record;
  {
    ScopedEnvironment rank("GDNRT_RANK", nullptr),
        size("GDNRT_WORLD_SIZE", nullptr),
        rendezvous("GDNRT_RENDEZVOUS", nullptr);
    EXPECT_EQ(gdnrt_run_ranks(recordRank, &record), GDN_ERROR_INVALID_ARGUMENT);
    EXPECT_STREQ(
        gdnrt_last_error(),
        "gdnrt_run_ranks: neither GDNRT_RANK nor GDNRT_WORLD_SIZE with "
        "a threads: GDNRT_RENDEZVOUS is set; start the program with "
        "gdnrt-launch -n P (P processes) or gdnrt-launch -n P "
        "--threads (P threads of one process)");
    EXPECT_EQ(gdnrt_run_ranks(nullptr, nullptr), GDN_ERROR_INVALID_ARGUMENT);
  }
  {
    // gdnrt-launch --threads: one thread per rank, each joining as its own.
    ScopedEnvironment rank("GDNRT_RANK", nullptr),
        size("GDNRT_WORLD_SIZE", "3"),
        rendezvous("GDNRT_RENDEZVOUS", "threads:api-run-ranks");
    ASSERT_EQ(gdnrt_run_ranks(recordRank, &record), GDN_SUCCESS)
        << gdnrt_last_error();
    std::sort(record.ranks.begin(), record.ranks.end());
    std::sort(record.commRanks.begin(), record.commRanks.end());
    EXPECT_EQ(record.ranks, (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(record.commRanks, (std::vector<int>{0, 1, 2}));
    // The first nonzero result comes back, with that rank's error.
    record.failing = 1;
    EXPECT_EQ(gdnrt_run_ranks(recordRank, &record), 10);
    EXPECT_STREQ(gdnrt_last_error(),
                 "gdnrt_run_ranks: rank 1 of 3 returned 10 first; its last "
                 "gdnrt error: gdnrt_context_set_timeout: the context is "
                 "null");
    // Outside a rank the process has none.
    gdnrt_context context;
    gdnrt_comm_t *comm = nullptr;
    EXPECT_EQ(gdnrt_comm_from_environment(&context, &comm),
              GDN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(gdnrt_last_error())
                  .find("GDNRT_RANK is not set and this thread is not a rank "
                        "that gdnrt_run_ranks started"),
              std::string::npos)
        << gdnrt_last_error();
  }
  {
    // One of gdnrt-launch's processes: rank_main runs once, as that rank.
    ScopedEnvironment rank("GDNRT_RANK", "0"), size("GDNRT_WORLD_SIZE", "1"),
        rendezvous("GDNRT_RENDEZVOUS", "threads:api-run-one");
    record.ranks.clear();
    record.failing = -1;
    EXPECT_EQ(gdnrt_run_ranks(recordRank, &record), GDN_SUCCESS)
        << gdnrt_last_error();
    EXPECT_EQ(record.ranks, (std::vector<int>{0}));
  }
}

} // namespace
