// shardify as a Slurm array job on a real single-node cluster that the test starts
// (tests/tools/slurm_cluster.sh: munged, slurmctld, slurmd on loopback). Skips, saying why,
// where the cluster cannot start (not root, slurm-wlm or munge missing).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "shards/checksum.h"
#include "dataset_compare.h"
#include "test_util.h"

namespace sluice {
namespace {
namespace fs = std::filesystem;
using testing::ReadFile;
using testing::DirContents;
using testing::ExpectSameDatasetBytes;
using testing::TempDir;
using testing::WriteFile;

using RunResult = testing::ShellResult;
RunResult Sh(const std::string& cmd) { return testing::RunShell(cmd); }

std::string Env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

// Small shards and blocks so every part has several shards and a crash can fall between them.
constexpr const char* kWriteOptions = " --shard-size 200KiB --block-size 32KiB -j 1";

class SlurmTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new TempDir;
    RunResult r =
        Sh(Env("SLURM_CLUSTER", "tests/tools/slurm_cluster.sh") + " start " + cluster_->path());
    if (r.code == 77) {
      skip_ = r.out;
      return;
    }
    ASSERT_EQ(r.code, 0) << r.out;
    conf_ = r.out.substr(0, r.out.find('\n'));
    corpus_ = new TempDir;
    r = Sh(Env("MAKE_SAMPLE_CORPUS", "tools/make-sample-corpus") + " --out " + corpus_->path() +
           " --count 18 --seed 5");
    ASSERT_EQ(r.code, 0) << r.out;
    // The reference: one process over the whole input.
    r = Sh(Shardify() + " audio -q -m " + corpus_->Join("manifest.jsonl") + " -o " +
           corpus_->Join("single") + kWriteOptions);
    ASSERT_EQ(r.code, 0) << r.out;
  }
  static void TearDownTestSuite() {
    if (cluster_)
      Sh(Env("SLURM_CLUSTER", "tests/tools/slurm_cluster.sh") + " stop " + cluster_->path());
    delete cluster_;
    delete corpus_;
    cluster_ = corpus_ = nullptr;
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
  }

  static std::string Shardify() { return Env("SHARDIFY", "build/tools/shardify"); }

  // The part job of docs/shardify.md's recipe; SLUICE_TEST_FAIL_ID makes that task die by
  // SIGKILL as it first writes its first shard, the shard begun (base/sysio.h, kind kill).
  std::string PartScript(const std::string& part_flag) {
    const std::string path = tmp_.Join("part.sbatch");
    WriteFile(path,
              "#!/bin/sh\n#SBATCH --cpus-per-task=1\n"
              "if [ \"${SLUICE_TEST_FAIL_ID:-}\" = \"$SLURM_ARRAY_TASK_ID\" ]; then\n"
              "  export SLUICE_FAULT_INJECT=2:kill:shard-00000.sluice.tmp\nfi\n"
              "exec " +
                  Shardify() + " audio -q -m " + corpus_->Join("manifest.jsonl") + " -o " +
                  tmp_.Join("parts") + "/$SLURM_ARRAY_TASK_ID --part " + part_flag + kWriteOptions +
                  "\n");
    return path;
  }
  std::string MergeScript() {
    const std::string path = tmp_.Join("merge.sbatch");
    WriteFile(path, "#!/bin/sh\nexec " + Shardify() + " merge --repack --parts-dir " +
                        tmp_.Join("parts") + " -o " + tmp_.Join("merged") + "\n");
    return path;
  }
  RunResult Sbatch(const std::string& args) {
    RunResult r = Sh("cd " + tmp_.path() + " && SLURM_CONF=" + conf_ + " sbatch -o " +
                     tmp_.Join("%x-%A_%a.out") + " " + args);
    if (r.code != 0) r.out += "\njob output:\n" + Sh("tail -n 5 " + tmp_.Join("*.out")).out;
    return r;
  }

  static TempDir* cluster_;
  static TempDir* corpus_;
  static std::string conf_;
  static std::string skip_;
  TempDir tmp_;
};
TempDir* SlurmTest::cluster_ = nullptr;
TempDir* SlurmTest::corpus_ = nullptr;
std::string SlurmTest::conf_;
std::string SlurmTest::skip_;

TEST_F(SlurmTest, ArrayJobPartsMergeToTheSingleRunsBytes) {
  RunResult array = Sbatch("--parsable --array=0-2 " + PartScript("auto"));
  ASSERT_EQ(array.code, 0) << array.out;
  const std::string job = array.out.substr(0, array.out.find_first_of(";\n"));
  RunResult merge = Sbatch("--wait --dependency=afterok:" + job + " " + MergeScript());
  ASSERT_EQ(merge.code, 0) << merge.out;
  for (int i = 0; i < 3; ++i) {
    auto marker =
        nlohmann::json::parse(ReadFile(tmp_.Join("parts/" + std::to_string(i) + "/part.json")));
    EXPECT_EQ(marker["part"], i);
    EXPECT_EQ(marker["parts"], 3);
  }
  ExpectSameDatasetBytes(corpus_->Join("single"), tmp_.Join("merged"));
}

TEST_F(SlurmTest, OnlyTheFailedPartIsRerun) {
  const std::string script = PartScript("auto/3");
  RunResult array = Sbatch("--wait --array=0-2 --export=ALL,SLUICE_TEST_FAIL_ID=1 " + script);
  EXPECT_NE(array.code, 0) << array.out;  // the highest exit code of the tasks
  EXPECT_FALSE(fs::exists(tmp_.Join("parts/1/part.json")));
  RunResult early =
      Sh(Shardify() + " merge --parts-dir " + tmp_.Join("parts") + " -o " + tmp_.Join("merged"));
  EXPECT_NE(early.code, 0);
  EXPECT_NE(early.out.find("part 1 of 3 missing or incomplete"), std::string::npos) << early.out;
  const auto part0 = DirContents(tmp_.Join("parts/0"));

  RunResult rerun = Sbatch("--wait --array=1 " + script);
  ASSERT_EQ(rerun.code, 0) << rerun.out;
  EXPECT_EQ(part0, DirContents(tmp_.Join("parts/0")));  // untouched
  RunResult merge = Sbatch("--wait " + MergeScript());
  ASSERT_EQ(merge.code, 0) << merge.out;
  ExpectSameDatasetBytes(corpus_->Join("single"), tmp_.Join("merged"));
}

}  // namespace
}  // namespace sluice
