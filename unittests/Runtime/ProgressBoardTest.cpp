//===- ProgressBoardTest.cpp - the progress board, on the CPU -------------===//

#include "ProgressBoard.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

using namespace gdnrt;

namespace {

/// A fresh folder with a board's path in it; removes both at the end.
class BoardFile {
public:
  BoardFile() {
    char pattern[] = "/tmp/gdnrt-board-XXXXXX";
    const char *made = mkdtemp(pattern);
    EXPECT_NE(made, nullptr) << "mkdtemp";
    folder = made ? made : "/tmp";
    path = folder + "/nccl-id.progress";
  }
  ~BoardFile() {
    std::remove(path.c_str());
    std::remove((folder + "/link").c_str());
    rmdir(folder.c_str());
  }
  std::string folder, path;
};

TEST(ProgressBoard, NamesTheRanksThatNeverEnteredACollective) {
  BoardFile file;
  std::string error;
  // Ranks 0 and 1 of 3 open the board; rank 2 has not started.
  auto rank0 = ProgressBoard::open(file.path, 0, 3, error);
  auto rank1 = ProgressBoard::open(file.path, 1, 3, error);
  ASSERT_TRUE(rank0 && rank1) << error;
  EXPECT_EQ(rank0->missing(1),
            "rank 0 (had entered no collective), rank 1 (had entered no "
            "collective), rank 2 (posted nothing: not started yet, or without "
            "the board)");
  for (uint64_t n = 1; n <= 3; ++n)
    rank0->enter(n);
  rank1->enter(1);
  EXPECT_EQ(rank0->missing(3),
            "rank 1 (its last was collective 1), rank 2 (posted nothing: not "
            "started yet, or without the board)");
  // Every rank reads the same board.
  EXPECT_EQ(rank1->missing(2), rank0->missing(2));
  auto rank2 = ProgressBoard::open(file.path, 2, 3, error);
  ASSERT_TRUE(rank2) << error;
  rank2->enter(3);
  rank1->enter(3);
  EXPECT_EQ(rank0->missing(3), "");
  EXPECT_EQ(rank0->missing(4).find("rank 0 (its last was collective 3)"), 0u);
}

TEST(ProgressBoard, AnotherProcessPostsThroughTheFile) {
  // What a rank of another process posted stays after it dies.
  BoardFile file;
  std::string error;
  auto rank0 = ProgressBoard::open(file.path, 0, 2, error);
  ASSERT_TRUE(rank0) << error;
  rank0->enter(7);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string childError;
    auto rank1 = ProgressBoard::open(file.path, 1, 2, childError);
    if (!rank1)
      _exit(1);
    rank1->enter(6);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(rank0->missing(7), "rank 1 (its last was collective 6)");
  EXPECT_EQ(rank0->missing(6), "");
}

TEST(ProgressBoard, RefusesWhatItCannotMakeOrIsNotABoard) {
  BoardFile file;
  std::string error;
  EXPECT_EQ(ProgressBoard::open("/nonexistent-folder/board", 0, 2, error),
            nullptr);
  EXPECT_NE(error.find("cannot open /nonexistent-folder/board"),
            std::string::npos)
      << error;
  EXPECT_EQ(ProgressBoard::open(file.path, 2, 2, error), nullptr);
  EXPECT_EQ(error, "rank 2 of 2 is not a rank of the job");
  // A file of another length is another job's board (or no board).
  std::ofstream(file.path) << "not a board";
  EXPECT_EQ(ProgressBoard::open(file.path, 0, 2, error), nullptr);
  EXPECT_EQ(error, file.path + " is not the board of a job of 2 ranks");
  // A link planted at the path is not followed.
  std::remove(file.path.c_str());
  ASSERT_EQ(symlink("/etc/passwd", (file.folder + "/link").c_str()), 0);
  EXPECT_EQ(ProgressBoard::open(file.folder + "/link", 0, 2, error), nullptr);
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
}

TEST(ProgressBoard, LivesBesideAFileRendezvousOnly) {
  EXPECT_EQ(ProgressBoard::pathFor("file:/tmp/job/nccl-id"),
            "/tmp/job/nccl-id.progress");
  EXPECT_EQ(ProgressBoard::pathFor("file:"), "");
  EXPECT_EQ(ProgressBoard::pathFor("tcp:127.0.0.1:29500"), "");
  EXPECT_EQ(ProgressBoard::pathFor("threads:job"), "");
}

TEST(ProgressBoard, SplitGroupsPutTheirsBesideTheWorlds) {
  BoardFile file;
  EXPECT_EQ(ProgressBoard::groupPath(file.path, "cp", 1, 0), file.path + ".0.cp1");
  EXPECT_EQ(ProgressBoard::groupPath(file.path, "sp", 12, 3), file.path + ".3.sp12");
  // The CP group of color 1, ranks 0 and 1 of 2, as two opens of its file:
  // one rank's posts are the other's to read.
  std::string error;
  const std::string group = ProgressBoard::groupPath(file.path, "cp", 1, 0);
  auto first = ProgressBoard::open(group, 0, 2, error);
  auto second = ProgressBoard::open(group, 1, 2, error);
  ASSERT_TRUE(first && second) << error;
  first->enter(1);
  EXPECT_EQ(second->missing(1), "rank 1 (had entered no collective)");
  second->enter(1);
  EXPECT_EQ(first->missing(1), "");
  // What an earlier job left beside the world's board goes, nothing else.
  for (const char *stale : {".0.sp0", ".1.cp1", ".12.cp23"})
    std::ofstream(file.path + stale) << "old";
  for (const char *kept : {".0.cpx", ".0.sp", ".cp1", ".x.cp1", ".0.cp1.bak"})
    std::ofstream(file.path + kept) << "other";
  first.reset();
  second.reset();
  EXPECT_EQ(ProgressBoard::removeGroupBoards(file.path), 4); // and the group board above
  for (const char *stale : {".0.sp0", ".1.cp1", ".12.cp23"})
    EXPECT_NE(access((file.path + stale).c_str(), F_OK), 0) << stale;
  for (const char *kept : {".0.cpx", ".0.sp", ".cp1", ".x.cp1", ".0.cp1.bak"}) {
    EXPECT_EQ(access((file.path + kept).c_str(), F_OK), 0) << kept;
    std::remove((file.path + kept).c_str());
  }
}

} // namespace
