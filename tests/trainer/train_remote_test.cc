// sluice-train on datasets served over HTTP by a real nginx on loopback (docs/remote.md): DATASET,
// --data and --eval take URLs with the storage flags, and a run from a URL is the run from the
// directory, checkpoint byte for byte. Skips, saying why, where nginx cannot start.
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

  // Trains on `local` and on `remote` (the same data named by URL) with `args` and a checkpoint
  // in `run`; both must succeed with the same epoch lines and checkpoint bytes. Returns those
  // bytes ("" after a failed assertion).
  static std::string ExpectSameRun(const std::string& local, const std::string& remote,
                                   const std::string& args, const TempDir& run) {
    const Result a = Train(local, args + " --checkpoint " + run.Join("local"));
    EXPECT_EQ(a.code, 0) << a.out;
    const Result b = Train(remote, args + " --checkpoint " + run.Join("remote"));
    EXPECT_EQ(b.code, 0) << b.out;
    if (a.code != 0 || b.code != 0) return "";
    EXPECT_FALSE(JsonLines(a.out).empty()) << a.out;
    EXPECT_EQ(Results(b), Results(a)) << b.out << a.out;
    const std::string bytes = ReadFile(run.Join("local"));
    EXPECT_FALSE(bytes.empty());
    EXPECT_TRUE(ReadFile(run.Join("remote")) == bytes) << "the checkpoint from the URL differs";
    return bytes;
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
  const std::string a = ExpectSameRun(Dir("chars"), Url("chars"), "--eval-fraction 0.25", run);
  ASSERT_FALSE(a.empty());
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
  ExpectSameRun(
      "--data " + Dir("chars") + ":2 --data " + Dir("chars-b") + ":1 --eval " + Dir("chars-b"),
      "--data " + Url("chars") + ":2 --data " + Dir("chars-b") + ":1 --eval " + Url("chars-b"),
      "--mix-records 10", run);
}

// The SentencePiece model is read through the dataset's storage: a BPE dataset trains from its
// URL exactly as from its directory.
TEST_F(TrainRemote, SentencePieceDatasetTrainsFromAUrl) {
  TempDir run;
  ExpectSameRun(Dir("bpe"), Url("bpe"), "--eval-fraction 0.25", run);
}

// A password in a dataset URL goes to the server and nowhere else: the banners of successful runs,
// their --json records, verify's problem list and the errors show http://sluice:***@host/...
// (storage/url.h, RedactUrl), so a training log holds no password. A refused connection
// (127.0.0.1:1) makes the errors; an S3 secret from the environment is never printed either.
TEST_F(TrainRemote, PasswordInAUrlAndS3SecretAreNeverPrinted) {
  const std::string marker = "pw-7c41e0-never-printed";
  const std::string port = std::to_string(nginx_->port());
  const std::string url = "http://sluice:" + marker + "@127.0.0.1:" + port;
  const std::string shown = "http://sluice:***@127.0.0.1:" + port;
  const std::string refused = "http://sluice:" + marker + "@127.0.0.1:1/ds";
  const std::string refused_shown = "http://sluice:***@127.0.0.1:1/ds";
  // A copy of "chars" with one byte of its first shard changed, for verify's problem list.
  ASSERT_EQ(
      Shell("rm -rf " + Dir("damaged") + " && cp -r " + Dir("chars") + " " + Dir("damaged") +
            " && python3 -c \"import sys; p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); "
            "b[100] ^= 0xff; open(p, 'wb').write(b)\" $(ls " +
            Dir("damaged") + "/shard-* | head -n 1)")
          .code,
      0);
  const std::string shardify = Env("SHARDIFY"), bench = Env("SLUICE_BENCH") + " epoch ";
  const std::string train_any_eval =
      Env("SLUICE_TRAIN") + " --device cpu --preset tiny --max-frames 800 --steps 1 ";
  const std::string train = train_any_eval + "--eval-fraction 0 ";
  const std::string s3 =
      "AWS_ACCESS_KEY_ID=AKIDSLUICETEST AWS_SECRET_ACCESS_KEY=" + marker + " AWS_REGION=us-east-1 ";
  struct Case {
    std::string command;
    bool ok;               // exit status 0, or an error
    std::string expected;  // printed: the location as shown
  };
  const std::vector<Case> cases = {
      {shardify + " info " + url + "/chars", true, "dataset    " + shown + "/chars\n"},
      {shardify + " verify --json -q " + url + "/damaged", false, shown + "/damaged/shard-"},
      {bench + url + "/chars", true, shown + "/chars: "},
      {bench + "--json --data " + url + "/chars:2 --data " + url + "/chars-b:1", true,
       "\"dir\":\"" + shown + "/chars\""},
      {train + url + "/chars", true, "sluice-train: " + shown + "/chars: "},
      {train + "--data " + url + "/chars:2 --data " + url + "/chars-b:1", true,
       "mixture (records above: the first source's): " + shown + "/chars:2 " + shown +
           "/chars-b:1;"},
      {shardify + " info --retries 0 " + refused, false, refused_shown + "/manifest.json"},
      {shardify + " verify --json --retries 0 " + refused, false, refused_shown},
      {bench + "--retries 0 " + refused, false, refused_shown + "/manifest.json"},
      {bench + "--retries 0 --data " + refused + ":2", false, refused_shown},
      {train + "--retries 0 " + refused, false, refused_shown + "/manifest.json"},
      {train + "--retries 0 --data " + url + "/chars:1 --data " + refused + ":1", false,
       refused_shown},
      {train_any_eval + "--retries 0 " + url + "/chars --eval " + refused, false, refused_shown},
      // The S3 secret: signed requests to a server that is not there.
      {s3 + shardify + " info --retries 0 --s3-endpoint http://127.0.0.1:1 s3://bucket/ds", false,
       "bucket/ds"},
      {s3 + bench + "--retries 0 --s3-endpoint http://127.0.0.1:1 s3://bucket/ds", false,
       "bucket/ds"},
      {s3 + train + "--retries 0 --s3-endpoint http://127.0.0.1:1 s3://bucket/ds", false,
       "bucket/ds"},
  };
  for (const Case& c : cases) {
    const Result r = Shell(c.command);
    EXPECT_EQ(r.code == 0, c.ok) << c.command << "\n" << r.out;
    EXPECT_EQ(r.out.find(marker), std::string::npos) << c.command << "\n" << r.out;
    EXPECT_NE(r.out.find(c.expected), std::string::npos)
        << c.command << "\nexpected: " << c.expected << "\n"
        << r.out;
  }
}

TEST_F(TrainRemote, MissingDatasetNamesTheUrl) {
  const Result r = Train(Url("no-such-dataset"), "--retries 0");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find(Url("no-such-dataset") + "/manifest.json"), std::string::npos) << r.out;
}

}  // namespace
