//===- ThreadsTest.cpp - the threads backend's protocol on host threads ---===//
//
// The threads backend's host side (Threads.h) with a host stand-in for the
// streams: copies are memmoves, events are counted tokens. Every
// collective's plans run on P thread ranks through threads::lower and
// Member::exchange, against CollectiveReference.h; then the joins (sizes,
// duplicates, missing ranks, names reused), splits, and the failures: a
// rank that never comes, one that leaves mid-job, an abort, mismatched
// messages, and the stream waits and events of the failure paths.
//
//===----------------------------------------------------------------------===//

#include "Threads.h"
#include "CollectiveReference.h"
#include "PlanSimulator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

using namespace gdnrt;
using namespace gdnrt::testing;
using gdnrt::reference::Tensor;

namespace {

using Clock = std::chrono::steady_clock;

/// Events alive, over all host streams: every failure path must release
/// what it made.
std::atomic<int> liveEvents{0};
std::atomic<int> nextEvent{1};

/// A rank's stream on the host: copies run at once (the sender is blocked
/// until its receivers answer, so its sources hold still); events are
/// numbered tokens, and the stream remembers which ones it waited for.
class HostStream : public threads::Stream {
public:
  int record(std::shared_ptr<void> &event, std::string &) override {
    ++liveEvents;
    int *id = new int(nextEvent++);
    recorded.push_back(*id);
    event = std::shared_ptr<void>(id, [](void *token) {
      delete static_cast<int *>(token);
      --liveEvents;
    });
    return GDN_SUCCESS;
  }
  int wait(const std::shared_ptr<void> &event, std::string &) override {
    if (event)
      waited.push_back(*static_cast<int *>(event.get()));
    return GDN_SUCCESS;
  }
  int copy(void *into, const void *from, size_t bytes, std::string &) override {
    std::memmove(into, from, bytes);
    return GDN_SUCCESS;
  }
  std::vector<int> recorded, waited;
};

std::string freshName(const char *test) {
  static std::atomic<int> counter{0};
  return std::string("threads-test-") + test + "-" + std::to_string(counter++);
}

Shape planShape(const Tensor &t) { return Shape{t.shape, sizeof(double)}; }

Tensor randomTensor(std::vector<int64_t> shape, std::mt19937 &rng) {
  Tensor t(std::move(shape));
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (double &x : t.data)
    x = uniform(rng);
  return t;
}

void expectNear(const Tensor &expected, const std::vector<char> &bytes,
                double tolerance, const std::string &where) {
  Tensor actual = Tensor::fromBytes(expected.shape, bytes);
  ASSERT_EQ(bytes.size(), expected.data.size() * sizeof(double)) << where;
  for (size_t i = 0; i < expected.data.size(); ++i)
    ASSERT_NEAR(expected.data[i], actual.data[i],
                tolerance * (1 + std::abs(expected.data[i])))
        << where << " at element " << i;
}

/// Runs `plan` on this rank: local steps as the simulator runs them, each
/// group through the threads protocol, sums in rank order (f64).
int runPlan(const Plan &plan, threads::Member &member, RankMemory &memory,
            HostStream &stream, int64_t timeoutMs, std::string &error) {
  memory.workspace.assign(plan.workspaceBytes, 0x5a);
  memory.ones.assign(onesBytes(), 0);
  writeOnes(memory.ones.data());
  for (const Step &step : plan.steps) {
    if (step.kind != Step::Communicate) {
      error = runLocalStep(step, memory, member.rank());
      if (!error.empty())
        return GDN_ERROR_INVALID_ARGUMENT;
      continue;
    }
    std::vector<double> scratch(
        threads::scratchBytes(step.group, member.size()) / sizeof(double) + 1);
    bool inBounds = true;
    auto at = [&](Address address) {
      char *pointer = addressOf(memory, address, 0);
      inBounds &= pointer != nullptr;
      return pointer;
    };
    threads::Lowered lowered =
        threads::lower(step.group, member.size(), at,
                       reinterpret_cast<char *>(scratch.data()));
    if (!inBounds) {
      error = "a message addresses past its buffer";
      return GDN_ERROR_INVALID_ARGUMENT;
    }
    if (int code = member.exchange(lowered.gives, lowered.takes, stream,
                                   timeoutMs, error))
      return code;
    for (const threads::Sum &sum : lowered.sums) {
      if (sum.dtype != GDN_F64) {
        error = "the host sums f64 only";
        return GDN_ERROR_INVALID_ARGUMENT;
      }
      const size_t count = sum.bytes / sizeof(double);
      std::vector<double> total(count, 0.0);
      for (int q = 0; q < sum.count; ++q)
        for (size_t i = 0; i < count; ++i) {
          double piece;
          std::memcpy(&piece, sum.pieces + q * sum.pitch + i * sizeof(double),
                      sizeof(double));
          total[i] += piece;
        }
      std::memcpy(sum.staging, total.data(), sum.bytes);
      std::memcpy(sum.result, sum.staging, sum.bytes);
    }
  }
  return GDN_SUCCESS;
}

using Planner = std::function<bool(int rank, Plan &, std::string &)>;
using Fill = std::function<void(int rank, RankMemory &)>;

/// P thread ranks join a fresh group and run their plans; every rank must
/// succeed. Returns their memory.
std::vector<RankMemory> runOnThreads(int P, const Planner &planner,
                                     const Fill &fill) {
  const std::string name = freshName("plans");
  std::vector<RankMemory> memory(P);
  std::vector<std::string> errors(P);
  std::vector<std::thread> ranks;
  for (int r = 0; r < P; ++r)
    ranks.emplace_back([&, r] {
      std::unique_ptr<threads::Member> member;
      std::string &error = errors[r];
      if (threads::join(name, r, P, 10000, member, error))
        return;
      Plan plan;
      if (!planner(r, plan, error))
        return;
      fill(r, memory[r]);
      HostStream stream;
      runPlan(plan, *member, memory[r], stream, 10000, error);
    });
  for (std::thread &rank : ranks)
    rank.join();
  for (int r = 0; r < P; ++r)
    EXPECT_EQ(errors[r], "") << "rank " << r << " of " << P;
  EXPECT_EQ(liveEvents.load(), 0);
  return memory;
}

TEST(ThreadsTest, EveryCollectivesPlanRunsOnThreadRanks) {
  using namespace gdnrt::reference;
  std::mt19937 rng(21);
  for (int P : {1, 2, 3, 5}) {
    const std::string at = " P=" + std::to_string(P);
    for (int dim : {0, 1, 2}) {
      std::vector<Tensor> parts;
      for (int r = 0; r < P; ++r)
        parts.push_back(randomTensor({3, 2, 4}, rng));
      Tensor gathered = concat(parts, dim);
      auto memory = runOnThreads(
          P,
          [&](int r, Plan &plan, std::string &error) {
            return planAllGather(planShape(parts[r]), planShape(gathered), P, r,
                                 dim, plan, error);
          },
          [&](int r, RankMemory &m) {
            m.input = parts[r].bytes();
            m.output.assign(gathered.data.size() * sizeof(double), 0x7f);
          });
      for (int r = 0; r < P; ++r)
        expectNear(gathered, memory[r].output, 0, "all_gather" + at);

      std::vector<int64_t> big = {3, 2, 4};
      big[dim] *= P;
      std::vector<Tensor> summands;
      for (int r = 0; r < P; ++r)
        summands.push_back(randomTensor(big, rng));
      Tensor total = sum(summands);
      memory = runOnThreads(
          P,
          [&](int r, Plan &plan, std::string &error) {
            return planReduceScatter(planShape(summands[r]),
                                     planShape(slice(total, dim, P, r)), P, r,
                                     dim, GDN_F64, plan, error);
          },
          [&](int r, RankMemory &m) {
            m.input = summands[r].bytes();
            m.output.assign(total.data.size() / P * sizeof(double), 0x7f);
          });
      for (int r = 0; r < P; ++r)
        expectNear(slice(total, dim, P, r), memory[r].output, 1e-15,
                   "reduce_scatter" + at);
    }
    for (auto [split, concatDim] : {std::pair{0, 1}, std::pair{1, 0}}) {
      std::vector<Tensor> parts;
      for (int r = 0; r < P; ++r)
        parts.push_back(randomTensor({2 * P, 3 * P, 2}, rng));
      std::vector<Tensor> expected;
      for (int r = 0; r < P; ++r) {
        std::vector<Tensor> pieces;
        for (int q = 0; q < P; ++q)
          pieces.push_back(slice(parts[q], split, P, r));
        expected.push_back(concat(pieces, concatDim));
      }
      auto memory = runOnThreads(
          P,
          [&](int r, Plan &plan, std::string &error) {
            return planAllToAll(planShape(parts[r]), planShape(expected[r]), P,
                                r, split, concatDim, plan, error);
          },
          [&](int r, RankMemory &m) {
            m.input = parts[r].bytes();
            m.output.assign(expected[r].data.size() * sizeof(double), 0x7f);
          });
      for (int r = 0; r < P; ++r)
        expectNear(expected[r], memory[r].output, 0, "all_to_all" + at);
    }
    for (int64_t shard : {0, 2, 5})
      for (int64_t rows : {1, 3, 7}) {
        std::vector<Tensor> shards, grads, dests;
        for (int r = 0; r < P; ++r) {
          shards.push_back(randomTensor({shard, 3}, rng));
          grads.push_back(randomTensor({rows, 3}, rng));
          dests.push_back(randomTensor({shard, 3}, rng));
        }
        auto memory = runOnThreads(
            P,
            [&](int r, Plan &plan, std::string &error) {
              return planHaloExchange(planShape(shards[r]),
                                      Shape{{rows, 3}, sizeof(double)}, P, r,
                                      plan, error);
            },
            [&](int r, RankMemory &m) {
              m.input = shards[r].bytes();
              m.output.assign(rows * 3 * sizeof(double), 0x7f);
            });
        for (int r = 0; r < P; ++r)
          expectNear(halo(shards, r, rows), memory[r].output, 0,
                     "halo" + at + " shard=" + std::to_string(shard));
        std::vector<Tensor> returned = returnHalo(grads, dests);
        memory = runOnThreads(
            P,
            [&](int r, Plan &plan, std::string &error) {
              return planReturnHalo(planShape(grads[r]), planShape(dests[r]),
                                    planShape(dests[r]), P, r, GDN_F64, plan,
                                    error);
            },
            [&](int r, RankMemory &m) {
              m.input = grads[r].bytes();
              m.input2 = dests[r].bytes();
              m.output.assign(dests[r].data.size() * sizeof(double), 0x7f);
            });
        for (int r = 0; r < P; ++r)
          expectNear(returned[r], memory[r].output, 1e-15,
                     "return_halo" + at + " shard=" + std::to_string(shard));
      }
    std::vector<Tensor> summands;
    for (int r = 0; r < P; ++r)
      summands.push_back(randomTensor({5, 3}, rng));
    auto memory = runOnThreads(
        P,
        [&](int r, Plan &plan, std::string &error) {
          return planAllReduce(planShape(summands[r]), planShape(summands[r]),
                               P, r, GDN_F64, plan, error);
        },
        [&](int r, RankMemory &m) {
          m.input = summands[r].bytes();
          m.output.assign(15 * sizeof(double), 0x7f);
        });
    for (int r = 0; r < P; ++r) {
      expectNear(sum(summands), memory[r].output, 1e-15, "all_reduce" + at);
      EXPECT_EQ(memory[r].output, memory[0].output) << "all_reduce" << at;
    }
    const int64_t heads = 2, K = 3, V = 2;
    std::vector<Tensor> M, S, dIn;
    for (int r = 0; r < P; ++r) {
      M.push_back(randomTensor({heads, K, K}, rng));
      S.push_back(randomTensor({heads, K, V}, rng));
      dIn.push_back(randomTensor({heads, K, V}, rng));
    }
    std::vector<Tensor> incoming = chain(M, S);
    auto [dM, dS] = reverseChain(M, S, dIn);
    for (bool scan : {false, true}) {
      memory = runOnThreads(
          P,
          [&](int r, Plan &plan, std::string &error) {
            return planStateExchange(planShape(M[r]), planShape(S[r]),
                                     planShape(S[r]), P, r, scan, GDN_F64, plan,
                                     error);
          },
          [&](int r, RankMemory &m) {
            m.input = M[r].bytes();
            m.input2 = S[r].bytes();
            m.output.assign(heads * K * V * sizeof(double), 0x7f);
          });
      for (int r = 0; r < P; ++r)
        expectNear(incoming[r], memory[r].output, 1e-12,
                   std::string(scan ? "scan" : "gathered") + " chain" + at);
      memory = runOnThreads(
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
            m.output.assign(heads * K * K * sizeof(double), 0x7f);
            m.output2.assign(heads * K * V * sizeof(double), 0x7f);
          });
      for (int r = 0; r < P; ++r) {
        expectNear(dM[r], memory[r].output, 1e-12, "transition_grad" + at);
        expectNear(dS[r], memory[r].output2, 1e-12, "partial_grad" + at);
      }
    }
  }
}

/// What one thread rank's attempt ended with.
struct Outcome {
  int code = -1;
  std::string error;
  double seconds = 0;
};

/// Ranks `ranks` of a group of `size` join `name`; returns their outcomes
/// (the members are left again at once).
std::vector<Outcome> joinAll(const std::string &name, std::vector<int> ranks,
                             std::vector<int> sizes, int64_t timeoutMs) {
  std::vector<Outcome> outcomes(ranks.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ranks.size(); ++i)
    threads.emplace_back([&, i] {
      const auto start = Clock::now();
      std::unique_ptr<threads::Member> member;
      outcomes[i].code = threads::join(name, ranks[i], sizes[i], timeoutMs,
                                       member, outcomes[i].error);
      outcomes[i].seconds =
          std::chrono::duration<double>(Clock::now() - start).count();
    });
  for (std::thread &thread : threads)
    thread.join();
  return outcomes;
}

TEST(ThreadsTest, JoinMeetsEveryRankAndFreesTheNameAfterTheLastLeaves) {
  const std::string name = freshName("join");
  for (int job = 0; job < 2; ++job) {
    std::vector<std::unique_ptr<threads::Member>> members(4);
    std::vector<std::thread> threads;
    std::vector<int> codes(4, -1);
    for (int r : {3, 1, 0, 2})
      threads.emplace_back([&, r] {
        std::string error;
        codes[r] = threads::join(name, r, 4, 10000, members[r], error);
        EXPECT_EQ(error, "");
      });
    for (std::thread &thread : threads)
      thread.join();
    for (int r = 0; r < 4; ++r) {
      ASSERT_EQ(codes[r], GDN_SUCCESS) << "job " << job;
      EXPECT_EQ(members[r]->rank(), r);
      EXPECT_EQ(members[r]->size(), 4);
      EXPECT_EQ(members[r]->name(), name);
    }
    // While the job runs, the name is taken.
    auto refused = joinAll(name, {0}, {1}, 1000);
    EXPECT_EQ(refused[0].code, GDN_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(refused[0].error,
              "rank 0 of 1: the threads group \"" + name +
                  "\" is in use by a job of 4 ranks; a later job can use the "
                  "name once every rank of that one has destroyed its "
                  "communicator");
    for (auto &member : members)
      member.reset(); // the next job reuses the name
  }
  EXPECT_EQ(joinAll(name, {0}, {1}, 1000)[0].code, GDN_SUCCESS);
}

TEST(ThreadsTest, JoinTimesOutNamingTheRanksThatNeverCame) {
  const std::string name = freshName("missing");
  auto outcomes = joinAll(name, {0, 2}, {4, 4}, 300);
  for (const Outcome &outcome : outcomes) {
    EXPECT_EQ(outcome.code, GDN_ERROR_TIMEOUT);
    EXPECT_LT(outcome.seconds, 5.0);
    EXPECT_GE(outcome.seconds, 0.25);
  }
  EXPECT_EQ(outcomes[0].error, "rank 0 of 4: only 2 of 4 ranks joined the "
                               "threads group \"" +
                                   name +
                                   "\" within 300 ms (missing ranks: 1, 3)");
  EXPECT_EQ(outcomes[1].error, "rank 2 of 4: only 2 of 4 ranks joined the "
                               "threads group \"" +
                                   name +
                                   "\" within 300 ms (missing ranks: 1, 3)");
  // The failed meeting is gone: the name starts afresh.
  EXPECT_EQ(joinAll(name, {0}, {1}, 1000)[0].code, GDN_SUCCESS);
}

TEST(ThreadsTest, JoinRefusesAnotherSizeAndATakenRank) {
  const std::string name = freshName("refuse");
  // Rank 1 asks for 3 ranks of a group rank 0 started with 2; it is refused
  // and rank 0, still short of its peer, times out.
  std::unique_ptr<threads::Member> member;
  std::string error;
  std::thread first([&] {
    Outcome outcome;
    outcome.code = threads::join(name, 0, 2, 600, member, outcome.error);
    EXPECT_EQ(outcome.code, GDN_ERROR_TIMEOUT) << outcome.error;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto refused = joinAll(name, {1, 0}, {3, 2}, 300);
  first.join();
  EXPECT_EQ(refused[0].code, GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(refused[0].error,
            "rank 1 of 3: asked for 3 ranks but the threads group \"" + name +
                "\" has 2 (every rank must pass the same size)");
  EXPECT_EQ(refused[1].code, GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(refused[1].error, "rank 0 of 2: two threads claim rank 0 of the "
                              "threads group \"" +
                                  name + "\"");
  EXPECT_EQ(threads::join("", 0, 1, 100, member, error),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error,
            "the rendezvous \"threads:\" names no group; write threads:<name>");
}

/// P ranks joined to one group, each run by `body` on its own thread.
void onRanks(int P, const std::function<void(int, threads::Member &)> &body) {
  const std::string name = freshName("ranks");
  std::vector<std::thread> threads;
  for (int r = 0; r < P; ++r)
    threads.emplace_back([&, r] {
      std::unique_ptr<threads::Member> member;
      std::string error;
      ASSERT_EQ(threads::join(name, r, P, 10000, member, error), GDN_SUCCESS)
          << error;
      body(r, *member);
    });
  for (std::thread &thread : threads)
    thread.join();
}

/// Rank r's part of an all-gather of `bytes` per rank.
struct Gather {
  std::vector<char> mine, all;
  threads::Lowered lowered;
  Gather(int rank, int size, size_t bytes)
      : mine(bytes, static_cast<char>(rank)), all(size * bytes) {
    Group group;
    group.messages.push_back(
        {Message::AllGather, {Buffer::Input}, {Buffer::Output}, bytes});
    lowered = threads::lower(
        group, size,
        [&](Address address) {
          return address.buffer == Buffer::Input ? mine.data() : all.data();
        },
        nullptr);
  }
};

TEST(ThreadsTest, ARankThatNeverComesTimesOutEveryWaitingRank) {
  std::atomic<int> finished{0};
  std::vector<Outcome> outcomes(3);
  onRanks(3, [&](int r, threads::Member &member) {
    if (r == 2) {
      // Joined, but never reaches the collective (until the others gave up).
      while (finished < 2)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return;
    }
    Gather gather(r, 3, 64);
    HostStream stream;
    const auto start = Clock::now();
    outcomes[r].code =
        member.exchange(gather.lowered.gives, gather.lowered.takes, stream, 300,
                        outcomes[r].error);
    outcomes[r].seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    ++finished;
  });
  for (int r : {0, 1}) {
    EXPECT_EQ(outcomes[r].code, GDN_ERROR_TIMEOUT) << outcomes[r].error;
    EXPECT_GE(outcomes[r].seconds, 0.25);
    EXPECT_LT(outcomes[r].seconds, 3.0);
    EXPECT_NE(outcomes[r].error.find(
                  "waited 300 ms for rank 2's all_gather data (rank 2 is "
                  "missing or stuck, or called another collective)"),
              std::string::npos)
        << outcomes[r].error;
  }
  EXPECT_EQ(liveEvents.load(), 0);
}

TEST(ThreadsTest, ARankThatLeavesMidJobFailsTheOthersPromptly) {
  std::vector<Outcome> outcomes(3);
  onRanks(3, [&](int r, threads::Member &member) {
    if (r == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      member.leave(); // its communicator destroyed mid-job
      return;
    }
    Gather gather(r, 3, 64);
    HostStream stream;
    const auto start = Clock::now();
    outcomes[r].code =
        member.exchange(gather.lowered.gives, gather.lowered.takes, stream,
                        20000, outcomes[r].error);
    outcomes[r].seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    // Later calls fail at once with the same reason.
    std::string later;
    EXPECT_EQ(member.exchange({}, {}, stream, 20000, later), GDN_ERROR_NCCL);
    EXPECT_NE(later.find("was aborted earlier"), std::string::npos) << later;
  });
  for (int r : {0, 2}) {
    EXPECT_EQ(outcomes[r].code, GDN_ERROR_NCCL) << outcomes[r].error;
    EXPECT_LT(outcomes[r].seconds, 5.0);
    EXPECT_NE(outcomes[r].error.find("rank 1 destroyed its communicator"),
              std::string::npos)
        << outcomes[r].error;
  }
  EXPECT_EQ(liveEvents.load(), 0);
}

TEST(ThreadsTest, AnAbortEndsEveryPendingAndLaterCallWithItsReason) {
  Outcome pending;
  onRanks(2, [&](int r, threads::Member &member) {
    HostStream stream;
    if (r == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      member.abort(GDN_ERROR_CUDA, "rank 1 of 2: cudaMemcpyAsync failed");
      return;
    }
    std::vector<char> into(8);
    const auto start = Clock::now();
    pending.code = member.exchange(
        {}, {{1, threads::Channel::PointToPoint, "send", into.data(), 8}},
        stream, 20000, pending.error);
    pending.seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    std::string later;
    EXPECT_EQ(member.exchange({}, {}, stream, 20000, later), GDN_ERROR_CUDA);
    int code = 0;
    EXPECT_EQ(member.aborted(&code), "rank 1 of 2: cudaMemcpyAsync failed");
    EXPECT_EQ(code, GDN_ERROR_CUDA);
  });
  EXPECT_EQ(pending.code, GDN_ERROR_CUDA);
  EXPECT_LT(pending.seconds, 5.0);
  EXPECT_NE(pending.error.find("while this rank waited for rank 1's send, the "
                               "threads group"),
            std::string::npos)
      << pending.error;
  EXPECT_NE(pending.error.find("was aborted: rank 1 of 2: cudaMemcpyAsync "
                               "failed"),
            std::string::npos)
      << pending.error;
}

TEST(ThreadsTest, MismatchedMessagesAreNamed) {
  std::vector<Outcome> outcomes(2);
  onRanks(2, [&](int r, threads::Member &member) {
    Gather gather(r, 2, r == 0 ? 16 : 32);
    HostStream stream;
    outcomes[r].code =
        member.exchange(gather.lowered.gives, gather.lowered.takes, stream,
                        5000, outcomes[r].error);
  });
  for (int r : {0, 1})
    EXPECT_EQ(outcomes[r].code, GDN_ERROR_INVALID_ARGUMENT)
        << outcomes[r].error;
  const std::string both = outcomes[0].error + outcomes[1].error;
  EXPECT_NE(both.find("'s next message is all_gather data of "),
            std::string::npos)
      << both;
  EXPECT_NE(both.find("the ranks did not call the same collectives in the "
                      "same order"),
            std::string::npos)
      << both;
  EXPECT_EQ(liveEvents.load(), 0);
}

TEST(ThreadsTest, StreamsWaitForTheirReadersEvenWhenTheGroupFails) {
  // Rank 0 sends to ranks 1 and 2; rank 1 reads, rank 2 never comes. Rank 0
  // times out, but its stream still waits for rank 1's copies, so that no
  // later work of rank 0 overwrites the source rank 1 is reading.
  std::vector<char> source(32, 7);
  std::vector<std::vector<int>> recorded(3), waited(3);
  std::vector<int> codes(3, -1);
  std::atomic<bool> done{false};
  onRanks(3, [&](int r, threads::Member &member) {
    HostStream stream;
    std::string error;
    std::vector<char> into(32, 0);
    if (r == 0)
      codes[r] = member.exchange(
          {{1, threads::Channel::PointToPoint, "send", source.data(), 32},
           {2, threads::Channel::PointToPoint, "send", source.data(), 32}},
          {}, stream, 300, error);
    else if (r == 1)
      codes[r] = member.exchange(
          {}, {{0, threads::Channel::PointToPoint, "send", into.data(), 32}},
          stream, 300, error);
    else
      while (!done)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (r == 0)
      done = true;
    if (r == 1) {
      EXPECT_EQ(into, source);
    }
    recorded[r] = stream.recorded;
    waited[r] = stream.waited;
  });
  EXPECT_EQ(codes[0], GDN_ERROR_TIMEOUT);
  EXPECT_EQ(codes[1], GDN_SUCCESS);
  ASSERT_EQ(recorded[1].size(), 1u); // its copies' event
  EXPECT_EQ(waited[0], recorded[1]);
  EXPECT_EQ(waited[1], recorded[0]); // the send's event
  EXPECT_EQ(liveEvents.load(), 0);
}

TEST(ThreadsTest, SplitsMakeIndependentGroupsAndNameMissingRanks) {
  // A 2 x 2 grid, SP innermost: SP groups {0, 1} and {2, 3}, CP groups
  // {0, 2} and {1, 3}.
  std::vector<std::string> childNames(4);
  onRanks(4, [&](int r, threads::Member &member) {
    const int sp = r % 2, cp = r / 2;
    std::unique_ptr<threads::Member> spGroup, cpGroup;
    std::string error;
    ASSERT_EQ(member.split("0.sp" + std::to_string(cp), "g/sp",
                           {cp * 2, cp * 2 + 1}, sp, 5000, spGroup, error),
              GDN_SUCCESS)
        << error;
    ASSERT_EQ(member.split("0.cp" + std::to_string(sp), "g/cp", {sp, sp + 2},
                           cp, 5000, cpGroup, error),
              GDN_SUCCESS)
        << error;
    EXPECT_EQ(spGroup->rank(), sp);
    EXPECT_EQ(cpGroup->rank(), cp);
    EXPECT_EQ(spGroup->size(), 2);
    // An exchange on the SP group sees only its row of the grid.
    Gather gather(r, 2, 4);
    HostStream stream;
    ASSERT_EQ(spGroup->exchange(gather.lowered.gives, gather.lowered.takes,
                                stream, 5000, error),
              GDN_SUCCESS)
        << error;
    EXPECT_EQ(gather.all[0], static_cast<char>(cp * 2));
    EXPECT_EQ(gather.all[4], static_cast<char>(cp * 2 + 1));
  });
  // Rank 1 never splits: rank 0 names it and aborts the parent.
  std::vector<Outcome> outcomes(2);
  onRanks(2, [&](int r, threads::Member &member) {
    if (r == 1)
      return;
    std::unique_ptr<threads::Member> child;
    outcomes[r].code = member.split("0.sp0", "g/sp0", {0, 1}, 0, 300, child,
                                    outcomes[r].error);
    EXPECT_NE(member.aborted(), "");
  });
  EXPECT_EQ(outcomes[0].code, GDN_ERROR_TIMEOUT);
  EXPECT_NE(outcomes[0].error.find("only 1 of 2 ranks reached "
                                   "gdnrt_comm_split_grid for the threads "
                                   "group \"g/sp0\" within 300 ms (missing "
                                   "ranks of \""),
            std::string::npos)
      << outcomes[0].error;
  EXPECT_NE(outcomes[0].error.find("\": 1)"), std::string::npos)
      << outcomes[0].error;
}

} // namespace
