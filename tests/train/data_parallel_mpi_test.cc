// Data parallelism across processes under mpirun -np 2: the library-level equivalence with a
// single process (data_parallel_worker.cc), and sluice-train end to end on a small shardified
// espeak-ng corpus: both ranks end with byte-identical checkpoints, a 2-rank resume ends where the
// uninterrupted run did, a resume needs the same rank count, and an error on one rank ends the job
// instead of hanging it. Skips without mpirun.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "test_util.h"

namespace {

using sluice::train_test::Env;
using sluice::train_test::Result;
using sluice::train_test::Shell;
using sluice::testing::ReadFile;
using sluice::testing::TempDir;

std::string FindOnPath(const std::string& name) {
  const std::string path = Env("PATH");
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = path.find(':', start);
    const std::string dir =
        path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const std::string full = (dir.empty() ? "." : dir) + "/" + name;
    if (access(full.c_str(), X_OK) == 0) return full;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

// mpirun -np 2 with a time limit (a hang fails the test instead of stalling the suite);
// --oversubscribe for machines with fewer cores, root allowed for CI containers.
std::string Mpirun() {
  const std::string mpirun = FindOnPath("mpirun");
  return mpirun.empty() ? "" : mpirun + " --oversubscribe --allow-run-as-root --timeout 90 -np 2 ";
}

TEST(DataParallel, TwoRanksMatchOneProcessOverAllRows) {
  const std::string mpirun = Mpirun();
  if (mpirun.empty())
    GTEST_SKIP() << "mpirun not found (apt-get install openmpi-bin libopenmpi-dev)";
  const Result r = Shell(mpirun + Env("SLUICE_DP_WORKER"));
  std::printf("%s", r.out.c_str());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("rank 0 of 2: ok"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 1 of 2: ok"), std::string::npos) << r.out;
}

class DataParallelCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (Mpirun().empty()) return;
    dir_ = new TempDir();
    std::string log;
    ASSERT_TRUE(
        sluice::train_test::MakeCharDataset(dir_->Join("corpus"), dir_->Join("chars"), 12, &log))
        << log;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (Mpirun().empty())
      GTEST_SKIP() << "mpirun not found (apt-get install openmpi-bin libopenmpi-dev)";
  }
  // Two ranks of sluice-train; small batches so that each rank makes several steps.
  static Result Train(const std::string& launcher, const std::string& args) {
    return Shell(launcher + Env("SLUICE_TRAIN") + " " + dir_->Join("chars") +
                 " --device cpu --preset tiny --max-frames 700 --seed 3 --eval-fraction 0.2 " +
                 args);
  }
  static TempDir* dir_;
};
TempDir* DataParallelCli::dir_ = nullptr;

TEST_F(DataParallelCli, BothRanksEndWithTheSameCheckpointAndResumeExactly) {
  TempDir run;
  const Result r = Train(Mpirun(), "--steps 4 --json --checkpoint-every 2 --checkpoint " +
                                       run.Join("a{rank}-{step}.ckpt"));
  ASSERT_EQ(r.code, 0) << r.out;
  // Rank 0 alone prints: one JSON line per epoch, the last at step 4, losses finite.
  std::vector<nlohmann::json> lines;
  for (size_t at = 0; at < r.out.size();) {
    size_t end = r.out.find('\n', at);
    if (end == std::string::npos) end = r.out.size();
    if (r.out[at] == '{') lines.push_back(nlohmann::json::parse(r.out.substr(at, end - at)));
    at = end + 1;
  }
  ASSERT_FALSE(lines.empty()) << r.out;
  EXPECT_EQ(lines.back()["step"].get<int>(), 4) << r.out;
  for (const auto& j : lines) {
    EXPECT_TRUE(std::isfinite(j["loss"].get<double>())) << r.out;
    EXPECT_GT(j["loss"].get<double>(), 0.0) << r.out;
    EXPECT_GT(j["eval_utterances"].get<int>(), 0) << r.out;
  }
  const std::string a0 = ReadFile(run.Join("a0-4.ckpt")), a1 = ReadFile(run.Join("a1-4.ckpt"));
  ASSERT_FALSE(a0.empty());
  EXPECT_TRUE(a0 == a1) << "the ranks' parameters, optimizer state or counters differ";

  // Both ranks resume at step 2 and end where the uninterrupted run did, byte for byte.
  const Result resumed = Train(Mpirun(), "--steps 4 --json --resume " + run.Join("a{rank}-2.ckpt") +
                                             " --checkpoint " + run.Join("b{rank}-{step}.ckpt"));
  ASSERT_EQ(resumed.code, 0) << resumed.out;
  EXPECT_TRUE(ReadFile(run.Join("b0-4.ckpt")) == a0)
      << "a resumed 2-rank run differs from the uninterrupted one";
  EXPECT_TRUE(ReadFile(run.Join("b1-4.ckpt")) == a0);

  // The checkpoint remembers its two ranks: one rank alone refuses it.
  const Result alone = Train("", "--steps 4 --resume " + run.Join("a0-2.ckpt"));
  EXPECT_EQ(alone.code, 1) << alone.out;
  EXPECT_NE(alone.out.find("written by a run of 2 rank(s), this run has 1"), std::string::npos)
      << alone.out;
}

TEST_F(DataParallelCli, AnErrorOnOneRankEndsTheJob) {
  TempDir run;
  ASSERT_EQ(Train(Mpirun(), "--steps 1 --checkpoint " + run.Join("r{rank}.ckpt")).code, 0);
  std::remove(run.Join("r1.ckpt").c_str());
  // Rank 1 cannot read its checkpoint while rank 0 goes on to its first collective: without the
  // abort, rank 0 would wait there until mpirun's --timeout.
  const Result r = Train(Mpirun(), "--steps 2 --resume " + run.Join("r{rank}.ckpt"));
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("rank 1 of 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(run.Join("r1.ckpt")), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("timeout"), std::string::npos) << r.out;
}

}  // namespace
