// sluice-train on datasets served over HTTP by a real nginx on loopback (docs/remote.md): DATASET,
// --data and --eval take URLs with the storage flags, and a run from a URL is the run from the
// directory, checkpoint byte for byte. Skips, saying why, where nginx cannot start.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "servers.h"
#include "test_util.h"

namespace {

using sluice::storage::testing::Nginx;
using sluice::testing::ReadFile;
using sluice::testing::TempDir;
using sluice::train_test::Env;
using sluice::train_test::JsonLines;
using sluice::train_test::Result;
using sluice::train_test::Shell;

class TrainRemote : public ::testing::Test {
 protected:
  // 12 clips shardified three ways: characters in small shards (several files, so several
  // requests per epoch), the same again (a second source for mixtures), and SentencePiece BPE
  // (tokenizer.model is read through the storage, not by path).
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    work_ = new TempDir();
    const std::string corpus = work_->Join("corpus");
    ASSERT_EQ(Shell(Env("MAKE_SAMPLE_CORPUS") + " --out " + corpus + " --count 12 --jobs 2").code,
              0);
    const std::string shardify = Env("SHARDIFY") + " audio -m " + corpus + "/manifest.jsonl -o ";
    ASSERT_EQ(Shell(shardify + dir_->Join("chars") + " --tokenizer char --shard-size 256KiB").code,
              0);
    ASSERT_EQ(Shell(shardify + dir_->Join("chars-b") + " --tokenizer char").code, 0);
    ASSERT_EQ(Shell(shardify + dir_->Join("bpe") + " --tokenizer bpe:40").code, 0);
    nginx_ = new Nginx;
    if (!nginx_->Start(dir_->path(), work_->path(), &why_)) return;
  }
  static void TearDownTestSuite() {
    delete nginx_;
    delete work_;
    delete dir_;
  }
  void SetUp() override {
    if (!why_.empty()) GTEST_SKIP() << why_;
  }
  static std::string Url(const std::string& name) { return nginx_->url() + "/" + name; }
  static std::string Dir(const std::string& name) { return dir_->Join(name); }
  // A few steps of the tiny model on the CPU; `data` is DATASET or the --data flags.
  static Result Train(const std::string& data, const std::string& args) {
    return Shell(Env("SLUICE_TRAIN") + " " + data +
                 " --device cpu --preset tiny --max-frames 800 --seed 3 --steps 4 --json " + args);
  }
  // The loss and evaluation of each epoch line, without the timings.
  static nlohmann::json Results(const Result& r) {
    nlohmann::json out = nlohmann::json::array();
    for (const nlohmann::json& j : JsonLines(r.out))
      out.push_back({j.at("loss"), j.at("eval_loss"), j.at("cer"), j.at("step")});
    return out;
  }

  static TempDir* dir_;
  static TempDir* work_;
  static Nginx* nginx_;
  static std::string why_;
};
TempDir* TrainRemote::dir_ = nullptr;
TempDir* TrainRemote::work_ = nullptr;
Nginx* TrainRemote::nginx_ = nullptr;
std::string TrainRemote::why_;

TEST_F(TrainRemote, RunFromAUrlEqualsTheRunFromTheDirectory) {
  TempDir run;
  const Result local = Train(Dir("chars"), "--eval-fraction 0.25 --checkpoint " + run.Join("a"));
  ASSERT_EQ(local.code, 0) << local.out;
  const Result remote = Train(Url("chars"), "--eval-fraction 0.25 --checkpoint " + run.Join("b"));
  ASSERT_EQ(remote.code, 0) << remote.out;
  ASSERT_FALSE(JsonLines(local.out).empty()) << local.out;
  EXPECT_EQ(Results(remote), Results(local)) << remote.out << local.out;
  const std::string a = ReadFile(run.Join("a"));
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(ReadFile(run.Join("b")) == a) << "the checkpoint from the URL differs";
  // Through the block cache, cold and then warm: the same run again.
  const std::string cache = " --cache-dir " + run.Join("cache") + " --checkpoint ";
  for (const char* ckpt : {"c", "d"}) {
    const Result cached = Train(Url("chars"), "--eval-fraction 0.25" + cache + run.Join(ckpt));
    ASSERT_EQ(cached.code, 0) << cached.out;
    EXPECT_TRUE(ReadFile(run.Join(ckpt)) == a) << ckpt << ": the cached run differs";
  }
}

// --data URL:WEIGHT beside a directory, and --eval URL: the mixture and the evaluation read the
// URLs as they read directories.
TEST_F(TrainRemote, MixtureAndEvalDatasetTakeUrls) {
  TempDir run;
  const std::string mix = " --mix-records 10 --checkpoint ";
  const Result local = Train(
      "--data " + Dir("chars") + ":2 --data " + Dir("chars-b") + ":1 --eval " + Dir("chars-b"),
      mix + run.Join("a"));
  ASSERT_EQ(local.code, 0) << local.out;
  const Result remote = Train(
      "--data " + Url("chars") + ":2 --data " + Dir("chars-b") + ":1 --eval " + Url("chars-b"),
      mix + run.Join("b"));
  ASSERT_EQ(remote.code, 0) << remote.out;
  ASSERT_FALSE(JsonLines(local.out).empty()) << local.out;
  EXPECT_EQ(Results(remote), Results(local)) << remote.out << local.out;
  EXPECT_TRUE(ReadFile(run.Join("b")) == ReadFile(run.Join("a")));
}

// The SentencePiece model is read through the dataset's storage: a BPE dataset trains from its
// URL exactly as from its directory.
TEST_F(TrainRemote, SentencePieceDatasetTrainsFromAUrl) {
  TempDir run;
  const Result local = Train(Dir("bpe"), "--eval-fraction 0.25 --checkpoint " + run.Join("a"));
  ASSERT_EQ(local.code, 0) << local.out;
  const Result remote = Train(Url("bpe"), "--eval-fraction 0.25 --checkpoint " + run.Join("b"));
  ASSERT_EQ(remote.code, 0) << remote.out;
  EXPECT_EQ(Results(remote), Results(local)) << remote.out << local.out;
  EXPECT_TRUE(ReadFile(run.Join("b")) == ReadFile(run.Join("a")));
}

TEST_F(TrainRemote, MissingDatasetNamesTheUrl) {
  const Result r = Train(Url("no-such-dataset"), "--retries 0");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find(Url("no-such-dataset") + "/manifest.json"), std::string::npos) << r.out;
}

}  // namespace
