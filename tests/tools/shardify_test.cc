// End-to-end: the shardify binary on a generated corpus with broken entries.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "assert_ok.h"
#include "dataset_compare.h"
#include "features/fbank.h"
#include "features/flac.h"
#include "features/half.h"
#include "features/pcm.h"
#include "features/text_normalize.h"
#include "features/tokenizer.h"
#include "fuzz_regression.h"
#include "loader/dataset_tokenizer.h"
#include "epoch_digests.h"
#include "loader/loader.h"
#include "out_lock.h"
#include "sanitizers.h"
#include "shards/checksum.h"
#include "shards/dataset.h"
#include "shards/fields.h"
#include "shards/record.h"
#include "test_util.h"

// An address-space limit (ulimit -v) cannot hold a binary built with AddressSanitizer, which
// reserves terabytes of shadow memory when it starts: those cases run in the release suite.
#if defined(SLUICE_TEST_ASAN)
#define SKIP_UNDER_ASAN() GTEST_SKIP() << "ulimit -v cannot hold an AddressSanitizer binary"
constexpr const char* kLimit600MB = "";  // the rest of the case still runs
#else
#define SKIP_UNDER_ASAN() (void)0
constexpr const char* kLimit600MB = "ulimit -v 600000 && ";
#endif

namespace sluice {
namespace {
namespace fs = std::filesystem;
using testing::ReadFile;
using testing::DirContents;
using testing::ExpectSameDatasetBytes;
using testing::TempDir;

using RunResult = testing::ShellResult;
RunResult Sh(const std::string& cmd) { return testing::RunShell(cmd); }

std::string Shardify() {
  const char* p = std::getenv("SHARDIFY");
  return p ? p : "build/tools/shardify";
}

std::vector<std::string> Lines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

// The crash of a run that SLUICE_FAULT_INJECT=N:kill:FILE ended: SIGKILL before its N-th call on
// FILE (base/sysio.h). The shell reports 128 + 9, or popen the signal itself when the shell
// exec'd the program.
::testing::AssertionResult Killed(const RunResult& r) {
  if ((r.code == 128 + SIGKILL || r.code == -1) &&
      r.out.find("fault injection: call") != std::string::npos &&
      r.out.find("kills the process") != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "not killed by the injector: exit " << r.code << "\n"
                                       << r.out;
}

class ShardifyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    corpus_ = new TempDir;
    const char* gen = std::getenv("MAKE_SAMPLE_CORPUS");
    RunResult r = Sh(std::string(gen ? gen : "tools/make-sample-corpus") + " --out " +
                     corpus_->path() + " --count 24 --bad --seed 3");
    ASSERT_EQ(r.code, 0) << r.out;
    manifest_ = corpus_->Join("manifest.jsonl");
    // The same corpus without its broken entries (the last 9 lines).
    auto lines = Lines(manifest_);
    std::ofstream clean(corpus_->Join("clean.jsonl"));
    for (size_t i = 0; i + 9 < lines.size(); ++i) clean << lines[i] << "\n";
  }
  static void TearDownTestSuite() { delete corpus_; }

  static RunResult Audio(const std::string& out, const std::string& extra = "") {
    return Sh(Shardify() + " audio -q -m " + manifest_ + " -o " + out + " --max-duration 30 " +
              extra);
  }

  static TempDir* corpus_;
  static std::string manifest_;
  TempDir tmp_;
};
TempDir* ShardifyTest::corpus_ = nullptr;
std::string ShardifyTest::manifest_;

TEST_F(ShardifyTest, EveryInputLineIsWrittenOrRejectedWithItsReason) {
  RunResult r = Audio(tmp_.Join("ds"), "--json");
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  const size_t lines = Lines(manifest_).size();
  EXPECT_EQ(j["records"].get<uint64_t>() + j["rejected"].get<uint64_t>(), lines);
  EXPECT_EQ(j["records"], 24);
  EXPECT_EQ(j["rejected"], 9);

  std::map<uint64_t, std::string> reasons;
  for (const auto& line : Lines(tmp_.Join("ds/rejects.jsonl"))) {
    auto rj = nlohmann::json::parse(line);
    EXPECT_EQ(rj["source"], manifest_);
    reasons[rj["line"].get<uint64_t>()] = rj["reason"].get<std::string>();
  }
  ASSERT_EQ(reasons.size(), 9u);
  auto has = [&](uint64_t line, const std::string& what) {
    EXPECT_NE(reasons[line].find(what), std::string::npos)
        << "line " << line << ": " << reasons[line];
  };
  has(25, "missing.wav: cannot open");
  has(26, "corrupt.wav");
  has(27, "zero length");
  has(28, "exceeds --max-duration 30");
  has(29, "invalid JSON");
  has(30, "missing \"text\"");
  has(31, "invalid UTF-8");
  has(32, "empty line");
  has(33, "duplicate key 'utt-00003', already written as record 3 of shard-00000.sluice");

  shards::Manifest m;
  ASSERT_OK(shards::LoadManifest(tmp_.Join("ds"), &m));
  EXPECT_EQ(m.records, 24u);
  EXPECT_EQ(m.rejected, 9u);
  EXPECT_EQ(m.sample_rate, 16000);
}

// Found by input_manifest_fuzzer (tests/tools/manifest_line_test.cc has the parser's side): a
// number beyond double's range stopped the run with "internal error" instead of rejecting the line.
TEST_F(ShardifyTest, NumberOutOfRangeRejectsItsLineAndTheRunGoesOn) {
  const std::string m = corpus_->Join("number_overflow.jsonl");
  {
    std::ofstream out(m);
    out << Lines(corpus_->Join("clean.jsonl"))[0] << "\n"
        << sluice::testing::FuzzRegression("input_manifest", "number-overflow.jsonl");
  }
  RunResult r = Sh(Shardify() + " audio -q --json -m " + m + " -o " + tmp_.Join("ds"));
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["records"], 1);
  EXPECT_EQ(j["rejected"], 1);
  const auto rejects = Lines(tmp_.Join("ds/rejects.jsonl"));
  ASSERT_EQ(rejects.size(), 1u);
  const auto rj = nlohmann::json::parse(rejects[0]);
  EXPECT_EQ(rj["line"], 2);
  EXPECT_NE(rj["reason"].get<std::string>().find("invalid JSON"), std::string::npos) << rejects[0];
}

TEST_F(ShardifyTest, RecordsHoldTheTranscriptAndResampledAudio) {
  ASSERT_EQ(Audio(tmp_.Join("ds")).code, 0);
  std::unique_ptr<shards::Dataset> ds;
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("ds"), {}, &ds));
  auto lines = Lines(manifest_);
  const auto& r = ds->shard(0);
  for (size_t i = 0; i < 24; ++i) {
    auto in = nlohmann::json::parse(lines[i]);
    EXPECT_EQ(r.key(i), in["id"].get<std::string>());
    std::string payload;
    ASSERT_OK(r.ReadRecord(i, &payload));
    shards::RecordView v;
    ASSERT_OK(shards::ParseRecord(payload.data(), payload.size(), "t", &v));
    EXPECT_EQ(v.Find(shards::FieldType::kText)->bytes(), in["text"].get<std::string>());
    const auto* audio = v.Find(shards::FieldType::kAudioPcm16);
    ASSERT_NE(audio, nullptr);
    EXPECT_EQ(audio->size / 2, r.record(i).duration);
    // espeak-ng's 22.05 kHz (or the 44.1 kHz stereo copies) resampled to 16 kHz.
    EXPECT_NEAR(double(r.record(i).duration) / 16000, in["duration"].get<double>(), 0.01)
        << r.key(i);
  }
}

TEST_F(ShardifyTest, OutputIsByteIdenticalForAnyThreadCount) {
  ASSERT_EQ(Audio(tmp_.Join("j1"), "-j 1 --shard-size 300KiB --block-size 64KiB").code, 0);
  ASSERT_EQ(Audio(tmp_.Join("j2"), "-j 2 --shard-size 300KiB --block-size 64KiB").code, 0);
  ASSERT_EQ(Audio(tmp_.Join("j5"), "-j 5 --shard-size 300KiB --block-size 64KiB").code, 0);
  auto a = DirContents(tmp_.Join("j1"));
  EXPECT_GT(a.size(), 4u);  // several shards
  EXPECT_EQ(a, DirContents(tmp_.Join("j2")));
  EXPECT_EQ(a, DirContents(tmp_.Join("j5")));
}

TEST_F(ShardifyTest, InterruptedRunResumesToTheSameBytes) {
  const std::string opts = "--shard-size 200KiB --block-size 32KiB";
  ASSERT_EQ(Audio(tmp_.Join("full"), opts).code, 0);
  // Killed before the first write of the third shard: two are durable, the third begun.
  RunResult crash =
      Sh("SLUICE_FAULT_INJECT=2:kill:shard-00002.sluice.tmp " + Shardify() + " audio -q -m " +
         manifest_ + " -o " + tmp_.Join("ds") + " --max-duration 30 " + opts);
  ASSERT_TRUE(Killed(crash));
  EXPECT_FALSE(fs::exists(tmp_.Join("ds/manifest.json")));
  EXPECT_TRUE(fs::exists(tmp_.Join("ds/shard-00001.sluice")));
  EXPECT_TRUE(fs::exists(tmp_.Join("ds/shard-00002.sluice.tmp")));  // the shard being written

  RunResult again = Audio(tmp_.Join("ds"), opts);
  EXPECT_NE(again.code, 0);
  EXPECT_NE(again.out.find("--resume"), std::string::npos) << again.out;

  RunResult other = Audio(tmp_.Join("ds"), "--resume --shard-size 100KiB --block-size 32KiB");
  EXPECT_NE(other.code, 0);
  EXPECT_NE(other.out.find("other inputs or options"), std::string::npos) << other.out;

  RunResult resumed = Audio(tmp_.Join("ds"), "--resume --json " + opts);
  ASSERT_EQ(resumed.code, 0) << resumed.out;
  EXPECT_TRUE(nlohmann::json::parse(resumed.out)["resumed"].get<bool>());
  EXPECT_EQ(DirContents(tmp_.Join("full")), DirContents(tmp_.Join("ds")));
}

// A kill kind misspelt must not run undisturbed: the crash test would then pass without a crash.
TEST_F(ShardifyTest, AnUnknownFaultKindIsRefusedBeforeAnythingIsWritten) {
  RunResult r = Sh("SLUICE_FAULT_INJECT=2:kil:shard-00000.sluice.tmp " + Shardify() +
                   " audio -q -m " + manifest_ + " -o " + tmp_.Join("ds") + " --max-duration 30");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown kind 'kil' (error, eio, short or kill)"), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(tmp_.Join("ds/manifest.json")));
}

// A resumed run's rates count the work it did: the shards it wrote in its wall time, not the
// dataset's whole audio (a finished dataset once reported 259510538 h/s).
TEST_F(ShardifyTest, ResumedRunsReportTheRatesOfTheirOwnWork) {
  const std::string opts = "--shard-size 200KiB --block-size 32KiB";
  RunResult crash =
      Sh("SLUICE_FAULT_INJECT=2:kill:shard-00002.sluice.tmp " + Shardify() + " audio -q -m " +
         manifest_ + " -o " + tmp_.Join("ds") + " --max-duration 30 " + opts);
  ASSERT_TRUE(Killed(crash));
  RunResult resumed = Audio(tmp_.Join("ds"), "--resume --json " + opts);
  ASSERT_EQ(resumed.code, 0) << resumed.out;
  const auto j = nlohmann::json::parse(resumed.out);
  shards::Manifest m;
  ASSERT_OK(shards::LoadManifest(tmp_.Join("ds"), &m));
  ASSERT_GT(m.shards.size(), 2u);
  uint64_t written = 0;  // samples of the shards after the two the crash left
  for (size_t i = 2; i < m.shards.size(); ++i) written += m.shards[i].duration;
  const double hours = j["hours_per_second"].get<double>() * j["wall_seconds"].get<double>();
  EXPECT_NEAR(hours, written / 16000.0 / 3600, 1e-9) << resumed.out;

  // Over the finished dataset nothing runs: no rates at all.
  RunResult done = Audio(tmp_.Join("ds"), "--resume --json " + opts);
  ASSERT_EQ(done.code, 0) << done.out;
  const auto d = nlohmann::json::parse(done.out);
  EXPECT_TRUE(d["already_complete"].get<bool>()) << done.out;
  EXPECT_FALSE(d.contains("hours_per_second")) << done.out;
  EXPECT_FALSE(d.contains("input_mb_per_second")) << done.out;
  done = Audio(tmp_.Join("ds"), "--resume " + opts);
  ASSERT_EQ(done.code, 0) << done.out;
  EXPECT_NE(done.out.find("already complete"), std::string::npos) << done.out;
  EXPECT_EQ(done.out.find("h/s"), std::string::npos) << done.out;
}

// --resume over a complete dataset said "resumed" and exit 0 whatever the command line: another
// manifest, another rate, no tokenizer. It is compared as a journal or a part's marker is.
TEST_F(ShardifyTest, ResumeOverACompleteDatasetChecksItsInputAndOptions) {
  // Beside the audio, which the manifest names by relative paths; edited below.
  const std::string input = corpus_->Join("resume-input.jsonl");
  fs::copy_file(corpus_->Join("clean.jsonl"), input, fs::copy_options::overwrite_existing);
  auto run = [&](const std::string& m, const std::string& extra) {
    return Sh(Shardify() + " audio -q -m " + m + " -o " + tmp_.Join("ds") + " " + extra);
  };
  ASSERT_EQ(run(input, "").code, 0);
  const auto before = DirContents(tmp_.Join("ds"));
  struct Case {
    std::string manifest, extra, says;
  };
  const std::vector<Case> cases = {
      {input, "--sample-rate 8000", "sample_rate: 8000 (the dataset: 16000)"},
      {input, "--tokenizer char", "tokenizer.spec: \"char\" (the dataset: \"\")"},
      {manifest_, "", "manifest: \"" + manifest_ + "\""},
  };
  for (const Case& c : cases) {
    RunResult r = run(c.manifest, "--resume " + c.extra);
    EXPECT_EQ(r.code, 2) << c.extra << r.out;
    EXPECT_NE(r.out.find("already holds a complete dataset, made with other inputs or options"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << r.out;
  }
  // The same path and size, one character of a transcript changed.
  std::string text = ReadFile(input);
  const size_t at = text.find("\"text\": \"") + 9;
  text[at] = text[at] == 'x' ? 'y' : 'x';
  testing::WriteFile(input, text);
  RunResult edited = run(input, "--resume");
  EXPECT_EQ(edited.code, 2) << edited.out;
  EXPECT_NE(edited.out.find("made from another version of the input (XXH3"), std::string::npos)
      << edited.out;
  EXPECT_EQ(before, DirContents(tmp_.Join("ds")));  // refusals touch nothing
}

// Two runs on one --out both passed its checks: one exited 0 over a shard the other replaced,
// or both exited 0 with the directory holding the other's dataset, or the loser died on
// "rename .shardify-journal.jsonl.tmp: No such file". A run holds DIR/.shardify.lock.
TEST_F(ShardifyTest, ALockedOutputDirectoryIsRefusedNamingItsHolder) {
  const std::string clean = corpus_->Join("clean.jsonl");
  std::unique_ptr<shardify::OutDirLock> held;
  ASSERT_OK(shardify::OutDirLock::Acquire(tmp_.Join("ds"), "shardify held-by-the-test", &held));
  RunResult r = Sh(Shardify() + " audio -q -m " + clean + " -o " + tmp_.Join("ds"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(tmp_.Join("ds") + " is being written by pid " + std::to_string(getpid())),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("shardify held-by-the-test"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(tmp_.Join("ds/manifest.json")));

  // merge's --out too.
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(Sh(Shardify() + " audio -q -m " + clean + " -o " +
                 tmp_.Join("p" + std::to_string(i)) + " --part " + std::to_string(i) + "/2")
                  .code,
              0);
  }
  std::unique_ptr<shardify::OutDirLock> merge_held;
  ASSERT_OK(shardify::OutDirLock::Acquire(tmp_.Join("merged"), "shardify merge", &merge_held));
  const std::string merge = Shardify() + " merge " + tmp_.Join("p0") + " " + tmp_.Join("p1") +
                            " -o " + tmp_.Join("merged");
  r = Sh(merge);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("is being written by pid"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(tmp_.Join("merged/manifest.json")));

  held.reset();
  merge_held.reset();
  r = Sh(Shardify() + " audio -q -m " + clean + " -o " + tmp_.Join("ds"));
  ASSERT_EQ(r.code, 0) << r.out;
  r = Sh(merge);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(fs::exists(tmp_.Join("ds/.shardify.lock")));  // datasets carry no lock file
  EXPECT_FALSE(fs::exists(tmp_.Join("merged/.shardify.lock")));
}

// The race itself: two runs of different options started together on one directory, a few
// times. Whichever order the scheduler gives them, at most one writes at a time: each run either
// completes its whole dataset or is refused with the lock (or the dataset the other finished),
// and the directory always ends as exactly one run's verified dataset.
TEST_F(ShardifyTest, ConcurrentRunsOnOneDirectoryNeverMixTheirFiles) {
  const std::string clean = corpus_->Join("clean.jsonl");
  const std::string opts = " --shard-size 100KiB --block-size 32KiB -j 2";
  auto cmd = [&](const std::string& out, int rate) {
    return Shardify() + " audio -q -m " + clean + " -o " + out + " --sample-rate " +
           std::to_string(rate) + opts;
  };
  ASSERT_EQ(Sh(cmd(tmp_.Join("ref16"), 16000)).code, 0);
  ASSERT_EQ(Sh(cmd(tmp_.Join("ref8"), 8000)).code, 0);
  const auto ref16 = DirContents(tmp_.Join("ref16")), ref8 = DirContents(tmp_.Join("ref8"));
  for (int round = 0; round < 4; ++round) {
    const std::string ds = tmp_.Join("ds" + std::to_string(round));
    // --overwrite: run after run, each would be right to replace the other's dataset.
    RunResult r =
        Sh("(" + cmd(ds, 16000) + " --overwrite > " + ds + ".a 2>&1; echo $? >> " + ds + ".a) & (" +
           cmd(ds, 8000) + " --overwrite > " + ds + ".b 2>&1; echo $? >> " + ds + ".b) & wait");
    ASSERT_EQ(r.code, 0) << r.out;
    for (const std::string& log : {ds + ".a", ds + ".b"}) {
      const std::string out = ReadFile(log);
      const bool ok = out.ends_with("\n0\n") || out == "0\n";
      EXPECT_TRUE(ok || out.find("is being written by") != std::string::npos) << round << out;
      EXPECT_EQ(out.find("No such file"), std::string::npos) << round << out;
    }
    EXPECT_EQ(Sh(Shardify() + " verify -q " + ds).code, 0) << round;
    const auto got = DirContents(ds);
    EXPECT_TRUE(got == ref16 || got == ref8) << round;
  }
}

// An offset of 1e15 s stopped the whole run with "internal error: vector::reserve"; it is one
// rejected line, naming the field.
TEST_F(ShardifyTest, AbsurdOffsetOrDurationRejectsItsLineAndTheRunGoesOn) {
  const auto lines = Lines(corpus_->Join("clean.jsonl"));
  auto with = [&](const std::string& field, const std::string& value) {
    auto j = nlohmann::json::parse(lines[1]);
    j[field] = nlohmann::json::parse(value);
    return j.dump();
  };
  const std::string m = corpus_->Join("absurd.jsonl");  // beside the audio
  testing::WriteFile(m, lines[0] + "\n" + with("offset", "1e15") + "\n" + with("duration", "1e15") +
                            "\n" + with("offset", "1e300") + "\n");
  RunResult r = Sh(Shardify() + " audio -q --json -m " + m + " -o " + tmp_.Join("ds"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["records"], 1);
  EXPECT_EQ(j["rejected"], 3);
  const auto rejects = Lines(tmp_.Join("ds/rejects.jsonl"));
  ASSERT_EQ(rejects.size(), 3u);
  const char* fields[] = {"\"offset\"", "\"duration\"", "\"offset\""};
  for (size_t i = 0; i < 3; ++i) {
    const auto rj = nlohmann::json::parse(rejects[i]);
    EXPECT_EQ(rj["line"], i + 2);
    EXPECT_EQ(rj["reason"].get<std::string>().rfind(fields[i], 0), 0u) << rejects[i];
  }
}

// CLI11 reads "nan" and "inf" as numbers and its checks let NaN through: --min-duration nan
// rejected nothing, --min-duration inf everything.
TEST_F(ShardifyTest, NumericFlagsRefuseNanInfinityAndAbsurdValues) {
  for (const std::string flag : {"--min-duration", "--max-duration", "--max-tokens-per-second"}) {
    for (const std::string value : {"nan", "inf", "-1", "1e300"}) {
      RunResult r = Audio(tmp_.Join("ds"), flag + " " + value);
      EXPECT_NE(r.code, 0) << flag << " " << value << ": " << r.out;
      EXPECT_NE(r.out.find(flag), std::string::npos) << r.out;
      EXPECT_FALSE(fs::exists(tmp_.Join("ds/manifest.json"))) << flag << " " << value;
    }
  }
  // A billion threads crashed the run in oneTBB (SIGSEGV).
  RunResult r = Audio(tmp_.Join("ds"), "-j 1000000000");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--threads"), std::string::npos) << r.out;
}

// Every line rejected exited 0 with an empty dataset, and with --overwrite replaced a good one.
TEST_F(ShardifyTest, AManifestWhoseEveryLineIsRejectedFailsAndKeepsTheDataset) {
  const std::string bad = tmp_.Join("bad.jsonl");
  testing::WriteFile(bad, "not json\n{\"audio_filepath\": \"a.wav\"}\n\n");
  RunResult r = Sh(Shardify() + " audio -q -m " + bad + " -o " + tmp_.Join("fresh"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("every one of the 3 input items was rejected"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("invalid JSON"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(tmp_.Join("fresh/manifest.json")));
  EXPECT_EQ(Lines(tmp_.Join("fresh/rejects.jsonl")).size(), 3u);

  ASSERT_EQ(Audio(tmp_.Join("ds")).code, 0);
  const auto good = DirContents(tmp_.Join("ds"));
  r = Sh(Shardify() + " audio -q -m " + bad + " -o " + tmp_.Join("ds") + " --overwrite");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("keeps the dataset it held"), std::string::npos) << r.out;
  EXPECT_EQ(good, DirContents(tmp_.Join("ds")));
  EXPECT_EQ(Sh(Shardify() + " verify -q " + tmp_.Join("ds")).code, 0);

  // A part may reject all of its items (exit 0); a merge of parts that rejected everything is
  // the same empty input as a single run.
  for (int i = 0; i < 2; ++i) {
    r = Sh(Shardify() + " audio -q -m " + bad + " -o " + tmp_.Join("p" + std::to_string(i)) +
           " --part " + std::to_string(i) + "/2");
    ASSERT_EQ(r.code, 0) << r.out;
  }
  r = Sh(Shardify() + " merge " + tmp_.Join("p0") + " " + tmp_.Join("p1") + " -o " +
         tmp_.Join("merged"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("every one of the 3 input items of the 2 parts was rejected"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(tmp_.Join("merged/manifest.json")));

  // The same for text.
  testing::WriteFile(tmp_.Join("blank.txt"), "\n \n\n");
  r = Sh(Shardify() + " text -q -i " + tmp_.Join("blank.txt") + " -o " + tmp_.Join("t"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("empty line"), std::string::npos) << r.out;
}

TEST_F(ShardifyTest, PartsMergeToTheSingleRunsRecords) {
  const std::string clean = corpus_->Join("clean.jsonl");
  auto run = [&](const std::string& out, const std::string& extra) {
    return Sh(Shardify() + " audio -q -m " + clean + " -o " + out + " " + extra);
  };
  ASSERT_EQ(run(tmp_.Join("single"), "").code, 0);
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(run(tmp_.Join("p" + std::to_string(i)), "--part " + std::to_string(i) + "/3").code,
              0);
  RunResult m = Sh(Shardify() + " merge " + tmp_.Join("p0") + " " + tmp_.Join("p1") + " " +
                   tmp_.Join("p2") + " -o " + tmp_.Join("merged"));
  ASSERT_EQ(m.code, 0) << m.out;
  std::unique_ptr<shards::Dataset> a, b;
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("single"), {}, &a));
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("merged"), {}, &b));
  EXPECT_EQ(b->num_shards(), 3u);
  // Both manifests name each shard's footer, which Dataset::Open checked.
  for (auto* ds : {a.get(), b.get()}) {
    for (size_t s = 0; s < ds->num_shards(); ++s) {
      ASSERT_TRUE(ds->manifest().shards[s].footer_xxh3.has_value()) << ds->dir() << " " << s;
      EXPECT_EQ(*ds->manifest().shards[s].footer_xxh3, ds->shard(s).footer_xxh3());
    }
  }
  std::vector<std::string> ka, kb, pa, pb;
  for (auto* ds : {a.get(), b.get()}) {
    for (size_t s = 0; s < ds->num_shards(); ++s) {
      for (size_t i = 0; i < ds->shard(s).num_records(); ++i) {
        std::string p;
        ASSERT_OK(ds->shard(s).ReadRecord(i, &p));
        (ds == a.get() ? ka : kb).emplace_back(ds->shard(s).key(i));
        (ds == a.get() ? pa : pb).push_back(p);
      }
    }
  }
  EXPECT_EQ(ka, kb);
  EXPECT_EQ(pa, pb);
  EXPECT_EQ(Sh(Shardify() + " verify -q " + tmp_.Join("merged")).code, 0);

  RunResult bad = Sh(Shardify() + " merge " + tmp_.Join("p0") + " " + tmp_.Join("p0") + " -o " +
                     tmp_.Join("dup"));
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.out.find("part 0/3 is in both"), std::string::npos) << bad.out;
}

TEST_F(ShardifyTest, PartRerunsAreIdempotentAndRedoOnlyIncompleteParts) {
  const std::string clean = corpus_->Join("clean.jsonl");
  const std::string opts = " --shard-size 200KiB --block-size 32KiB";
  auto part = [&](int i, const std::string& env = "", const std::string& extra = "") {
    return Sh(env + " " + Shardify() + " audio -q -m " + clean + " -o " +
              tmp_.Join("parts/" + std::to_string(i)) + " --part " + std::to_string(i) + "/3" +
              opts + extra);
  };
  ASSERT_EQ(Sh(Shardify() + " audio -q -m " + clean + " -o " + tmp_.Join("single") + opts).code, 0);
  ASSERT_EQ(part(0).code, 0);
  // Part 1 dies with a shard half written; part 2 after its manifest, before its marker.
  RunResult crash = part(1, "SLUICE_FAULT_INJECT=2:kill:shard-00001.sluice.tmp");
  ASSERT_TRUE(Killed(crash));
  crash = part(2, "SLUICE_FAULT_INJECT=1:kill:part.json.tmp");
  ASSERT_TRUE(Killed(crash));
  EXPECT_TRUE(fs::exists(tmp_.Join("parts/2/manifest.json")));
  EXPECT_FALSE(fs::exists(tmp_.Join("parts/2/part.json")));

  RunResult m =
      Sh(Shardify() + " merge --parts-dir " + tmp_.Join("parts") + " -o " + tmp_.Join("merged"));
  EXPECT_NE(m.code, 0);
  EXPECT_NE(m.out.find("parts 1, 2 of 3 missing or incomplete"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("its journal is part 1/3"), std::string::npos) << m.out;
  EXPECT_FALSE(fs::exists(tmp_.Join("merged/manifest.json")));

  // A complete part with other options is refused; with the same ones it is left alone.
  const auto part0 = DirContents(tmp_.Join("parts/0"));
  RunResult other = part(0, "", " --zstd-level 3");
  EXPECT_NE(other.code, 0);
  EXPECT_NE(other.out.find("completed with other inputs or options"), std::string::npos)
      << other.out;
  RunResult again = part(0, "", " --json");
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_NE(again.out.find("already complete"), std::string::npos) << again.out;
  EXPECT_EQ(part0, DirContents(tmp_.Join("parts/0")));

  // The same command line redoes the incomplete parts, without --resume or --overwrite.
  ASSERT_EQ(part(1).code, 0);
  ASSERT_EQ(part(2).code, 0);
  m = Sh(Shardify() + " merge --repack --parts-dir " + tmp_.Join("parts") + " -o " +
         tmp_.Join("merged"));
  ASSERT_EQ(m.code, 0) << m.out;
  ExpectSameDatasetBytes(tmp_.Join("single"), tmp_.Join("merged"));
  EXPECT_EQ(Sh(Shardify() + " verify -q " + tmp_.Join("merged")).code, 0);

  // Part 1's output in part 2's directory: refused, not destroyed.
  ASSERT_TRUE(Killed(Sh("SLUICE_FAULT_INJECT=2:kill:shard-00000.sluice.tmp " + Shardify() +
                        " audio -q -m " + clean + " -o " + tmp_.Join("x") + " --part 1/3" + opts)));
  RunResult wrong =
      Sh(Shardify() + " audio -q -m " + clean + " -o " + tmp_.Join("x") + " --part 2/3" + opts);
  EXPECT_NE(wrong.code, 0);
  EXPECT_NE(wrong.out.find("unfinished output of part 1/3"), std::string::npos) << wrong.out;
}

TEST_F(ShardifyTest, PartAutoReadsTheSlurmArrayVariables) {
  const std::string clean = corpus_->Join("clean.jsonl");
  RunResult r = Sh("SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_MIN=1 " +
                   Shardify() + " audio -q -m " + clean + " -o " + tmp_.Join("p") + " --part auto");
  ASSERT_EQ(r.code, 0) << r.out;
  auto marker = nlohmann::json::parse(ReadFile(tmp_.Join("p/part.json")));
  EXPECT_EQ(marker["part"], 1);
  EXPECT_EQ(marker["parts"], 3);
  EXPECT_EQ(marker["items"], nlohmann::json({8, 16}));  // 24 lines in 3 parts
  r = Sh("env -u SLURM_ARRAY_TASK_ID " + Shardify() + " audio -q -m " + clean + " -o " +
         tmp_.Join("q") + " --part auto");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("SLURM_ARRAY_TASK_ID unset"), std::string::npos) << r.out;
}

TEST_F(ShardifyTest, MergeCarriesTheTokenizerModelOver) {
  const std::string clean = corpus_->Join("clean.jsonl");
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(
        Sh(Shardify() + " audio -q -m " + clean + " -o " + tmp_.Join("p/" + std::to_string(i)) +
           " --tokenizer bpe:40 --part " + std::to_string(i) + "/2")
            .code,
        0);
  }
  RunResult m = Sh(Shardify() + " merge " + tmp_.Join("p/1") + " " + tmp_.Join("p/0") + " -o " +
                   tmp_.Join("merged"));
  ASSERT_EQ(m.code, 0) << m.out;
  EXPECT_EQ(ReadFile(tmp_.Join("merged/tokenizer.model")),
            ReadFile(tmp_.Join("p/0/tokenizer.model")));
  // Given out of order, the parts are merged in part order (their markers give it).
  std::unique_ptr<shards::Dataset> ds;
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("merged"), {}, &ds));
  EXPECT_EQ(ds->shard(0).key(0), "utt-00000");
}

TEST_F(ShardifyTest, VerifyNamesTheDamagedShardBlockAndOffset) {
  ASSERT_EQ(Audio(tmp_.Join("ds"), "--block-size 64KiB").code, 0);
  EXPECT_EQ(Sh(Shardify() + " verify -q " + tmp_.Join("ds")).code, 0);
  const std::string shard = tmp_.Join("ds/shard-00000.sluice");
  uint64_t block1 = 0;
  {
    std::unique_ptr<shards::ShardReader> r;
    ASSERT_OK(shards::ShardReader::Open(shard, {}, &r));
    ASSERT_GT(r->num_blocks(), 2u);
    block1 = r->block(1).offset;
  }
  std::string bytes = ReadFile(shard);
  bytes[block1 + 1000] ^= 0x01;  // inside the second block
  testing::WriteFile(shard, bytes);
  RunResult r = Sh(Shardify() + " verify -q " + tmp_.Join("ds"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("DAMAGED shard-00000.sluice"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("checksum mismatch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("block 1 at offset " + std::to_string(block1)), std::string::npos) << r.out;

  testing::WriteFile(shard, bytes.substr(0, bytes.size() - 10));  // truncated
  r = Sh(Shardify() + " verify -q --json " + tmp_.Join("ds"));
  EXPECT_EQ(r.code, 1);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["ok"].get<bool>());
  EXPECT_GE(j["problems"].size(), 1u);
}

TEST_F(ShardifyTest, FlacCodecIsLosslessAgainstPcm16) {
  const std::string clean = corpus_->Join("clean.jsonl");
  ASSERT_EQ(Sh(Shardify() + " audio -q -m " + clean + " -o " + tmp_.Join("pcm")).code, 0);
  ASSERT_EQ(
      Sh(Shardify() + " audio -q -m " + clean + " -o " + tmp_.Join("flac") + " --codec flac").code,
      0);
  std::unique_ptr<shards::Dataset> pcm, flac;
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("pcm"), {}, &pcm));
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("flac"), {}, &flac));
  EXPECT_EQ(flac->manifest().codec, "flac");
  EXPECT_LT(flac->manifest().bytes(), pcm->manifest().bytes());
  for (size_t i = 0; i < pcm->shard(0).num_records(); ++i) {
    std::string p1, p2;
    ASSERT_OK(pcm->shard(0).ReadRecord(i, &p1));
    ASSERT_OK(flac->shard(0).ReadRecord(i, &p2));
    shards::RecordView v1, v2;
    ASSERT_OK(shards::ParseRecord(p1.data(), p1.size(), "pcm", &v1));
    ASSERT_OK(shards::ParseRecord(p2.data(), p2.size(), "flac", &v2));
    const auto* f = v2.Find(shards::FieldType::kAudioFlac);
    ASSERT_NE(f, nullptr);
    std::vector<int16_t> decoded;
    int rate = 0;
    ASSERT_OK(features::DecodeFlac(reinterpret_cast<const uint8_t*>(f->data), f->size, "flac",
                                   &decoded, &rate));
    EXPECT_EQ(rate, 16000);
    const auto* p = v1.Find(shards::FieldType::kAudioPcm16);
    ASSERT_EQ(decoded.size() * 2, p->size);
    EXPECT_EQ(std::memcmp(decoded.data(), p->data, p->size), 0) << "record " << i;
    EXPECT_EQ(flac->shard(0).record(i).duration, pcm->shard(0).record(i).duration);
  }
}

TEST_F(ShardifyTest, TextLinesAndDocuments) {
  const std::string in = tmp_.Join("in.txt");
  testing::WriteFile(
      in, "first line\nsecond line\n\nbad \xff byte\r\nfourth\n\n\nlast doc line one\nline two\n");
  RunResult r = Sh(Shardify() + " text -q --json -i " + in + " -o " + tmp_.Join("lines"));
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["records"], 5);
  EXPECT_EQ(j["rejected"], 4);  // three empty lines and one invalid UTF-8
  auto rejects = Lines(tmp_.Join("lines/rejects.jsonl"));
  ASSERT_EQ(rejects.size(), 4u);
  auto first = nlohmann::json::parse(rejects[0]);
  EXPECT_EQ(first["line"], 3);
  EXPECT_EQ(first["reason"], "empty line");
  EXPECT_EQ(nlohmann::json::parse(rejects[1])["line"], 4);

  r = Sh(Shardify() + " text -q --json --docs -i " + in + " -o " + tmp_.Join("docs"));
  ASSERT_EQ(r.code, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["records"], 2);
  EXPECT_EQ(j["rejected"], 1);  // the document holding the invalid byte
  std::unique_ptr<shards::Dataset> ds;
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("docs"), {}, &ds));
  EXPECT_EQ(ds->manifest().kind, "text");
  std::string p;
  ASSERT_OK(ds->shard(0).ReadRecord(1, &p));
  shards::RecordView v;
  ASSERT_OK(shards::ParseRecord(p.data(), p.size(), "t", &v));
  EXPECT_EQ(v.Find(shards::FieldType::kText)->bytes(), "last doc line one\nline two");
  EXPECT_EQ(ds->shard(0).key(1), in + ":8");
}

// The token ids of record i, read back from the dataset.
std::vector<int32_t> RecordTokens(const shards::Dataset& ds, size_t shard, size_t i,
                                  std::string* text) {
  std::string p;
  EXPECT_OK(ds.shard(shard).ReadRecord(i, &p));
  shards::RecordView v;
  EXPECT_OK(shards::ParseRecord(p.data(), p.size(), "t", &v));
  const auto* f = v.Find(shards::FieldType::kTokens);
  if (text) *text = std::string(v.Find(shards::FieldType::kText)->bytes());
  if (!f) return {};
  std::vector<int32_t> ids(f->size / 4);
  std::memcpy(ids.data(), f->data, f->size);
  return ids;
}

TEST_F(ShardifyTest, CharTokenizerIdsDecodeToTheNormalisedTranscript) {
  const std::string clean = corpus_->Join("clean.jsonl");
  RunResult r =
      Sh(Shardify() + " audio -q -m " + clean + " -o " + tmp_.Join("ds") + " --tokenizer char");
  ASSERT_EQ(r.code, 0) << r.out;
  std::unique_ptr<shards::Dataset> ds;
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("ds"), {}, &ds));
  const auto& m = ds->manifest();
  EXPECT_EQ((*m.tokenizer)["type"], "char");
  EXPECT_EQ(m.fields, (std::vector<std::string>{"audio", "text", "tokens"}));
  std::unique_ptr<features::Tokenizer> tok;
  Status st = loader::LoadDatasetTokenizer(*m.tokenizer, tmp_.Join("ds"), &tok);
  ASSERT_OK(st);
  uint64_t total = 0;
  for (size_t i = 0; i < ds->shard(0).num_records(); ++i) {
    std::string text, decoded;
    auto ids = RecordTokens(*ds, 0, i, &text);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ds->shard(0).record(i).tokens, ids.size());
    total += ids.size();
    ASSERT_OK(tok->Decode(ids.data(), ids.size(), &decoded));
    EXPECT_EQ(decoded, features::NormalizeText(text, tok->normalize()));
  }
  EXPECT_EQ(m.tokens, total);
}

TEST_F(ShardifyTest, BpeTokenizerIsTrainedDeterministicallyAndStored) {
  const std::string clean = corpus_->Join("clean.jsonl");
  for (const char* d : {"a", "b"}) {
    RunResult r =
        Sh(Shardify() + " audio -q -m " + clean + " -o " + tmp_.Join(d) + " --tokenizer bpe:60");
    ASSERT_EQ(r.code, 0) << r.out;
  }
  EXPECT_EQ(DirContents(tmp_.Join("a")), DirContents(tmp_.Join("b")));
  EXPECT_TRUE(fs::exists(tmp_.Join("a/tokenizer.model")));
  shards::Manifest m;
  ASSERT_OK(shards::LoadManifest(tmp_.Join("a"), &m));
  std::unique_ptr<features::Tokenizer> tok;
  ASSERT_OK(loader::LoadDatasetTokenizer(*m.tokenizer, tmp_.Join("a"), &tok));
  EXPECT_EQ(tok->type(), "sentencepiece");

  // A replaced model is caught by its checksum.
  testing::WriteFile(tmp_.Join("a/tokenizer.model"), "not the model");
  EXPECT_TRUE(loader::LoadDatasetTokenizer(*m.tokenizer, tmp_.Join("a"), &tok).IsCorruption());
}

TEST_F(ShardifyTest, TextDocumentsEndWithTheEndOfDocumentId) {
  const std::string in = tmp_.Join("in.txt");
  testing::WriteFile(in, "Hello world.\nSecond line here\n\nAnother document!\n");
  RunResult r =
      Sh(Shardify() + " text -q --docs --tokenizer char -i " + in + " -o " + tmp_.Join("ds"));
  ASSERT_EQ(r.code, 0) << r.out;
  std::unique_ptr<shards::Dataset> ds;
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("ds"), {}, &ds));
  ASSERT_EQ(ds->shard(0).num_records(), 2u);
  auto ids = RecordTokens(*ds, 0, 0, nullptr);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.back(), features::kEndOfDocumentId);
  EXPECT_EQ(ds->shard(0).record(0).tokens, ids.size());
  std::unique_ptr<features::Tokenizer> tok;
  ASSERT_OK(loader::LoadDatasetTokenizer(*ds->manifest().tokenizer, tmp_.Join("ds"), &tok));
  std::string decoded;
  ASSERT_OK(tok->Decode(ids.data(), ids.size(), &decoded));
  EXPECT_EQ(decoded, "hello world second line here");
}

// The token-id contract: ids stored by shardify equal the ids the loader makes
// online from the same tokenizer, batch for batch.
TEST_F(ShardifyTest, OfflineAndOnlineTokenizationAgree) {
  const std::string clean = corpus_->Join("clean.jsonl");
  ASSERT_EQ(
      Sh(Shardify() + " audio -q -m " + clean + " -o " + tmp_.Join("ids") + " --tokenizer bpe:50")
          .code,
      0);
  ASSERT_EQ(Sh(Shardify() + " audio -q -m " + clean + " -o " + tmp_.Join("raw")).code, 0);
  shards::Manifest m;
  ASSERT_OK(shards::LoadManifest(tmp_.Join("ids"), &m));
  std::unique_ptr<features::Tokenizer> tok;
  ASSERT_OK(loader::LoadDatasetTokenizer(*m.tokenizer, tmp_.Join("ids"), &tok));

  auto collect = [&](const std::string& dir, bool online) {
    loader::LoaderOptions o;
    o.kind = loader::FeatureKind::kFbank;
    o.seed = 7;
    o.threads = 2;
    if (online) {
      o.tokenizer = [&tok](std::string_view text, std::vector<int32_t>* ids) {
        return tok->Encode(text, ids);
      };
    }
    std::unique_ptr<loader::Loader> l;
    Status st = loader::Loader::Open(dir, o, &l);
    EXPECT_OK(st);
    std::map<std::string, std::vector<int32_t>> by_key;
    if (!st.ok()) return by_key;
    EXPECT_OK(l->Start(0));
    const loader::Batch* b = nullptr;
    while (l->Next(&b).ok() && b != nullptr) {
      for (size_t r = 0; r < b->size(); ++r) {
        const int32_t* row = b->tokens() + r * b->max_tokens();
        by_key[std::string(b->keys()[r])] = std::vector<int32_t>(row, row + b->token_lengths()[r]);
      }
    }
    return by_key;
  };
  auto offline = collect(tmp_.Join("ids"), false);
  auto online = collect(tmp_.Join("raw"), true);
  EXPECT_EQ(offline.size(), 24u);
  EXPECT_EQ(offline, online);
  for (const auto& [key, ids] : offline) EXPECT_FALSE(ids.empty()) << key;
}

// --store text: the text only, each record's id count in the index, the tokenizer in the
// manifest. The loader loads that tokenizer by itself and packs the same batches as over the
// dataset that stores the ids, though their blocks hold different records.
TEST_F(ShardifyTest, TextStoredWithCountsPacksLikeStoredIds) {
  const std::string in = tmp_.Join("in.txt");
  std::string text;
  for (int i = 0; i < 400; ++i) {
    text += "Document " + std::to_string(i) + " says hello, world";
    for (int k = 0; k < i % 5; ++k) text += " and more words " + std::to_string(k * i);
    text += (i % 3 == 2) ? "\n\n" : "\n";
  }
  testing::WriteFile(in, text);
  const std::string common = " text -q --docs --tokenizer char --block-size 4KiB -i " + in;
  RunResult r = Sh(Shardify() + common + " -o " + tmp_.Join("ids"));
  ASSERT_EQ(r.code, 0) << r.out;
  r = Sh(Shardify() + common + " --store text -o " + tmp_.Join("text"));
  ASSERT_EQ(r.code, 0) << r.out;
  std::unique_ptr<shards::Dataset> ids, counted;
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("ids"), {}, &ids));
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("text"), {}, &counted));
  EXPECT_EQ(counted->manifest().fields, std::vector<std::string>{"text"});
  EXPECT_EQ(*counted->manifest().tokenizer, *ids->manifest().tokenizer);
  EXPECT_EQ(counted->manifest().tokens, ids->manifest().tokens);
  EXPECT_LT(counted->manifest().bytes(), ids->manifest().bytes());
  std::string first_text;
  EXPECT_TRUE(RecordTokens(*counted, 0, 0, &first_text).empty());  // no ids stored
  EXPECT_EQ(counted->shard(0).record(0).tokens, ids->shard(0).record(0).tokens);

  for (int rank = 0; rank < 2; ++rank) {
    auto digests = [&](const std::string& dir) {
      loader::LoaderOptions o;  // no tokenizer: the dataset's own
      o.threads = 2;
      o.seed = 3;
      o.world = 2;
      o.rank = rank;
      o.packing.seq_len = 31;
      o.packing.batch_size = 4;
      o.packing.chunk_tokens = 2000;
      return testing::EpochDigests(dir, o, 1);
    };
    const std::vector<uint64_t> offline = digests(tmp_.Join("ids"));
    EXPECT_GT(offline.size(), 5u);
    EXPECT_EQ(digests(tmp_.Join("text")), offline) << "rank " << rank;
  }
  r = Sh(Shardify() + " text -q --store text -i " + in + " -o " + tmp_.Join("x"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--store text needs --tokenizer"), std::string::npos) << r.out;
}

TEST_F(ShardifyTest, TokenizerErrorsAreClear) {
  RunResult r =
      Sh(Shardify() + " audio -q -m " + manifest_ + " -o " + tmp_.Join("x") + " --tokenizer bpe:x");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("bpe:N"), std::string::npos) << r.out;
  r = Sh(Shardify() + " audio -q -m " + manifest_ + " -o " + tmp_.Join("x") +
         " --tokenizer spm:/nonexistent.model");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("/nonexistent.model"), std::string::npos) << r.out;
  testing::WriteFile(tmp_.Join("bad.model"), "garbage");
  r = Sh(Shardify() + " audio -q -m " + manifest_ + " -o " + tmp_.Join("x") +
         " --tokenizer spm:" + tmp_.Join("bad.model"));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("not a SentencePiece model"), std::string::npos) << r.out;
}

TEST_F(ShardifyTest, PrecomputedFbankMatchesTheStoredAudio) {
  const std::string clean = corpus_->Join("clean.jsonl");
  RunResult r = Sh(Shardify() + " audio -q -m " + clean + " -o " + tmp_.Join("ds") +
                   " --features fbank --num-mel-bins 40 --frame-length 25 --frame-shift 10");
  ASSERT_EQ(r.code, 0) << r.out;
  std::unique_ptr<shards::Dataset> ds;
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("ds"), {}, &ds));
  const auto& m = ds->manifest();
  EXPECT_EQ((*m.features)["kind"], "fbank");
  EXPECT_EQ((*m.features)["num_mel_bins"], 40);
  EXPECT_EQ(m.fields, (std::vector<std::string>{"audio", "text", "features"}));
  features::FbankOptions fo;
  fo.num_mel_bins = 40;
  features::FbankComputer fbank(fo);
  features::Workspace ws;
  for (size_t i = 0; i < 3; ++i) {
    std::string p;
    ASSERT_OK(ds->shard(0).ReadRecord(i, &p));
    shards::RecordView v;
    ASSERT_OK(shards::ParseRecord(p.data(), p.size(), "t", &v));
    const auto* audio = v.Find(shards::FieldType::kAudioPcm16);
    const auto* feats = v.Find(shards::FieldType::kFeaturesF16);
    ASSERT_NE(audio, nullptr);
    ASSERT_NE(feats, nullptr);
    std::vector<int16_t> pcm(audio->size / 2);
    std::memcpy(pcm.data(), audio->data, audio->size);
    std::vector<float> x(pcm.size()), want;
    features::Pcm16ToFloat(pcm.data(), pcm.size(), x.data(), 1.0f);
    const int64_t frames = fbank.Compute(x.data(), x.size(), &ws, &want);
    shards::FeaturesF16View f16;
    ASSERT_OK(shards::DecodeFeaturesF16(*feats, "t", &f16));
    ASSERT_EQ(f16.frames, frames);
    ASSERT_EQ(f16.bins, 40u);
    std::vector<float> got(size_t{f16.frames} * f16.bins);
    features::HalfToFloat(f16.values, got.size(), got.data());
    for (size_t k = 0; k < got.size(); ++k) {
      ASSERT_NEAR(got[k], want[k], 2e-3 * std::max(1.0f, std::abs(want[k])))
          << "record " << i << " value " << k;
    }
  }
  RunResult bad =
      Sh(Shardify() + " audio -q -m " + clean + " -o " + tmp_.Join("x") + " --drop-audio");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("--features"), std::string::npos) << bad.out;
}

TEST_F(ShardifyTest, InfoJsonHasTheAdvertisedFields) {
  ASSERT_EQ(Audio(tmp_.Join("ds")).code, 0);
  RunResult r = Sh(Shardify() + " info --json " + tmp_.Join("ds"));
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"records", "rejected", "seconds", "bytes"}) EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["records"], 24);
  EXPECT_GT(j["seconds"].get<double>(), 24.0);
}

// A 16 kHz mono 16-bit WAV whose header declares `declared` frames but which holds `held`.
void WriteWav(const std::string& path, uint32_t declared, uint32_t held) {
  auto u32 = [](std::string* s, uint32_t v) {
    for (int i = 0; i < 4; ++i) s->push_back(static_cast<char>(v >> (8 * i)));
  };
  auto u16 = [](std::string* s, uint16_t v) {
    s->push_back(static_cast<char>(v));
    s->push_back(static_cast<char>(v >> 8));
  };
  std::string b = "RIFF";
  u32(&b, 36 + 2 * declared);
  b += "WAVEfmt ";
  u32(&b, 16);
  u16(&b, 1);  // PCM
  u16(&b, 1);  // mono
  u32(&b, 16000);
  u32(&b, 32000);
  u16(&b, 2);  // block align
  u16(&b, 16);
  b += "data";
  u32(&b, 2 * declared);
  for (uint32_t i = 0; i < held; ++i) u16(&b, static_cast<uint16_t>((i * 37) % 2000));
  testing::WriteFile(path, b);
}

TEST_F(ShardifyTest, ATruncatedWavIsRejectedWithBothLengthsOrKeptUnderAFlag) {
  WriteWav(tmp_.Join("whole.wav"), 8000, 8000);
  WriteWav(tmp_.Join("cut.wav"), 8000, 5000);  // a copy that stopped short
  testing::WriteFile(tmp_.Join("m.jsonl"),
                     "{\"audio_filepath\": \"whole.wav\", \"text\": \"a\", \"id\": \"whole\"}\n"
                     "{\"audio_filepath\": \"cut.wav\", \"text\": \"b\", \"id\": \"cut\"}\n");
  const std::string run = Shardify() + " audio -q --json -m " + tmp_.Join("m.jsonl") + " -o ";
  RunResult r = Sh(run + tmp_.Join("strict"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["records"], 1) << r.out;
  const auto rejects = Lines(tmp_.Join("strict/rejects.jsonl"));
  ASSERT_EQ(rejects.size(), 1u);
  const std::string reason = nlohmann::json::parse(rejects[0])["reason"];
  EXPECT_NE(reason.find("cut.wav: header declares 8000 frames, file holds 5000"),
            std::string::npos)
      << reason;

  r = Sh(run + tmp_.Join("lenient") + " --allow-truncated-audio");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["records"], 2) << r.out;
  shards::Manifest m;
  ASSERT_OK(shards::LoadManifest(tmp_.Join("lenient"), &m));
  EXPECT_EQ(m.duration(), 8000u + 5000u);  // the cut file's 5000 frames, no more, no padding
}

TEST_F(ShardifyTest, MaxTokensPerSecondRejectsTranscriptsTheAudioCannotAlign) {
  // One second of audio: 20 alternating tokens fit under 25 per second; 40 equal ones need 79.
  WriteWav(tmp_.Join("one.wav"), 16000, 16000);
  std::string fits;
  for (int i = 0; i < 10; ++i) fits += "ab";
  const std::string too_long(40, 'b');
  testing::WriteFile(tmp_.Join("m.jsonl"),
                     "{\"audio_filepath\": \"one.wav\", \"text\": \"" + fits +
                         "\", \"id\": \"fits\"}\n"
                         "{\"audio_filepath\": \"one.wav\", \"text\": \"" + too_long +
                         "\", \"id\": \"too-long\"}\n");
  const std::string run = Shardify() + " audio -q --json -m " + tmp_.Join("m.jsonl") + " -o ";
  RunResult r = Sh(run + tmp_.Join("ds") + " --tokenizer char --max-tokens-per-second 25");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["records"], 1) << r.out;
  const auto rejects = Lines(tmp_.Join("ds/rejects.jsonl"));
  ASSERT_EQ(rejects.size(), 1u);
  const nlohmann::json j = nlohmann::json::parse(rejects[0]);
  EXPECT_EQ(j["line"], 2);
  // "bbbb...": a blank between every pair of equal neighbours, so 40 tokens need 79 frames.
  const std::string reason = j["reason"];
  EXPECT_NE(reason.find("40 tokens (79 CTC frames with repeats) in 1 s of audio is 79 per "
                        "second, over --max-tokens-per-second 25"),
            std::string::npos)
      << reason;
  // Without the flag both are written; without a tokenizer the flag is an error.
  r = Sh(run + tmp_.Join("all") + " --tokenizer char");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["records"], 2) << r.out;
  r = Sh(run + tmp_.Join("x") + " --max-tokens-per-second 25");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("needs --tokenizer"), std::string::npos) << r.out;
}

// The last line of a run's output: the --json summary (warnings come before it on stderr).
nlohmann::json Summary(const std::string& out) {
  const size_t end = out.find_last_not_of('\n');
  const size_t start = out.rfind('\n', end);
  return nlohmann::json::parse(out.substr(start == std::string::npos ? 0 : start + 1), nullptr,
                               false);
}

// A 16 kHz mono PCM16 WAV whose data chunk declares `seconds` of samples held in a hole of a
// sparse file: hours of audio at no disk cost.
void WriteSparseWav(const std::string& path, uint32_t seconds) {
  WriteWav(path, seconds * 16000, 0);
  fs::resize_file(path, 44 + uint64_t{seconds} * 32000);
}

// A long recording is refused from its header's length, before decoding, and a segment of it
// reads the segment: both used to read (and decode) the whole file, so under a memory limit the
// run died (a 2 GB WAV cost 6.3 GB to be rejected).
TEST_F(ShardifyTest, LongRecordingsAreMeasuredFromTheHeaderAndSegmentsReadAlone) {
  WriteWav(tmp_.Join("short.wav"), 8000, 8000);
  WriteSparseWav(tmp_.Join("long.wav"), 30000);  // 8.3 h, 960 MB
  testing::WriteFile(
      tmp_.Join("m.jsonl"),
      "{\"audio_filepath\": \"short.wav\", \"text\": \"a\", \"id\": \"short\"}\n"
      "{\"audio_filepath\": \"long.wav\", \"text\": \"b\", \"id\": \"whole\"}\n"
      "{\"audio_filepath\": \"long.wav\", \"text\": \"c\", \"id\": \"seg1\", \"offset\": 20000, "
      "\"duration\": 2}\n"
      "{\"audio_filepath\": \"long.wav\", \"text\": \"d\", \"id\": \"seg2\", \"offset\": 29990, "
      "\"duration\": 5}\n");
  // 600 MB of address space: the whole file does not fit, the header and a segment do.
  RunResult r = Sh(kLimit600MB + Shardify() + " audio -q --json -j 1 -m " + tmp_.Join("m.jsonl") +
                   " -o " + tmp_.Join("ds") + " --max-duration 30");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = Summary(r.out);
  EXPECT_EQ(j["records"], 3) << r.out;
  // What was read: the short file, the long one's header twice and two segments; not 960 MB.
  EXPECT_LT(j["input_bytes"].get<uint64_t>(), 1'000'000u) << r.out;
  const auto rejects = Lines(tmp_.Join("ds/rejects.jsonl"));
  ASSERT_EQ(rejects.size(), 1u);
  const std::string reason = nlohmann::json::parse(rejects[0])["reason"];
  EXPECT_EQ(reason, tmp_.Join("long.wav") + ": 30000.000 s of audio exceeds --max-duration 30");
  shards::Manifest m;
  ASSERT_OK(shards::LoadManifest(tmp_.Join("ds"), &m));
  EXPECT_EQ(m.duration(), 8000u + 2 * 16000u + 5 * 16000u);
}

// Out of memory said "internal error: std::bad_alloc"; now it names the options that bound what
// is held at once.
TEST_F(ShardifyTest, OutOfMemoryNamesTheOptionsToLower) {
  SKIP_UNDER_ASAN();
  WriteSparseWav(tmp_.Join("long.wav"), 30000);
  testing::WriteFile(tmp_.Join("m.jsonl"),
                     "{\"audio_filepath\": \"long.wav\", \"text\": \"b\", \"id\": \"whole\"}\n");
  // Allowed by --max-duration, but 30000 s decode to 1.9 GB of floats.
  RunResult r = Sh("ulimit -v 600000 && " + Shardify() + " audio -q -j 1 -m " +
                   tmp_.Join("m.jsonl") + " -o " + tmp_.Join("ds") + " --max-duration 40000");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("shardify: error: out of memory. HINT: lower --threads"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("--max-duration"), std::string::npos) << r.out;
}

// A segment that ends past the end of its file was stored short without a word.
TEST_F(ShardifyTest, SegmentEndingPastItsFileIsRejectedBeyondTheTolerance) {
  WriteWav(tmp_.Join("one.wav"), 16000, 16000);
  testing::WriteFile(
      tmp_.Join("m.jsonl"),
      "{\"audio_filepath\": \"one.wav\", \"text\": \"a\", \"id\": \"in\", \"offset\": 0.5, "
      "\"duration\": 0.505}\n"
      "{\"audio_filepath\": \"one.wav\", \"text\": \"b\", \"id\": \"out\", \"offset\": 0.5, "
      "\"duration\": 2}\n");
  const std::string run = Shardify() + " audio -q --json -m " + tmp_.Join("m.jsonl") + " -o ";
  RunResult r = Sh(run + tmp_.Join("ds"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(Summary(r.out)["records"], 1) << r.out;
  const auto rejects = Lines(tmp_.Join("ds/rejects.jsonl"));
  ASSERT_EQ(rejects.size(), 1u);
  const std::string reason = nlohmann::json::parse(rejects[0])["reason"];
  EXPECT_NE(reason.find("one.wav: segment offset 0.500 s + duration 2.000 s ends 1.500 s past the "
                        "end of the audio (1.000 s)"),
            std::string::npos)
      << reason;
  shards::Manifest m;
  ASSERT_OK(shards::LoadManifest(tmp_.Join("ds"), &m));
  EXPECT_EQ(m.duration(), 8000u);  // within 10 ms: kept, short by 5 ms
  r = Sh(run + tmp_.Join("lenient") + " --allow-truncated-audio");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(Summary(r.out)["records"], 2) << r.out;
}

// A float WAV whose samples go beyond full scale was clipped to int16 silently.
TEST_F(ShardifyTest, ClippedFloatAudioIsCountedAndNamed) {
  std::string b = "RIFF";
  auto u32 = [&b](uint32_t v) {
    for (int i = 0; i < 4; ++i) b += static_cast<char>(v >> (8 * i));
  };
  auto u16 = [&b](uint16_t v) {
    b += static_cast<char>(v);
    b += static_cast<char>(v >> 8);
  };
  const uint32_t n = 1600;
  u32(36 + 4 * n);
  b += "WAVEfmt ";
  u32(16);
  u16(3);  // IEEE float
  u16(1);
  u32(16000);
  u32(64000);
  u16(4);
  u16(32);
  b += "data";
  u32(4 * n);
  for (uint32_t i = 0; i < n; ++i) {
    const float v = i % 100 == 0 ? 1.5f : 0.25f;  // 16 samples at 1.5
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    u32(bits);
  }
  testing::WriteFile(tmp_.Join("loud.wav"), b);
  WriteWav(tmp_.Join("ok.wav"), 1600, 1600);
  testing::WriteFile(tmp_.Join("m.jsonl"),
                     "{\"audio_filepath\": \"ok.wav\", \"text\": \"a\", \"id\": \"ok\"}\n"
                     "{\"audio_filepath\": \"loud.wav\", \"text\": \"b\", \"id\": \"loud\"}\n");
  const std::string run = Shardify() + " audio -q -m " + tmp_.Join("m.jsonl") + " -o ";
  RunResult r = Sh(run + tmp_.Join("ds") + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = Summary(r.out);
  EXPECT_EQ(j["records"], 2) << r.out;
  EXPECT_EQ(j["clipped_files"], 1) << r.out;
  EXPECT_EQ(j["clipped_samples"], 16) << r.out;
  EXPECT_NE(r.out.find("shardify: warning: " + tmp_.Join("loud.wav") +
                       ": 16 of 1600 samples beyond full scale (peak 1.5) clipped to [-1, 1]"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("ok.wav"), std::string::npos) << r.out;
  r = Sh(run + tmp_.Join("text"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("1 records had samples beyond full scale, clipped (16 samples"),
            std::string::npos)
      << r.out;
}

// A clip shorter than one 25 ms feature frame became a row of zero frames: --min-duration's
// default rejects it, and precomputed features with a longer window reject what has no frame.
TEST_F(ShardifyTest, ClipsShorterThanOneFeatureFrameAreRejected) {
  WriteWav(tmp_.Join("tiny.wav"), 160, 160);  // 10 ms
  WriteWav(tmp_.Join("ok.wav"), 1600, 1600);  // 100 ms
  WriteWav(tmp_.Join("edge.wav"), 480, 480);  // 30 ms: one 25 ms frame, none of 50 ms
  testing::WriteFile(tmp_.Join("m.jsonl"),
                     "{\"audio_filepath\": \"tiny.wav\", \"text\": \"a\", \"id\": \"tiny\"}\n"
                     "{\"audio_filepath\": \"ok.wav\", \"text\": \"b\", \"id\": \"ok\"}\n"
                     "{\"audio_filepath\": \"edge.wav\", \"text\": \"c\", \"id\": \"edge\"}\n");
  const std::string run = Shardify() + " audio -q --json -m " + tmp_.Join("m.jsonl") + " -o ";
  RunResult r = Sh(run + tmp_.Join("ds"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(Summary(r.out)["records"], 2) << r.out;
  auto rejects = Lines(tmp_.Join("ds/rejects.jsonl"));
  ASSERT_EQ(rejects.size(), 1u);
  std::string reason = nlohmann::json::parse(rejects[0])["reason"];
  EXPECT_NE(reason.find("tiny.wav: 0.01 s of audio is below --min-duration 0.025"),
            std::string::npos)
      << reason;
  r = Sh(run + tmp_.Join("fb") + " --features fbank --frame-length 50");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(Summary(r.out)["records"], 1) << r.out;
  rejects = Lines(tmp_.Join("fb/rejects.jsonl"));
  ASSERT_EQ(rejects.size(), 2u);
  reason = nlohmann::json::parse(rejects[1])["reason"];
  EXPECT_NE(reason.find("edge.wav: 0.03 s of audio is shorter than one frame of --features' "
                        "window"),
            std::string::npos)
      << reason;
}

// open() of a FIFO blocks until a writer appears: an audio_filepath or a tokenizer model naming
// one hung the run. Both are refused, naming the path.
TEST_F(ShardifyTest, FifoInputsAreRefusedNotWaitedOn) {
  WriteWav(tmp_.Join("ok.wav"), 1600, 1600);
  testing::FifoWatchdog audio(tmp_.Join("pipe.wav"), 30);
  testing::FifoWatchdog model(tmp_.Join("pipe.model"), 30);
  testing::WriteFile(tmp_.Join("m.jsonl"),
                     "{\"audio_filepath\": \"ok.wav\", \"text\": \"a\", \"id\": \"ok\"}\n"
                     "{\"audio_filepath\": \"pipe.wav\", \"text\": \"b\", \"id\": \"pipe\"}\n");
  const std::string run =
      "timeout 20 " + Shardify() + " audio -q --json -m " + tmp_.Join("m.jsonl") + " -o ";
  RunResult r = Sh(run + tmp_.Join("ds"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(Summary(r.out)["records"], 1) << r.out;
  const auto rejects = Lines(tmp_.Join("ds/rejects.jsonl"));
  ASSERT_EQ(rejects.size(), 1u);
  const std::string reason = nlohmann::json::parse(rejects[0])["reason"];
  EXPECT_EQ(reason.rfind(tmp_.Join("pipe.wav") + ": not a regular file (FIFO)", 0), 0u) << reason;
  r = Sh(run + tmp_.Join("tok") + " --tokenizer spm:" + tmp_.Join("pipe.model"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(tmp_.Join("pipe.model") + ": not a regular file (FIFO)"), std::string::npos)
      << r.out;
  // A FIFO as the manifest: refused before the run, saying what it is rather than "no such".
  r = Sh(Shardify() + " audio -q -m " + tmp_.Join("pipe.model") + " -o " + tmp_.Join("m"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(tmp_.Join("pipe.model") + ": not a regular file"), std::string::npos)
      << r.out;
  EXPECT_FALSE(audio.fired());
  EXPECT_FALSE(model.fired());
}

TEST_F(ShardifyTest, NewFlagsAreInTheHelpAndTheDocs) {
  const std::string help = Sh(Shardify() + " audio --help").out;
  const char* root = std::getenv("SLUICE_SOURCE_ROOT");
  ASSERT_NE(root, nullptr) << "meson sets SLUICE_SOURCE_ROOT";
  const std::string doc = ReadFile(std::string(root) + "/docs/shardify.md");
  for (const char* flag :
       {"--max-tokens-per-second", "--allow-truncated-audio", "--add-special-tokens", "--eod-token"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
    EXPECT_NE(doc.find(flag), std::string::npos) << flag;
  }
}

TEST_F(ShardifyTest, UsageErrorsAreClear) {
  EXPECT_EQ(Sh(Shardify() + " --help").code, 0);
  RunResult r = Sh(Shardify() + " audio -o " + tmp_.Join("x"));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--manifest"), std::string::npos) << r.out;
  r = Sh(Shardify() + " audio -m /nonexistent.jsonl -o " + tmp_.Join("x"));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("/nonexistent.jsonl"), std::string::npos) << r.out;
  r = Sh(Shardify() + " audio -m " + manifest_ + " -o " + tmp_.Join("x") + " --part 3/3");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("i/N"), std::string::npos) << r.out;
  r = Sh(Shardify() + " info " + tmp_.Join("nothing"));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("no such directory"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace sluice
