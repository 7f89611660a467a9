//===- ProgressBoardTest.cpp - the progress board, on the CPU -------------===//

#include "ProgressBoard.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

using namespace gdnrt;

namespace {

std::string freshFile() {
  char pattern[] = "/tmp/gdnrt-board-XXXXXX";
  return std::string(mkdtemp(pattern)) + "/nccl-id.progress";
}

TEST(ProgressBoard, NamesTheRanksThatNeverEnteredACollective) {
  const std::string path = freshFile();
  std::string error;
  // Ranks 0 and 1 of 3 open the board; rank 2 never does (started late).
  auto rank0 = ProgressBoard::open(path, 0, 3, error);
  auto rank1 = ProgressBoard::open(path, 1, 3, error);
  ASSERT_TRUE(rank0 && rank1) << error;
  for (uint64_t n = 1; n <= 3; ++n)
    rank0->enter(n);
  rank1->enter(1);
  EXPECT_EQ(rank0->missing(1), "rank 2 (had entered 0)");
  EXPECT_EQ(rank0->missing(3),
            "rank 1 (had entered 1), rank 2 (had entered 0)");
  // Every rank reads the same board.
  EXPECT_EQ(rank1->missing(2), rank0->missing(2));
  auto rank2 = ProgressBoard::open(path, 2, 3, error);
  ASSERT_TRUE(rank2) << error;
  rank2->enter(3);
  rank1->enter(3);
  EXPECT_EQ(rank0->missing(3), "");
}

TEST(ProgressBoard, AnotherProcessPostsThroughTheFile) {
  // What a rank of another process posted stays after it dies.
  const std::string path = freshFile();
  std::string error;
  auto rank0 = ProgressBoard::open(path, 0, 2, error);
  ASSERT_TRUE(rank0) << error;
  rank0->enter(7);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string childError;
    auto rank1 = ProgressBoard::open(path, 1, 2, childError);
    if (!rank1)
      _exit(1);
    rank1->enter(6);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(rank0->missing(7), "rank 1 (had entered 6)");
  EXPECT_EQ(rank0->missing(6), "");
}

TEST(ProgressBoard, RefusesWhatItCannotMake) {
  std::string error;
  EXPECT_EQ(ProgressBoard::open("/nonexistent-folder/board", 0, 2, error),
            nullptr);
  EXPECT_NE(error.find("cannot open /nonexistent-folder/board"),
            std::string::npos)
      << error;
  EXPECT_EQ(ProgressBoard::open(freshFile(), 2, 2, error), nullptr);
  EXPECT_EQ(error, "rank 2 of 2 is not a rank of the job");
}

TEST(ProgressBoard, LivesBesideAFileRendezvousOnly) {
  EXPECT_EQ(ProgressBoard::pathFor("file:/tmp/job/nccl-id"),
            "/tmp/job/nccl-id.progress");
  EXPECT_EQ(ProgressBoard::pathFor("file:"), "");
  EXPECT_EQ(ProgressBoard::pathFor("tcp:127.0.0.1:29500"), "");
  EXPECT_EQ(ProgressBoard::pathFor("threads:job"), "");
}

} // namespace
