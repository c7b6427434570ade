// Data at the edges of what training can use, none of it dropped silently: an utterance whose
// transcript has more tokens than the model has output frames is counted and named per epoch; a
// dataset on a read-only filesystem opens, reads and trains.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "test_util.h"

namespace {

using sluice::testing::TempDir;
using sluice::train_test::Env;
using sluice::train_test::JsonLines;
using sluice::train_test::Result;
using sluice::train_test::Shell;

class DataLimits : public ::testing::Test {
 protected:
  // Eight espeak-ng clips plus "too-long" (cli_util.h, WriteWithTooLong).
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string corpus = dir_->Join("corpus");
    const Result made =
        Shell(Env("MAKE_SAMPLE_CORPUS") + " --out " + corpus + " --count 8 --jobs 2");
    ASSERT_EQ(made.code, 0) << made.out;
    sluice::train_test::WriteWithTooLong(corpus + "/manifest.jsonl", corpus + "/with_long.jsonl");
    const Result r = Shell(Env("SHARDIFY") + " audio -q -m " + corpus + "/with_long.jsonl -o " +
                           dir_->Join("ds") + " --tokenizer char");
    ASSERT_EQ(r.code, 0) << r.out;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string Train(const std::string& dataset) {
    return Env("SLUICE_TRAIN") + " " + dataset +
           " --device cpu --preset tiny --epochs 1 --eval-fraction 0 --max-frames 1500 --seed 3 "
           "--json";
  }
  static TempDir* dir_;
};
TempDir* DataLimits::dir_ = nullptr;

TEST_F(DataLimits, UnalignableUtterancesAreCountedAndNamedPerEpoch) {
  const Result r = Shell(Train(dir_->Join("ds")));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto lines = JsonLines(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  const nlohmann::json& e = lines[0];
  EXPECT_EQ(e["unalignable"], 1) << e.dump();
  EXPECT_EQ(e["unalignable_keys"], nlohmann::json::array({"too-long"})) << e.dump();
  EXPECT_EQ(e["utterances"], 9) << e.dump();  // it still went through the step, with loss 0
  // The other eight trained: a positive, finite mean loss.
  EXPECT_GT(e["loss"].get<double>(), 1.0) << e.dump();
  // The log line names it with both counts and says what to do.
  EXPECT_NE(r.out.find("1 utterance cannot be aligned"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("too-long (T="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("frames after subsampling, U="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("HINT: shardify --max-tokens-per-second"), std::string::npos) << r.out;
}

// The dataset under a read-only bind mount in a private mount namespace: sluice-bench reads the
// same batches as from the writable directory, and sluice-train trains on it.
TEST_F(DataLimits, ReadOnlyDatasetOpensReadsAndTrains) {
  const Result probe = Shell("unshare -m true");
  if (probe.code != 0)
    GTEST_SKIP() << "unshare -m is not permitted here (needs root or CAP_SYS_ADMIN): " << probe.out;
  const std::string src = dir_->Join("ds"), ro = dir_->Join("ro");
  ASSERT_EQ(Shell("mkdir -p " + ro).code, 0);
  const std::string bench = Env("SLUICE_BENCH") + " epoch --json --max-frames 1500 ";
  const Result rw = Shell(bench + src);
  ASSERT_EQ(rw.code, 0) << rw.out;
  const auto rw_lines = JsonLines(rw.out);
  ASSERT_EQ(rw_lines.size(), 1u) << rw.out;

  // 99: the mount is writable after all (the test would prove nothing).
  const std::string inside = "mount --bind " + src + " " + ro + " && mount -o remount,ro,bind " +
                             ro + " && { touch " + ro + "/probe 2>/dev/null && exit 99; " + bench +
                             ro + " && " + Train(ro) + "; }";
  const Result r = Shell("unshare -m sh -c '" + inside + "'");
  if (r.code != 99 && r.out.find("mount: ") != std::string::npos &&
      r.out.find("denied") != std::string::npos)
    GTEST_SKIP() << "mount is not permitted here: " << r.out;
  ASSERT_NE(r.code, 99) << "the read-only remount did not take";
  ASSERT_EQ(r.code, 0) << r.out;
  const auto lines = JsonLines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;  // the bench epoch, then the training epoch
  EXPECT_EQ(lines[0]["digest"], rw_lines[0]["digest"]) << r.out;
  EXPECT_EQ(lines[1]["utterances"], 9) << r.out;
  EXPECT_FALSE(lines[1]["partial"].get<bool>());
}

}  // namespace
