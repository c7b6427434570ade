// Data parallelism across processes under mpirun -np 2: the library-level equivalence with a
// single process (data_parallel_worker.cc), and sluice-train end to end on a small shardified
// espeak-ng corpus: both ranks end with byte-identical checkpoints, a 2-rank resume ends where the
// uninterrupted run did, a 2-rank checkpoint resumes on one rank with the rest of the epoch, and
// an error on one rank ends the job instead of hanging it. Skips without mpirun.
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
}

// The JSON line of epoch 0 in a run's output.
nlohmann::json EpochZero(const std::string& out) {
  for (size_t at = 0; at < out.size();) {
    size_t end = out.find('\n', at);
    if (end == std::string::npos) end = out.size();
    if (out[at] == '{') {
      const nlohmann::json j = nlohmann::json::parse(out.substr(at, end - at));
      if (j.value("epoch", -1) == 0) return j;
    }
    at = end + 1;
  }
  return nlohmann::json::object();
}

// An utterance CTC cannot align is counted and named whichever rank's share held it: the epoch
// line gathers every rank's (the keys used to be rank 0's only, so with the utterance on rank 1
// the line said "1 unalignable" and named none). Several seeds put it on each rank.
TEST_F(DataParallelCli, UnalignableUtterancesAreNamedFromEveryRank) {
  TempDir run;
  const std::string corpus = dir_->Join("corpus");  // audio paths are relative to the manifest
  sluice::train_test::WriteWithTooLong(corpus + "/manifest.jsonl", corpus + "/with_long.jsonl");
  const Result made = Shell(Env("SHARDIFY") + " audio -q -m " + corpus + "/with_long.jsonl -o " +
                            run.Join("ds") + " --tokenizer char");
  ASSERT_EQ(made.code, 0) << made.out;
  for (int seed : {1, 2, 3, 4}) {
    const Result r = Shell(Mpirun() + Env("SLUICE_TRAIN") + " " + run.Join("ds") +
                           " --device cpu --preset tiny --max-frames 1500 --epochs 1 "
                           "--eval-fraction 0 --json --seed " + std::to_string(seed));
    ASSERT_EQ(r.code, 0) << r.out;
    const nlohmann::json e = EpochZero(r.out);
    EXPECT_EQ(e["unalignable"], 1) << "seed " << seed << ": " << e.dump();
    EXPECT_EQ(e["unalignable_keys"], nlohmann::json::array({"too-long"}))
        << "seed " << seed << ": " << e.dump();
  }
}

// Elastic resume: a checkpoint of two ranks after step 1 continues on one rank with the rest of
// the epoch, the same utterances as the two ranks resumed would take, and fewer than the whole.
TEST_F(DataParallelCli, ACheckpointOfTwoRanksResumesOnOneWithTheRestOfTheEpoch) {
  TempDir run;
  const Result whole = Train(Mpirun(), "--epochs 1 --json --checkpoint-every 1 --checkpoint " +
                                           run.Join("c{rank}-{step}.ckpt"));
  ASSERT_EQ(whole.code, 0) << whole.out;
  const Result two = Train(Mpirun(), "--epochs 1 --json --resume " + run.Join("c{rank}-1.ckpt"));
  ASSERT_EQ(two.code, 0) << two.out;
  const Result one = Train("", "--epochs 1 --json --resume " + run.Join("c0-1.ckpt"));
  ASSERT_EQ(one.code, 0) << one.out;
  const nlohmann::json w = EpochZero(whole.out), t = EpochZero(two.out), o = EpochZero(one.out);
  ASSERT_TRUE(w.contains("utterances") && t.contains("utterances") && o.contains("utterances"))
      << whole.out << two.out << one.out;
  EXPECT_EQ(o["utterances"], t["utterances"]) << one.out << two.out;
  EXPECT_LT(o["utterances"].get<int>(), w["utterances"].get<int>());
  EXPECT_GT(o["utterances"].get<int>(), 0);
  EXPECT_EQ(o["partial"], false) << one.out;
}

TEST_F(DataParallelCli, AnErrorOnOneRankEndsTheJob) {
  TempDir run;
  // The checkpoints of step 1 of a 2-step run (--steps is part of the run: resuming a 1-step
  // run's checkpoint with --steps 2 would be refused on rank 0 too, and which rank spoke first
  // would be a race).
  ASSERT_EQ(Train(Mpirun(), "--steps 2 --checkpoint-every 1 --checkpoint " +
                                run.Join("r{rank}-{step}.ckpt"))
                .code,
            0);
  std::remove(run.Join("r1-1.ckpt").c_str());
  // Rank 1 cannot read its checkpoint while rank 0 goes on to its first collective: without the
  // abort, rank 0 would wait there until mpirun's --timeout.
  const Result r = Train(Mpirun(), "--steps 2 --resume " + run.Join("r{rank}-1.ckpt"));
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("rank 1 of 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(run.Join("r1-1.ckpt")), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("timeout"), std::string::npos) << r.out;
}

}  // namespace
