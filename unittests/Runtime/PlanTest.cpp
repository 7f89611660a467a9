//===- PlanTest.cpp - the collectives' plans against their definitions ----===//
//
// For P simulated ranks, each collective's plans are run by the simulator
// and the outputs compared with the op's definition (docs/spec.md,
// GdnComm.td and GdnCommGradientOps.td), written on whole tensors in
// CollectiveReference.h: concatenation, sum-and-slice, sums over ranks, the
// halo rows and their return, and the state chain and its reverse.
//
//===----------------------------------------------------------------------===//

#include "CollectiveReference.h"
#include "PlanSimulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>

using namespace gdnrt;
using namespace gdnrt::testing;
using gdnrt::reference::Tensor;
using gdnrt::reference::concat;
using gdnrt::reference::slice;
using gdnrt::reference::chain;
using gdnrt::reference::reverseChain;

namespace {

Shape planShape(const Tensor &t) { return Shape{t.shape, sizeof(double)}; }

Tensor randomTensor(std::vector<int64_t> shape, std::mt19937 &rng) {
  Tensor t(std::move(shape));
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (double &x : t.data)
    x = uniform(rng);
  return t;
}

void expectEqual(const Tensor &expected, const Tensor &actual,
                 const std::string &where, double tolerance = 0) {
  ASSERT_EQ(expected.shape, actual.shape) << where;
  for (size_t i = 0; i < expected.data.size(); ++i)
    ASSERT_NEAR(expected.data[i], actual.data[i],
                tolerance * (1 + std::abs(expected.data[i])))
        << where << " at element " << i;
}

using Planner = std::function<bool(int rank, Plan &, std::string &)>;

/// Plans every rank, simulates, and returns the outputs.
std::vector<std::vector<char>> runRanks(int P, const Planner &planner,
                                        const std::vector<Tensor> &inputs,
                                        const std::vector<Tensor> &inputs2,
                                        size_t outputBytes) {
  std::vector<Plan> plans(P);
  std::vector<RankMemory> memory(P);
  for (int r = 0; r < P; ++r) {
    std::string error;
    EXPECT_TRUE(planner(r, plans[r], error)) << error;
    memory[r].input = inputs[r].bytes();
    if (!inputs2.empty())
      memory[r].input2 = inputs2[r].bytes();
    memory[r].output.assign(outputBytes, 0x7f); // garbage until written
  }
  std::string failure = simulate(plans, memory);
  EXPECT_EQ(failure, "");
  std::vector<std::vector<char>> outputs;
  for (RankMemory &m : memory)
    outputs.push_back(m.output);
  return outputs;
}

/// The bytes a plan delivers to the other ranks, as the cost model counts
/// them: every group of the plan added up.
uint64_t bytesSent(const Plan &plan, int rank, int ranks) {
  uint64_t bytes = 0;
  for (const Step &step : plan.steps)
    if (step.kind == Step::Communicate)
      bytes += bytesSentByGroup(step.group, rank, ranks);
  return bytes;
}

TEST(PlanTest, BytesSentCountEachRanksDataForTheOthers) {
  std::string error;
  for (int ranks : {1, 2, 4}) {
    // An all-gather of a [4, 8] f32 piece: the piece once to every peer.
    Plan gather;
    ASSERT_TRUE(planAllGather(Shape{{4, 8}, 4}, Shape{{4 * ranks, 8}, 4},
                              ranks, 0, 0, gather, error))
        << error;
    EXPECT_EQ(bytesSent(gather, 0, ranks), 128u * (ranks - 1));
    // A reduce-scatter of [8, 8] f32: the other ranks' slices.
    Plan scatter;
    ASSERT_TRUE(planReduceScatter(Shape{{8, 8}, 4}, Shape{{8 / ranks, 8}, 4},
                                  ranks, 0, 0, GDN_F32, scatter, error))
        << error;
    EXPECT_EQ(bytesSent(scatter, 0, ranks), 256u / ranks * (ranks - 1));
  }
  // An all-reduce of 1024 bytes over 4 ranks: 2 (P - 1) / P of them.
  Group group;
  group.messages.push_back(
      {Message::AllReduce, {Buffer::Input}, {Buffer::Output}, 1024, -1,
       GDN_F32});
  EXPECT_EQ(bytesSentByGroup(group, 0, 4), 1536u);
  EXPECT_EQ(bytesSentByGroup(group, 0, 1), 0u);
  // Sends count, receives do not.
  Group pair;
  pair.messages.push_back({Message::Send, {Buffer::Input}, {}, 96, 1});
  pair.messages.push_back({Message::Recv, {Buffer::Output}, {}, 64, 1});
  EXPECT_EQ(bytesSentByGroup(pair, 0, 2), 96u);
  // An all-to-all of [8, 8] f32 split along 1: every rank keeps its own
  // piece and sends the others theirs, (P - 1) / P of the tensor.
  for (int ranks : {1, 2, 4})
    for (int rank = 0; rank < ranks; ++rank) {
      Plan toAll;
      ASSERT_TRUE(planAllToAll(Shape{{8, 8}, 4}, Shape{{8 * ranks, 8 / ranks}, 4},
                               ranks, rank, 1, 0, toAll, error))
          << error;
      EXPECT_EQ(bytesSent(toAll, rank, ranks), 256u / ranks * (ranks - 1))
          << "rank " << rank << " of " << ranks;
    }
}

TEST(PlanTest, AllGatherConcatenatesAlongEveryDim) {
  std::mt19937 rng(1);
  for (int P : {1, 2, 3, 4})
    for (size_t dim : {0, 1, 2}) {
      std::vector<Tensor> inputs;
      for (int r = 0; r < P; ++r)
        inputs.push_back(randomTensor({3, 2, 5}, rng));
      Tensor expected = concat(inputs, dim);
      auto outputs = runRanks(
          P,
          [&](int r, Plan &plan, std::string &error) {
            return planAllGather(planShape(inputs[r]), planShape(expected),
                                 P, r, static_cast<int>(dim), plan, error);
          },
          inputs, {}, expected.data.size() * sizeof(double));
      for (int r = 0; r < P; ++r)
        expectEqual(expected, Tensor::fromBytes(expected.shape, outputs[r]),
                    "all_gather P=" + std::to_string(P) +
                        " dim=" + std::to_string(dim));
    }
}

TEST(PlanTest, ReduceScatterSumsAndSlices) {
  std::mt19937 rng(2);
  for (int P : {1, 2, 3, 4})
    for (size_t dim : {0, 1, 2}) {
      std::vector<int64_t> shape = {2, 3, 2};
      shape[dim] *= P;
      std::vector<Tensor> inputs;
      Tensor sum(shape);
      for (int r = 0; r < P; ++r) {
        inputs.push_back(randomTensor(shape, rng));
        for (size_t i = 0; i < sum.data.size(); ++i)
          sum.data[i] += inputs.back().data[i];
      }
      auto planner = [&](int r, Plan &plan, std::string &error) {
        std::vector<int64_t> out = shape;
        out[dim] /= P;
        return planReduceScatter(planShape(inputs[r]),
                                 Shape{out, sizeof(double)}, P, r,
                                 static_cast<int>(dim), GDN_F64, plan, error);
      };
      Tensor piece = slice(sum, dim, P, 0);
      auto outputs = runRanks(P, planner, inputs, {},
                              piece.data.size() * sizeof(double));
      for (int r = 0; r < P; ++r)
        expectEqual(slice(sum, dim, P, r),
                    Tensor::fromBytes(piece.shape, outputs[r]),
                    "reduce_scatter P=" + std::to_string(P) +
                        " dim=" + std::to_string(dim),
                    1e-15);
    }
}

TEST(PlanTest, AllToAllExchangesBetweenEveryPairOfDims) {
  std::mt19937 rng(3);
  for (int P : {1, 2, 3})
    for (int split : {0, 1, 2})
      for (int concatDim : {0, 1, 2}) {
        std::vector<Tensor> inputs;
        for (int r = 0; r < P; ++r)
          inputs.push_back(randomTensor({2 * P, 3 * P, P}, rng));
        // Rank r receives piece r of every rank, in rank order.
        std::vector<Tensor> expected;
        for (int r = 0; r < P; ++r) {
          std::vector<Tensor> pieces;
          for (int q = 0; q < P; ++q)
            pieces.push_back(slice(inputs[q], split, P, r));
          expected.push_back(concat(pieces, concatDim));
        }
        auto outputs = runRanks(
            P,
            [&](int r, Plan &plan, std::string &error) {
              return planAllToAll(planShape(inputs[r]),
                                  planShape(expected[r]), P, r, split,
                                  concatDim, plan, error);
            },
            inputs, {}, expected[0].data.size() * sizeof(double));
        for (int r = 0; r < P; ++r)
          expectEqual(expected[r],
                      Tensor::fromBytes(expected[r].shape, outputs[r]),
                      "all_to_all P=" + std::to_string(P) + " split=" +
                          std::to_string(split) + " concat=" +
                          std::to_string(concatDim));
      }
}

TEST(PlanTest, HaloTakesTheRowsBeforeTheShardFromAsManyRanksAsNeeded) {
  std::mt19937 rng(4);
  for (int P : {1, 2, 3, 5})
    for (int64_t shard : {0, 1, 2, 5})
      for (int64_t halo : {1, 3, 7}) {
        std::vector<Tensor> inputs;
        for (int r = 0; r < P; ++r)
          inputs.push_back(randomTensor({shard, 2}, rng));
        Tensor whole = concat(inputs, 0);
        auto outputs = runRanks(
            P,
            [&](int r, Plan &plan, std::string &error) {
              return planHaloExchange(planShape(inputs[r]),
                                      Shape{{halo, 2}, sizeof(double)}, P, r,
                                      plan, error);
            },
            inputs, {}, halo * 2 * sizeof(double));
        for (int r = 0; r < P; ++r) {
          Tensor expected({halo, 2});
          for (int64_t i = 0; i < halo; ++i) {
            int64_t row = r * shard - halo + i;
            for (int c = 0; c < 2 && row >= 0; ++c)
              expected.data[i * 2 + c] = whole.data[row * 2 + c];
          }
          expectEqual(expected, Tensor::fromBytes({halo, 2}, outputs[r]),
                      "halo P=" + std::to_string(P) + " shard=" +
                          std::to_string(shard) + " halo=" +
                          std::to_string(halo) + " rank=" + std::to_string(r));
        }
      }
}

TEST(PlanTest, LocalShardTakesThisRanksBlock) {
  std::mt19937 rng(5);
  for (int P : {1, 2, 4})
    for (int dim : {0, 1, 2}) {
      Tensor whole = randomTensor({4, 4, 4}, rng);
      for (int r = 0; r < P; ++r) {
        Tensor expected = slice(whole, dim, P, r);
        auto outputs = runRanks(
            1,
            [&](int, Plan &plan, std::string &error) {
              return planLocalShard(planShape(whole), planShape(expected), P,
                                    r, dim, plan, error);
            },
            {whole}, {}, expected.data.size() * sizeof(double));
        expectEqual(expected, Tensor::fromBytes(expected.shape, outputs[0]),
                    "local_shard");
      }
    }
}

TEST(PlanTest, StateExchangeChainsBothWays) {
  std::mt19937 rng(6);
  for (bool scan : {false, true})
    for (int P : {1, 2, 3, 5, 8}) {
      const int64_t heads = 2, K = 3, V = 2;
      std::vector<Tensor> M, S;
      for (int r = 0; r < P; ++r) {
        M.push_back(randomTensor({heads, K, K}, rng));
        S.push_back(randomTensor({heads, K, V}, rng));
      }
      std::vector<Tensor> expected = chain(M, S);
      auto outputs = runRanks(
          P,
          [&](int r, Plan &plan, std::string &error) {
            return planStateExchange(planShape(M[r]), planShape(S[r]),
                                     planShape(S[r]), P, r, scan, GDN_F64,
                                     plan, error);
          },
          M, S, heads * K * V * sizeof(double));
      for (int r = 0; r < P; ++r)
        expectEqual(expected[r], Tensor::fromBytes({heads, K, V}, outputs[r]),
                    std::string(scan ? "scan" : "all_gather") +
                        " P=" + std::to_string(P) + " rank=" + std::to_string(r),
                    1e-12);
    }
}

/// Plans and simulates P ranks whose buffers `fill` sets up; returns every
/// rank's memory.
std::vector<RankMemory>
simulateRanks(int P, const Planner &planner,
              const std::function<void(int rank, RankMemory &)> &fill) {
  std::vector<Plan> plans(P);
  std::vector<RankMemory> memory(P);
  for (int r = 0; r < P; ++r) {
    std::string error;
    EXPECT_TRUE(planner(r, plans[r], error)) << error;
    fill(r, memory[r]);
  }
  EXPECT_EQ(simulate(plans, memory), "");
  return memory;
}

/// Garbage that an output the plan forgets to write keeps.
std::vector<char> garbage(const Tensor &like) {
  return std::vector<char>(like.data.size() * sizeof(double), 0x7f);
}

TEST(PlanTest, AllReduceGivesEveryRankTheSameSum) {
  std::mt19937 rng(7);
  for (int P = 1; P <= 8; ++P)
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{3, 2, 5}, std::vector<int64_t>{7},
          std::vector<int64_t>{0, 4}}) {
      std::vector<Tensor> inputs;
      for (int r = 0; r < P; ++r)
        inputs.push_back(randomTensor(shape, rng));
      Tensor expected = reference::sum(inputs);
      auto outputs = runRanks(
          P,
          [&](int r, Plan &plan, std::string &error) {
            return planAllReduce(planShape(inputs[r]), planShape(expected), P,
                                 r, GDN_F64, plan, error);
          },
          inputs, {}, expected.data.size() * sizeof(double));
      for (int r = 0; r < P; ++r) {
        expectEqual(expected, Tensor::fromBytes(shape, outputs[r]),
                    "all_reduce P=" + std::to_string(P), 1e-15);
        EXPECT_EQ(outputs[r], outputs[0]) << "rank " << r << " of " << P;
      }
    }
}

TEST(PlanTest, LocalUnshardPlacesTheBlockAlongEveryDim) {
  std::mt19937 rng(8);
  for (int P = 1; P <= 8; ++P)
    for (int dim : {0, 1, 2}) {
      Tensor block = randomTensor({2, 3, 2}, rng);
      for (int r = 0; r < P; ++r) {
        Tensor expected = reference::unshard(block, dim, P, r);
        auto outputs = runRanks(
            1,
            [&](int, Plan &plan, std::string &error) {
              return planLocalUnshard(planShape(block), planShape(expected), P,
                                      r, dim, plan, error);
            },
            {block}, {}, expected.data.size() * sizeof(double));
        expectEqual(expected, Tensor::fromBytes(expected.shape, outputs[0]),
                    "local_unshard P=" + std::to_string(P) + " dim=" +
                        std::to_string(dim) + " rank=" + std::to_string(r));
        // local_shard undoes it.
        EXPECT_EQ(slice(expected, dim, P, r).data, block.data);
      }
    }
}

TEST(PlanTest, ReplicatedToPartialKeepsOneCopy) {
  std::mt19937 rng(9);
  for (int P : {1, 2, 3, 8}) {
    Tensor whole = randomTensor({4, 3}, rng);
    auto outputs = runRanks(
        P,
        [&](int r, Plan &plan, std::string &error) {
          return planReplicatedToPartial(planShape(whole), planShape(whole), P,
                                         r, plan, error);
        },
        std::vector<Tensor>(P, whole), {}, whole.data.size() * sizeof(double));
    std::vector<Tensor> shares;
    for (int r = 0; r < P; ++r) {
      shares.push_back(Tensor::fromBytes(whole.shape, outputs[r]));
      expectEqual(r == 0 ? whole : Tensor(whole.shape), shares.back(),
                  "replicated_to_partial rank " + std::to_string(r));
    }
    expectEqual(whole, reference::sum(shares), "the shares' sum");
  }
}

TEST(PlanTest, ReturnHaloSendsEveryHaloRowHome) {
  std::mt19937 rng(10);
  for (int P = 1; P <= 8; ++P)
    for (int64_t shard : {0, 1, 2, 5})
      for (int64_t rows : {1, 3, 7})
        for (std::vector<int64_t> trailing :
             {std::vector<int64_t>{2}, std::vector<int64_t>{2, 3}}) {
          std::vector<int64_t> shardShape = trailing, haloShape = trailing;
          shardShape.insert(shardShape.begin(), shard);
          haloShape.insert(haloShape.begin(), rows);
          std::vector<Tensor> halos, dests;
          for (int r = 0; r < P; ++r) {
            halos.push_back(randomTensor(haloShape, rng));
            dests.push_back(randomTensor(shardShape, rng));
          }
          std::vector<Tensor> expected = reference::returnHalo(halos, dests);
          auto outputs = runRanks(
              P,
              [&](int r, Plan &plan, std::string &error) {
                return planReturnHalo(planShape(halos[r]), planShape(dests[r]),
                                      planShape(dests[r]), P, r, GDN_F64, plan,
                                      error);
              },
              halos, dests, dests[0].data.size() * sizeof(double));
          for (int r = 0; r < P; ++r)
            expectEqual(expected[r], Tensor::fromBytes(shardShape, outputs[r]),
                        "return_halo P=" + std::to_string(P) +
                            " shard=" + std::to_string(shard) + " halo=" +
                            std::to_string(rows) + " rank=" + std::to_string(r),
                        1e-15);
        }
}

TEST(PlanTest, ReturnHaloIsTheHaloExchangesTranspose) {
  // <halo(x), g> summed over ranks equals <x, return_halo(g, 0)>: the
  // reference's return_halo is the adjoint of its halo.
  std::mt19937 rng(11);
  for (int P : {1, 3, 6})
    for (int64_t shard : {1, 2, 5})
      for (int64_t rows : {1, 4, 11}) {
        std::vector<Tensor> x, g, zeros;
        for (int r = 0; r < P; ++r) {
          x.push_back(randomTensor({shard, 3}, rng));
          g.push_back(randomTensor({rows, 3}, rng));
          zeros.push_back(Tensor({shard, 3}));
        }
        std::vector<Tensor> back = reference::returnHalo(g, zeros);
        double forward = 0, transposed = 0;
        for (int r = 0; r < P; ++r) {
          Tensor h = reference::halo(x, r, rows);
          for (size_t i = 0; i < h.data.size(); ++i)
            forward += h.data[i] * g[r].data[i];
          for (size_t i = 0; i < x[r].data.size(); ++i)
            transposed += x[r].data[i] * back[r].data[i];
        }
        EXPECT_NEAR(forward, transposed, 1e-12 * (1 + std::abs(forward)))
            << "P=" << P << " shard=" << shard << " halo=" << rows;
      }
}

TEST(PlanTest, ReverseChainReferenceIsTheChainsDerivative) {
  // The reference VJP against central differences of the reference chain:
  // <dS_in, d chain(M + e dM, S + e dS) / de> = <gM, dM> + <gS, dS>.
  std::mt19937 rng(12);
  const int64_t heads = 2, K = 3, V = 2;
  for (int P : {1, 2, 4}) {
    std::vector<Tensor> M, S, dIn, dM, dS;
    for (int r = 0; r < P; ++r) {
      M.push_back(randomTensor({heads, K, K}, rng));
      S.push_back(randomTensor({heads, K, V}, rng));
      dIn.push_back(randomTensor({heads, K, V}, rng));
      dM.push_back(randomTensor({heads, K, K}, rng));
      dS.push_back(randomTensor({heads, K, V}, rng));
    }
    auto [gM, gS] = reverseChain(M, S, dIn);
    const double step = 1e-6;
    auto along = [&](double e) {
      std::vector<Tensor> m = M, s = S;
      for (int r = 0; r < P; ++r) {
        for (size_t i = 0; i < m[r].data.size(); ++i)
          m[r].data[i] += e * dM[r].data[i];
        for (size_t i = 0; i < s[r].data.size(); ++i)
          s[r].data[i] += e * dS[r].data[i];
      }
      double value = 0;
      std::vector<Tensor> in = chain(m, s);
      for (int r = 0; r < P; ++r)
        for (size_t i = 0; i < in[r].data.size(); ++i)
          value += dIn[r].data[i] * in[r].data[i];
      return value;
    };
    const double numeric = (along(step) - along(-step)) / (2 * step);
    double analytic = 0;
    for (int r = 0; r < P; ++r) {
      for (size_t i = 0; i < dM[r].data.size(); ++i)
        analytic += gM[r].data[i] * dM[r].data[i];
      for (size_t i = 0; i < dS[r].data.size(); ++i)
        analytic += gS[r].data[i] * dS[r].data[i];
    }
    EXPECT_NEAR(numeric, analytic, 1e-6 * (1 + std::abs(analytic)))
        << "P=" << P;
  }
}

TEST(PlanTest, ReverseStateExchangeIsTheChainsVJPBothWays) {
  std::mt19937 rng(13);
  for (bool scan : {false, true})
    for (int P = 1; P <= 8; ++P) {
      const int64_t heads = 2, K = 3, V = 2;
      std::vector<Tensor> M, S, dIn;
      for (int r = 0; r < P; ++r) {
        M.push_back(randomTensor({heads, K, K}, rng));
        S.push_back(randomTensor({heads, K, V}, rng));
        dIn.push_back(randomTensor({heads, K, V}, rng));
      }
      auto [dM, dS] = reverseChain(M, S, dIn);
      auto memory = simulateRanks(
          P,
          [&](int r, Plan &plan, std::string &error) {
            return planReverseStateExchange(planShape(dIn[r]), planShape(M[r]),
                                            planShape(S[r]), planShape(M[r]),
                                            planShape(S[r]), P, r, scan,
                                            GDN_F64, plan, error);
          },
          [&](int r, RankMemory &m) {
            m.input = M[r].bytes();
            m.input2 = S[r].bytes();
            m.input3 = dIn[r].bytes();
            m.output = garbage(M[r]);
            m.output2 = garbage(S[r]);
          });
      for (int r = 0; r < P; ++r) {
        const std::string where = std::string(scan ? "scan" : "all_gather") +
                                  " P=" + std::to_string(P) +
                                  " rank=" + std::to_string(r);
        expectEqual(dM[r], Tensor::fromBytes({heads, K, K}, memory[r].output),
                    "transition_grad " + where, 1e-12);
        expectEqual(dS[r], Tensor::fromBytes({heads, K, V}, memory[r].output2),
                    "partial_grad " + where, 1e-12);
      }
    }
}

TEST(PlanTest, SumsOfRowsUseTheOnesBeyondOneGemm) {
  // More rows than the context has ones: the sum continues in a second,
  // accumulating GEMM.
  const int64_t rows = kOnes + 3, elements = 2;
  Tensor stacked({rows, elements});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < elements; ++c)
      stacked.data[i * elements + c] = static_cast<double>(i % 7) + c;
  Plan plan;
  sumRows(plan, {Buffer::Input}, rows, elements, GDN_F64, {Buffer::Output});
  EXPECT_EQ(plan.steps.size(), 2u);
  std::vector<RankMemory> memory(1);
  memory[0].input = stacked.bytes();
  memory[0].output.assign(elements * sizeof(double), 0x7f);
  ASSERT_EQ(simulate({plan}, memory), "");
  Tensor expected({elements});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < elements; ++c)
      expected.data[c] += stacked.data[i * elements + c];
  expectEqual(expected, Tensor::fromBytes({elements}, memory[0].output),
              "sum of rows");
}

TEST(PlanTest, NewCollectivesRejectBadShapesWithTheShapes) {
  Plan plan;
  std::string error;
  EXPECT_FALSE(planAllReduce(Shape{{4, 8}, 2}, Shape{{8, 4}, 2}, 2, 0, GDN_BF16,
                             plan, error));
  EXPECT_EQ(error, "the output has shape [8, 4] but all_reduce of [4, 8] over "
                   "2 ranks gives [4, 8]");
  EXPECT_FALSE(planAllReduce(Shape{{4, 8}, 2}, Shape{{4, 8}, 2}, 2, 2, GDN_BF16,
                             plan, error));
  EXPECT_EQ(error, "rank 2 is not in a group of 2 ranks");
  EXPECT_FALSE(planLocalUnshard(Shape{{4, 8}, 2}, Shape{{4, 16}, 2}, 2, 0, 0,
                                plan, error));
  EXPECT_EQ(error, "the output has shape [4, 16] but local_unshard of [4, 8] "
                   "over 2 ranks along dim 0 gives [8, 8]");
  EXPECT_FALSE(planLocalUnshard(Shape{{4, 8}, 2}, Shape{{8, 8}, 2}, 2, 0, 2,
                                plan, error));
  EXPECT_EQ(error, "dim 2 is out of range for a tensor of rank 2");
  EXPECT_FALSE(
      planReplicatedToPartial(Shape{{4}, 4}, Shape{{4}, 2}, 2, 1, plan, error));
  EXPECT_EQ(error, "the output has another element type than the input; "
                   "replicated_to_partial of [4] over 2 ranks keeps it");
  EXPECT_FALSE(planReturnHalo(Shape{{3, 4}, 2}, Shape{{4, 8}, 2},
                              Shape{{4, 8}, 2}, 2, 0, GDN_BF16, plan, error));
  EXPECT_EQ(error, "the halo gradient has shape [3, 4] but the rows of the "
                   "shard gradient [4, 8] give [3, 8] (and dest's element "
                   "type)");
  EXPECT_FALSE(planReturnHalo(Shape{{3, 8}, 2}, Shape{{4, 8}, 2},
                              Shape{{5, 8}, 2}, 2, 0, GDN_BF16, plan, error));
  EXPECT_EQ(error, "the output has shape [5, 8] but return_halo onto a shard "
                   "gradient [4, 8] gives [4, 8]");
  const Shape m{{2, 3, 3}, 4}, s{{2, 3, 2}, 4};
  EXPECT_FALSE(planReverseStateExchange(Shape{{2, 3, 3}, 4}, m, s, m, s, 2, 0,
                                        false, GDN_F32, plan, error));
  EXPECT_EQ(error, "the incoming state gradient has shape [2, 3, 3] but a "
                   "partial state [2, 3, 2] ([HV, K, V]) gives [2, 3, 2]");
  EXPECT_FALSE(planReverseStateExchange(s, m, s, s, s, 2, 0, false, GDN_F32,
                                        plan, error));
  EXPECT_EQ(error, "the transition gradient has shape [2, 3, 2] but a partial "
                   "state [2, 3, 2] ([HV, K, V]) gives [2, 3, 3]");
  EXPECT_FALSE(planReverseStateExchange(s, m, s, m, m, 2, 0, false, GDN_F32,
                                        plan, error));
  EXPECT_EQ(error, "the partial state gradient has shape [2, 3, 3] but a "
                   "partial state [2, 3, 2] ([HV, K, V]) gives [2, 3, 2]");
  EXPECT_FALSE(planReverseStateExchange(s, m, s, m, s, 2, 0, false, GDN_BF16,
                                        plan, error));
  EXPECT_EQ(error, "the state summaries and their gradients must be f32 or "
                   "f64");
}

TEST(PlanTest, ReturnHaloNeedsWorkspaceOnlyWhereLaterHalosReach) {
  // Shards of 4 rows, halos of 6: rank 0's last 4 rows are in ranks 1's and
  // 2's halos (three slots of 4 rows of 16 bytes), the last rank gets
  // nothing back.
  std::string error;
  Plan first, last;
  ASSERT_TRUE(planReturnHalo(Shape{{6, 8}, 2}, Shape{{4, 8}, 2},
                             Shape{{4, 8}, 2}, 4, 0, GDN_BF16, first, error))
      << error;
  EXPECT_EQ(first.workspaceBytes, 3u * 4 * 16);
  ASSERT_TRUE(planReturnHalo(Shape{{6, 8}, 2}, Shape{{4, 8}, 2},
                             Shape{{4, 8}, 2}, 4, 3, GDN_BF16, last, error))
      << error;
  EXPECT_EQ(last.workspaceBytes, 0u);
  Plan reduce;
  ASSERT_TRUE(planAllReduce(Shape{{4, 8}, 2}, Shape{{4, 8}, 2}, 4, 0, GDN_BF16,
                            reduce, error));
  EXPECT_EQ(reduce.workspaceBytes, 0u);
}

TEST(PlanTest, TwoByteElementsMoveWhole) {
  // bf16 tensors move as bytes: an all_to_all of 2-byte elements lands each
  // element intact (checked through their bit patterns).
  const int P = 2;
  std::vector<std::vector<char>> inputs(P);
  for (int r = 0; r < P; ++r)
    for (int i = 0; i < 4 * 6; ++i) {
      uint16_t value = static_cast<uint16_t>(r * 1000 + i);
      inputs[r].insert(inputs[r].end(), reinterpret_cast<char *>(&value),
                       reinterpret_cast<char *>(&value) + 2);
    }
  std::vector<Plan> plans(P);
  std::vector<RankMemory> memory(P);
  for (int r = 0; r < P; ++r) {
    std::string error;
    ASSERT_TRUE(planAllToAll(Shape{{4, 6}, 2}, Shape{{8, 3}, 2}, P, r, 1, 0,
                             plans[r], error))
        << error;
    memory[r].input = inputs[r];
    memory[r].output.assign(8 * 3 * 2, 0);
  }
  ASSERT_EQ(simulate(plans, memory), "");
  for (int r = 0; r < P; ++r)
    for (int q = 0; q < P; ++q)
      for (int t = 0; t < 4; ++t)
        for (int c = 0; c < 3; ++c) {
          uint16_t got;
          std::memcpy(&got, memory[r].output.data() + ((q * 4 + t) * 3 + c) * 2, 2);
          EXPECT_EQ(got, q * 1000 + t * 6 + r * 3 + c);
        }
}

TEST(PlanTest, BadShapesAreRejectedWithTheShapes) {
  Plan plan;
  std::string error;
  EXPECT_FALSE(planAllGather(Shape{{4, 8}, 2}, Shape{{4, 8}, 2}, 2, 0, 0, plan,
                             error));
  EXPECT_EQ(error, "the output has shape [4, 8] but all_gather of [4, 8] over "
                   "2 ranks along dim 0 gives [8, 8]");
  EXPECT_FALSE(planReduceScatter(Shape{{5, 8}, 2}, Shape{{2, 8}, 2}, 2, 0, 0,
                                 GDN_BF16, plan, error));
  EXPECT_EQ(error, "the input [5, 8] has 5 entries along dim 0, not a multiple "
                   "of the 2 ranks");
  EXPECT_FALSE(planAllGather(Shape{{4, 8}, 2}, Shape{{8, 8}, 2}, 2, 2, 0, plan,
                             error));
  EXPECT_EQ(error, "rank 2 is not in a group of 2 ranks");
  EXPECT_FALSE(planAllToAll(Shape{{4, 8}, 2}, Shape{{8, 4}, 2}, 2, 0, 2, 0,
                            plan, error));
  EXPECT_EQ(error, "split_dim 2 is out of range for a tensor of rank 2");
  EXPECT_FALSE(planHaloExchange(Shape{{4, 8}, 2}, Shape{{3, 4}, 2}, 2, 0, plan,
                                error));
  EXPECT_EQ(error, "the halo has shape [3, 4] but the rows of the shard [4, 8] "
                   "give [3, 8] (and the input's element type)");
  EXPECT_FALSE(planStateExchange(Shape{{2, 3, 2}, 4}, Shape{{2, 3, 2}, 4},
                                 Shape{{2, 3, 2}, 4}, 2, 0, false, GDN_F32,
                                 plan, error));
  EXPECT_EQ(error, "the transition has shape [2, 3, 2] but a partial state "
                   "[2, 3, 2] ([HV, K, V]) gives [2, 3, 3]");
  EXPECT_FALSE(planAllGather(Shape{{4, 8}, 2}, Shape{{8, 8}, 4}, 2, 0, 0, plan,
                             error));
  EXPECT_EQ(error, "the output has another element type than the input; "
                   "all_gather of [4, 8] over 2 ranks along dim 0 keeps it");
}

TEST(PlanTest, WorkspaceIsOnlyUsedWhenPiecesAreStrided) {
  Plan outer, inner;
  std::string error;
  ASSERT_TRUE(planAllGather(Shape{{4, 8}, 2}, Shape{{8, 8}, 2}, 2, 0, 0, outer,
                            error));
  EXPECT_EQ(outer.workspaceBytes, 0u);
  ASSERT_TRUE(planAllGather(Shape{{4, 8}, 2}, Shape{{4, 16}, 2}, 2, 0, 1, inner,
                            error));
  EXPECT_EQ(inner.workspaceBytes, 2u * 4 * 8 * 2);
}

} // namespace
