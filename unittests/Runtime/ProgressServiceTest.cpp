//===- ProgressServiceTest.cpp - the progress board over TCP, on the CPU --===//

#include "ProgressService.h"
#include "LoopbackPort.h"
#include "ProgressBoard.h"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

using namespace gdnrt;

namespace {

ProgressService &service() {
  std::string error;
  ProgressService *started = ProgressService::get(error);
  EXPECT_NE(started, nullptr) << error;
  return *started;
}

TEST(ProgressService, AnswersForThePublishedBoardsAndRanksOnly) {
  ProgressService &here = service();
  EXPECT_GT(here.port(), 0);
  std::string error;
  EXPECT_EQ(ProgressService::get(error), &here); // one a process
  uint64_t slot = 7, other = 9, value = 123;
  here.publish(42, 1, &slot);
  here.publish(42, 2, &other); // a second rank of the job in this process
  ASSERT_TRUE(
      ProgressService::ask("127.0.0.1", here.port(), 42, 1, 1000, value));
  EXPECT_EQ(value, 7u);
  ASSERT_TRUE(
      ProgressService::ask("127.0.0.1", here.port(), 42, 2, 1000, value));
  EXPECT_EQ(value, 9u);
  // It reads the slot when asked, not when published.
  slot = 8;
  ASSERT_TRUE(
      ProgressService::ask("127.0.0.1", here.port(), 42, 1, 1000, value));
  EXPECT_EQ(value, 8u);
  // Asking looks up no names (a failing network must not hold it in DNS):
  // the board resolves them when it is made.
  EXPECT_FALSE(
      ProgressService::ask("localhost", here.port(), 42, 1, 1000, value));
  ASSERT_TRUE(
      ProgressService::ask("127.0.0.1", here.port(), 43, 1, 1000, value));
  EXPECT_EQ(value, 0u);
  here.withdraw(42, 1);
  ASSERT_TRUE(
      ProgressService::ask("127.0.0.1", here.port(), 42, 1, 1000, value));
  EXPECT_EQ(value, 0u);
  here.withdraw(42, 2);
}

TEST(ProgressService, AskingWhereNobodyAnswersFailsWithinItsTimeout) {
  const auto start = std::chrono::steady_clock::now();
  uint64_t value = 5;
  EXPECT_FALSE(ProgressService::ask("127.0.0.1", unusedLoopbackPort(), 42, 0,
                                    500, value));
  EXPECT_FALSE(ProgressService::ask("127.0.0.1", 0, 42, 0, 500, value));
  EXPECT_EQ(value, 5u);
  EXPECT_LT(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count(),
      5.0);
}

/// Runs `body` in a forked child and returns its exit status (the child's
/// own ProgressService: the parent's thread does not follow a fork).
int inChild(int (*body)()) {
  const pid_t child = fork();
  if (child == 0)
    _exit(body());
  int status = -1;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

TEST(ProgressService, RefusesABadPortSettingNamingIt) {
  service(); // the parent's, started already
  EXPECT_EQ(inChild([] {
              setenv("GDNRT_PROGRESS_PORT", "29x", 1);
              std::string error;
              if (ProgressService::get(error))
                return 1;
              return error == "GDNRT_PROGRESS_PORT=\"29x\" is not a TCP port "
                              "(0 to 65535; 0 lets the system pick)"
                         ? 0
                         : 2;
            }),
            0);
}

/// The port taken by the first process of a host, in the child below.
uint16_t takenPort = 0;

TEST(ProgressService, AFixedPortTakenTakesTheNextAndAForkedChildAnswers) {
  const uint16_t parentPort = service().port();
  // Another process of the host holds the first port of the range.
  takenPort = unusedLoopbackPort();
  const int holder = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(takenPort);
  ASSERT_EQ(
      bind(holder, reinterpret_cast<sockaddr *>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(holder, 1), 0);
  static uint16_t parent;
  parent = parentPort;
  EXPECT_EQ(inChild([] {
              setenv("GDNRT_PROGRESS_PORT", std::to_string(takenPort).c_str(),
                     1);
              std::string error;
              ProgressService *own = ProgressService::get(error);
              if (!own)
                return 1;
              if (own->port() == parent || own->port() <= takenPort ||
                  own->port() >= takenPort + 64)
                return 2;
              // Its own thread answers.
              uint64_t slot = 5, value = 0;
              own->publish(7, 0, &slot);
              return ProgressService::ask("127.0.0.1", own->port(), 7, 0, 1000,
                                          value) &&
                             value == 5
                         ? 0
                         : 3;
            }),
            0);
  close(holder);
}

TEST(ProgressBoard, OverTheNetworkNamesTheMissingAndTheSilentRanks) {
  // Six ranks of one job: 0, 1 and 2 with boards in this process's service,
  // 3 whose process answers but never opened the board, 4 whose process
  // is gone, 5 that could not start a service.
  const uint16_t port = service().port();
  std::vector<ProgressBoard::Peer> peers = {{"127.0.0.1", port},
                                            {"127.0.0.1", port},
                                            {"localhost", port},
                                            {"127.0.0.1", port},
                                            {"127.0.0.1", unusedLoopbackPort()},
                                            {"127.0.0.1", 0}};
  const uint64_t key = ProgressBoard::keyOf("job one", 7);
  std::string error;
  auto rank0 = ProgressBoard::overNetwork(key, 0, peers, error);
  auto rank1 = ProgressBoard::overNetwork(key, 1, peers, error);
  auto rank2 = ProgressBoard::overNetwork(key, 2, peers, error);
  ASSERT_TRUE(rank0 && rank1 && rank2) << error;
  EXPECT_EQ(rank0->networkKey(), key);
  EXPECT_EQ(rank0->networkPeers().size(), 6u);
  for (uint64_t n = 1; n <= 5; ++n)
    rank0->enter(n);
  rank1->enter(5);
  rank2->enter(2);
  const std::string silent =
      "rank 3 (its process holds no such board: not started yet, or it has "
      "left the job), rank 4 "
      "(did not answer at 127.0.0.1:" +
      std::to_string(peers[4].port) +
      ": its process is gone, or its host is unreachable), rank 5 (has no "
      "progress service: it could not start one)";
  EXPECT_EQ(rank0->missing(5), "rank 2 (its last was collective 2), " + silent);
  // Every rank asks the same questions.
  EXPECT_EQ(rank1->missing(5), rank0->missing(5));
  EXPECT_EQ(rank0->missing(2), silent);
  // A closed board answers as one never opened.
  rank2.reset();
  EXPECT_EQ(rank0->missing(1).find("rank 2 (its process holds no such board"),
            0u);
  // Another job's board of the same ranks is another key.
  auto other = ProgressBoard::overNetwork(ProgressBoard::keyOf("job two", 7), 1,
                                          peers, error);
  ASSERT_TRUE(other) << error;
  other->enter(9);
  EXPECT_EQ(rank0->missing(6).find("rank 0 (its last was collective 5), rank 1 "
                                   "(its last was collective 5), rank 2"),
            0u);
  EXPECT_EQ(ProgressBoard::overNetwork(key, 6, peers, error), nullptr);
  EXPECT_EQ(error, "rank 6 of 6 is not a rank of the job");
}

TEST(ProgressBoard, NetworkKeysAndPeerAddresses) {
  const uint64_t world = ProgressBoard::keyOf("abc", 3);
  EXPECT_EQ(world, ProgressBoard::keyOf("abc", 3));
  EXPECT_NE(world, ProgressBoard::keyOf("abd", 3));
  // Each group of each split its own board.
  EXPECT_NE(ProgressBoard::groupKey(world, "sp", 0, 0),
            ProgressBoard::groupKey(world, "cp", 0, 0));
  EXPECT_NE(ProgressBoard::groupKey(world, "sp", 0, 0),
            ProgressBoard::groupKey(world, "sp", 1, 0));
  EXPECT_NE(ProgressBoard::groupKey(world, "sp", 0, 0),
            ProgressBoard::groupKey(world, "sp", 0, 1));
  EXPECT_EQ(ProgressBoard::groupKey(world, "cp", 2, 1),
            ProgressBoard::groupKey(world, "cp", 2, 1));
  // A 2 x 3 grid, SP innermost: world rank 3 is SP rank 1 of CP rank 1.
  std::vector<ProgressBoard::Peer> grid;
  for (int rank = 0; rank < 6; ++rank)
    grid.push_back({"node-" + std::to_string(rank), 1});
  auto hosts = [](const std::vector<ProgressBoard::Peer> &peers) {
    std::string text;
    for (const ProgressBoard::Peer &peer : peers)
      text += peer.host + " ";
    return text;
  };
  EXPECT_EQ(hosts(ProgressBoard::groupPeers(grid, 2, 3, true)),
            "node-2 node-3 ");
  EXPECT_EQ(hosts(ProgressBoard::groupPeers(grid, 2, 3, false)),
            "node-1 node-3 node-5 ");
  EXPECT_EQ(hosts(ProgressBoard::groupPeers(grid, 2, 4, false)),
            "node-0 node-2 node-4 ");
  ProgressBoard::Peer peer;
  ASSERT_TRUE(ProgressBoard::parsePeer("10.0.0.2:29501", peer));
  EXPECT_EQ(peer.host, "10.0.0.2");
  EXPECT_EQ(peer.port, 29501);
  ASSERT_TRUE(ProgressBoard::parsePeer("node-7:0", peer));
  EXPECT_EQ(peer.host, "node-7");
  EXPECT_EQ(peer.port, 0);
  for (const char *bad : {"node", ":1", "node:", "node:70000", "node:12a",
                          "node:123456", "node:-1"})
    EXPECT_FALSE(ProgressBoard::parsePeer(bad, peer)) << bad;
}

} // namespace
