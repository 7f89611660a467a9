//===- RendezvousTest.cpp - file and TCP rendezvous, with threads as ranks ===//

#include "Rendezvous.h"
#include "LoopbackPort.h"

#include "gdn/runtime/gdnrt.h"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

using namespace gdnrt;

namespace {

using Id = std::array<char, GDNRT_UNIQUE_ID_BYTES>;

Id makeId(char seed) {
  Id id;
  for (size_t i = 0; i < id.size(); ++i)
    id[i] = static_cast<char>(seed + i);
  return id;
}

std::string freshDirectory() {
  char pattern[] = "/tmp/gdnrt-test-XXXXXX";
  return mkdtemp(pattern);
}

struct Outcome {
  int code = -1;
  std::string error;
  Id id{};
  std::vector<ProgressBoard::Peer> peers; // where each rank's service answers
};

/// The progress service's port each rank says it has in runRanks.
uint16_t progressPortOf(int rank) {
  return static_cast<uint16_t>(41000 + rank);
}

/// Runs ranks `ranks` of a world of `size` as threads; rank 0 (if listed)
/// publishes makeId(7).
std::vector<Outcome> runRanks(const std::string &rendezvous,
                              std::vector<int> ranks, int size,
                              int64_t timeoutMs, std::vector<int> sizes = {},
                              std::vector<int64_t> timeouts = {}) {
  std::vector<Outcome> outcomes(ranks.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ranks.size(); ++i)
    threads.emplace_back([&, i] {
      Outcome &outcome = outcomes[i];
      if (ranks[i] == 0)
        outcome.id = makeId(7);
      outcome.code = exchangeUniqueId(
          rendezvous, ranks[i], sizes.empty() ? size : sizes[i],
          timeouts.empty() ? timeoutMs : timeouts[i], outcome.id.data(),
          outcome.error, progressPortOf(ranks[i]), &outcome.peers);
    });
  for (std::thread &thread : threads)
    thread.join();
  return outcomes;
}

TEST(RendezvousTest, FileHandsRankZerosIdToEveryRank) {
  std::string dir = freshDirectory();
  auto outcomes = runRanks("file:" + dir + "/id", {3, 1, 0, 2}, 4, 10000);
  for (const Outcome &outcome : outcomes) {
    EXPECT_EQ(outcome.code, GDN_SUCCESS) << outcome.error;
    EXPECT_EQ(outcome.id, makeId(7));
    EXPECT_TRUE(outcome.peers.empty()); // its board is a file beside the id
  }
  std::remove((dir + "/id").c_str());
  rmdir(dir.c_str());
}

TEST(RendezvousTest, FileRefusesAStaleFile) {
  std::string dir = freshDirectory();
  std::string path = dir + "/id";
  ASSERT_EQ(runRanks("file:" + path, {0}, 2, 1000)[0].code, GDN_SUCCESS);
  Outcome second = runRanks("file:" + path, {0}, 2, 1000)[0];
  EXPECT_EQ(second.code, GDN_ERROR_SYSTEM);
  EXPECT_NE(second.error.find("already exists"), std::string::npos)
      << second.error;
  std::remove(path.c_str());
  rmdir(dir.c_str());
}

TEST(RendezvousTest, FileTimesOutWithoutRankZero) {
  std::string dir = freshDirectory();
  auto start = std::chrono::steady_clock::now();
  Outcome outcome = runRanks("file:" + dir + "/id", {2}, 3, 200)[0];
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(outcome.code, GDN_ERROR_TIMEOUT);
  EXPECT_EQ(outcome.error, "rank 2 of 3: no id appeared at " + dir +
                               "/id within 200 ms; is rank 0 running, with "
                               "the same rendezvous?");
  rmdir(dir.c_str());
}

TEST(RendezvousTest, FileRejectsAMismatchedWorldSize) {
  std::string dir = freshDirectory();
  auto outcomes = runRanks("file:" + dir + "/id", {0, 1}, 0, 2000, {2, 3});
  EXPECT_EQ(outcomes[0].code, GDN_SUCCESS);
  EXPECT_EQ(outcomes[1].code, GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(outcomes[1].error.find("different world sizes"), std::string::npos)
      << outcomes[1].error;
  std::remove((dir + "/id").c_str());
  rmdir(dir.c_str());
}

TEST(RendezvousTest, TcpHandsRankZerosIdToEveryRank) {
  const std::string where =
      "tcp:127.0.0.1:" + std::to_string(unusedLoopbackPort());
  // Peers start before rank 0 listens: they retry until it does.
  auto outcomes = runRanks(where, {2, 3, 1, 0}, 4, 10000);
  for (const Outcome &outcome : outcomes) {
    EXPECT_EQ(outcome.code, GDN_SUCCESS) << outcome.error;
    EXPECT_EQ(outcome.id, makeId(7));
    // And where every rank's progress service answers: the port it said,
    // at the address rank 0 saw it connect from (rank 0's: the address
    // the others reached it at).
    ASSERT_EQ(outcome.peers.size(), 4u);
    for (int rank = 0; rank < 4; ++rank) {
      EXPECT_EQ(outcome.peers[rank].port, progressPortOf(rank));
      if (rank != 0 || &outcome != &outcomes[3]) // rank 0 needs not its own
        EXPECT_EQ(outcome.peers[rank].host, "127.0.0.1");
    }
  }
}

TEST(RendezvousTest, TcpRankZeroNamesTheMissingRanks) {
  const std::string where =
      "tcp:127.0.0.1:" + std::to_string(unusedLoopbackPort());
  // The peer waits longer than rank 0, so it hears rank 0 give up.
  auto outcomes = runRanks(where, {0, 2}, 4, 500, {}, {500, 10000});
  EXPECT_EQ(outcomes[0].code, GDN_ERROR_TIMEOUT);
  EXPECT_EQ(outcomes[0].error, "rank 0 of 4: only 1 of 3 peers connected to " +
                                   where +
                                   " within 500 ms (missing ranks: 1, 3)");
  EXPECT_EQ(outcomes[1].code, GDN_ERROR_INVALID_ARGUMENT);
  // The connected peer learns why instead of waiting.
  EXPECT_NE(outcomes[1].error.find("rank 0 gave up"), std::string::npos)
      << outcomes[1].error;
}

TEST(RendezvousTest, TcpRefusesMismatchedSizesAndDuplicateRanks) {
  const std::string where =
      "tcp:127.0.0.1:" + std::to_string(unusedLoopbackPort());
  auto outcomes = runRanks(where, {0, 1}, 0, 500, {2, 3});
  EXPECT_EQ(outcomes[1].code, GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(outcomes[1].error.find("world size 3 but rank 0 with 2"),
            std::string::npos)
      << outcomes[1].error;
  EXPECT_EQ(outcomes[0].code, GDN_ERROR_TIMEOUT);
}

TEST(RendezvousTest, TcpRefusesAnotherVersionAndASilentJoinerAtOnce) {
  // Two raw clients of rank 0's listener: one that says nothing, then one
  // speaking the first version of the protocol. Neither holds rank 0: the
  // second is refused with the reason, and the real rank 1 still joins.
  const uint16_t port = unusedLoopbackPort();
  const std::string where = "tcp:127.0.0.1:" + std::to_string(port);
  std::thread rankZero([&] {
    Id id = makeId(7);
    std::string error;
    EXPECT_EQ(exchangeUniqueId(where, 0, 2, 10000, id.data(), error),
              GDN_SUCCESS)
        << error;
  });
  auto connectRaw = [&] {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    for (int attempt = 0; attempt < 500; ++attempt) {
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      if (connect(fd, reinterpret_cast<sockaddr *>(&address),
                  sizeof(address)) == 0)
        return fd;
      close(fd);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  };
  const int silent = connectRaw();
  const int old = connectRaw();
  ASSERT_GE(silent, 0);
  ASSERT_GE(old, 0);
  const char hello[16] = {'G', 'D', 'N', 'R', 'T', 'H', 'I', '1',
                          0,   0,   0,   1,   0,   0,   0,   2};
  ASSERT_EQ(send(old, hello, sizeof(hello), 0), 16);
  char reply[257] = {0};
  size_t got = 0;
  while (got < sizeof(reply)) {
    const ssize_t n = recv(old, reply + got, sizeof(reply) - got, 0);
    if (n <= 0)
      break;
    got += static_cast<size_t>(n);
  }
  ASSERT_EQ(got, sizeof(reply));
  EXPECT_EQ(reply[0], 1); // refused
  EXPECT_EQ(std::string(reply + 1), "it speaks rendezvous version 1 and rank "
                                    "0 version 2: run the same gdnrt on every "
                                    "rank");
  Outcome joined = runRanks(where, {1}, 2, 10000)[0];
  EXPECT_EQ(joined.code, GDN_SUCCESS) << joined.error;
  EXPECT_EQ(joined.id, makeId(7));
  rankZero.join();
  close(silent);
  close(old);
}

TEST(RendezvousTest, TcpPeerTimesOutWithoutRankZero) {
  const std::string where =
      "tcp:127.0.0.1:" + std::to_string(unusedLoopbackPort());
  Outcome outcome = runRanks(where, {1}, 2, 200)[0];
  EXPECT_EQ(outcome.code, GDN_ERROR_TIMEOUT);
  EXPECT_EQ(outcome.error, "rank 1 of 2: rank 0 did not answer at " + where +
                               " within 200 ms; is it running, with the same "
                               "rendezvous?");
}

TEST(RendezvousTest, BadSpecificationsSayWhatToWrite) {
  Id id{};
  std::string error;
  EXPECT_EQ(exchangeUniqueId("nfs:/x", 1, 2, 100, id.data(), error),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error, "the rendezvous \"nfs:/x\" is neither file:<path> nor "
                   "tcp:<host>:<port>");
  EXPECT_EQ(exchangeUniqueId("tcp:localhost", 1, 2, 100, id.data(), error),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("has no port"), std::string::npos);
  EXPECT_EQ(exchangeUniqueId("file:/tmp/x", 2, 2, 100, id.data(), error),
            GDN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error, "rank 2 is not in a world of 2 ranks");
  // One rank needs no rendezvous at all.
  EXPECT_EQ(
      exchangeUniqueId("file:/nonexistent/dir/id", 0, 1, 100, id.data(), error),
      GDN_SUCCESS);
}

} // namespace
