// sluice-train end to end on a shardified espeak-ng sample corpus (tools/make-sample-corpus):
// the tiny model's loss falls, a resumed run equals the uninterrupted one byte for byte, and the
// errors a user can make are reported with the file and a HINT.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "features/byte_level.h"
#include "features/utf8.h"
#include "trainer/checkpoint.h"
#include "cli_util.h"
#include "trainer/held_out.h"
#include "shards/dataset.h"
#include "test_util.h"
#include "assert_ok.h"

namespace {

using sluice::train_test::Env;
using sluice::train_test::Result;
using sluice::train_test::JsonLines;
using sluice::train_test::Shell;
using sluice::testing::ReadFile;
using sluice::testing::TempDir;
using sluice::testing::WriteFile;

class TrainCli : public ::testing::Test {
 protected:
  // One corpus for the suite: 24 clips (about 75 s of speech), shardified three ways.
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string corpus = dir_->Join("corpus");
    ASSERT_EQ(Shell(Env("MAKE_SAMPLE_CORPUS") + " --out " + corpus + " --count 24 --jobs 2").code,
              0);
    const std::string shardify = Env("SHARDIFY") + " audio -m " + corpus + "/manifest.jsonl -o ";
    ASSERT_EQ(Shell(shardify + dir_->Join("chars") + " --tokenizer char").code, 0);
    ASSERT_EQ(Shell(shardify + dir_->Join("cased") + " --tokenizer char --keep-case").code, 0);
    ASSERT_EQ(Shell(shardify + dir_->Join("plain")).code, 0);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  // Small batches so that the corpus makes several steps per epoch; two model replicas.
  static Result Train(const std::string& dataset, const std::string& args) {
    return Shell(Env("SLUICE_TRAIN") + " " + dir_->Join(dataset) +
                 " --device cpu --preset tiny --replicas 2 " + "--max-frames 1500 --seed 3 " +
                 args);
  }
  static TempDir* dir_;
};
TempDir* TrainCli::dir_ = nullptr;

TEST_F(TrainCli, TinyModelLossFallsAndEpochsReportCer) {
  const Result r = Train("chars", "--epochs 5 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto lines = JsonLines(r.out);
  ASSERT_EQ(lines.size(), 5u) << r.out;
  for (const auto& j : lines) {
    for (const char* key : {"epoch", "loss", "cer", "wer", "wall_seconds", "wait_seconds"})
      EXPECT_TRUE(j.contains(key)) << key;
    EXPECT_GE(j["cer"].get<double>(), 0.0);
    EXPECT_GT(j["eval_utterances"].get<int>(), 0);
    EXPECT_FALSE(j["partial"].get<bool>());
  }
  const double first = lines.front()["loss"], last = lines.back()["loss"];
  std::printf("train loss %.2f -> %.2f, eval loss %.2f -> %.2f over %d steps\n", first, last,
              lines.front()["eval_loss"].get<double>(), lines.back()["eval_loss"].get<double>(),
              lines.back()["step"].get<int>());
  EXPECT_LT(last, 0.9 * first);
  EXPECT_LT(lines.back()["eval_loss"].get<double>(), lines.front()["eval_loss"].get<double>());
}

TEST_F(TrainCli, ResumeReproducesTheUninterruptedRunBitForBit) {
  TempDir run;
  // Uninterrupted: 11 steps (an epoch is about 8), checkpoints at 5 and 10 (mid-epoch) and 11.
  const Result a =
      Train("chars", "--steps 11 --checkpoint-every 5 --checkpoint " + run.Join("a-{step}.ckpt"));
  ASSERT_EQ(a.code, 0) << a.out;
  // Interrupted at step 5, resumed to 11 across the epoch end (and its evaluation).
  const Result b = Train("chars", "--steps 11 --resume " + run.Join("a-5.ckpt") + " --checkpoint " +
                                      run.Join("b-{step}.ckpt"));
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_NE(b.out.find("resumed at step 5"), std::string::npos) << b.out;
  EXPECT_EQ(b.out.find("step     5/"), std::string::npos)
      << "the resumed run must start at step 6\n"
      << b.out;
  EXPECT_NE(b.out.find("step     6/"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("epoch 0:"), std::string::npos)
      << "the resume should cross the end of epoch 0\n"
      << b.out;
  const std::string final_a = ReadFile(run.Join("a-11.ckpt")),
                    final_b = ReadFile(run.Join("b-11.ckpt"));
  ASSERT_FALSE(final_a.empty());
  EXPECT_TRUE(final_a == final_b) << "parameters, optimizer or loader state differ after a resume";
  EXPECT_NE(ReadFile(run.Join("a-5.ckpt")), final_a);
}

// sluice-bench exposes elastic resume: the state rank 0 of two prints after one batch resumes on
// one rank with every record the two ranks had not taken.
TEST_F(TrainCli, BenchResumesAStateOfAnotherWorldSize) {
  const std::string bench = Env("SLUICE_BENCH") + " epoch " + dir_->Join("chars") +
                            " --threads 1 --max-frames 1500 --json";
  const Result whole = Shell(bench), stopped = Shell(bench + " --world 2 --stop-after 1");
  ASSERT_EQ(whole.code, 0) << whole.out;
  ASSERT_EQ(stopped.code, 0) << stopped.out;
  const nlohmann::json state = JsonLines(stopped.out).at(0).at("state");
  EXPECT_EQ(state, nlohmann::json::parse(R"({"epoch": 0, "batches": 1, "world": 2})"));
  const Result rest = Shell(bench + " --resume-state '" + state.dump() + "'");
  ASSERT_EQ(rest.code, 0) << rest.out;
  const nlohmann::json w = JsonLines(whole.out).at(0), r = JsonLines(rest.out).at(0);
  EXPECT_GT(r.at("consumed_records").get<int>(), 0) << rest.out;
  EXPECT_EQ(r.at("utterances").get<int>() + r.at("consumed_records").get<int>(),
            w.at("utterances").get<int>())
      << rest.out << whole.out;
  EXPECT_EQ(r.at("state").at("earlier"),
            nlohmann::json::parse(R"([{"world": 2, "batches": 1}])"));
}

TEST_F(TrainCli, FlippedByteInTheCheckpointIsDetected) {
  TempDir run;
  const std::string ckpt = run.Join("run.ckpt");
  ASSERT_EQ(Train("chars", "--steps 2 --checkpoint " + ckpt).code, 0);
  std::string bytes = ReadFile(ckpt);
  bytes[bytes.size() / 2] ^= 0x04;
  WriteFile(ckpt, bytes);
  const Result r = Train("chars", "--steps 4 --resume " + ckpt);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find(ckpt), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("checksum mismatch"), std::string::npos) << r.out;
}

TEST_F(TrainCli, VocabularyMismatchWithTheCheckpointNamesIt) {
  TempDir run;
  const std::string ckpt = run.Join("run.ckpt");
  ASSERT_EQ(Train("chars", "--steps 1 --checkpoint " + ckpt).code, 0);
  const Result r = Train("cased", "--steps 2 --resume " + ckpt);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find(ckpt + ": vocabulary mismatch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("HINT"), std::string::npos) << r.out;
}

TEST_F(TrainCli, ResumeWithOtherOptionsSaysWhich) {
  TempDir run;
  const std::string ckpt = run.Join("run.ckpt");
  ASSERT_EQ(Train("chars", "--steps 1 --checkpoint " + ckpt).code, 0);
  const Result r = Train("chars", "--steps 1 --lr 0.1 --resume " + ckpt);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--lr"), std::string::npos) << r.out;
}

// Every feature option is part of the run: the resume check once compared a hand-kept
// subset, so --use-log-fbank (say) could change between a run and its resume unnoticed.
TEST_F(TrainCli, ResumeRefusesAChangedFeatureOptionOutsideTheOldSubset) {
  TempDir run;
  const std::string ckpt = run.Join("run.ckpt");
  ASSERT_EQ(Train("chars", "--steps 1 --checkpoint " + ckpt).code, 0);
  for (const char* flag : {"--use-log-fbank false", "--raw-energy false", "--htk-compat true",
                           "--use-power false", "--round-to-power-of-two false",
                           "--blackman-coeff 0.5", "--energy-floor 1"}) {
    const Result r = Train("chars", std::string("--steps 2 ") + flag + " --resume " + ckpt);
    EXPECT_EQ(r.code, 1) << flag << "\n" << r.out;
    const std::string name = std::string(flag).substr(0, std::string(flag).find(' '));
    EXPECT_NE(r.out.find(name), std::string::npos) << flag << "\n" << r.out;
  }
}

// The data is part of the run by its content (trainer/datasets.h, DatasetFingerprint): a resume
// on other clips with the same characters, or on more clips, is refused naming the data, where the
// vocabulary check alone let it through; the dataset copied to another path resumes.
TEST_F(TrainCli, ResumeOnOtherDataIsRefusedAndOnACopyElsewhereAccepted) {
  TempDir run;
  // --steps is part of the run: the checkpoint resumed is step 2's of a 3-step run. No held-out
  // records: which keys a fraction holds out differs between the datasets.
  const std::string args = "--eval-fraction 0 --steps 3 ";
  ASSERT_EQ(
      Train("chars", args + "--checkpoint-every 2 --checkpoint " + run.Join("run-{step}.ckpt"))
          .code,
      0);
  const std::string ckpt = run.Join("run-2.ckpt");
  // Both keep the vocabulary, the set of characters of the same transcripts: "renamed" holds the
  // corpus's clips under other ids (other records), "more" the corpus and its first clip again.
  const std::string corpus = dir_->Join("corpus");
  {
    std::ifstream in(corpus + "/manifest.jsonl");
    std::ofstream renamed(corpus + "/renamed.jsonl"), more(corpus + "/more.jsonl");
    std::string line;
    nlohmann::json first;
    while (std::getline(in, line)) {
      nlohmann::json j = nlohmann::json::parse(line);
      if (first.is_null()) first = j;
      more << line << "\n";
      j["id"] = "renamed-" + j["id"].get<std::string>();
      renamed << j.dump() << "\n";
    }
    first["id"] = "again";
    more << first.dump() << "\n";
  }
  for (const char* name : {"renamed", "more"}) {
    const std::string out = dir_->Join(std::string("chars-") + name);
    ASSERT_EQ(Shell(Env("SHARDIFY") + " audio -m " + corpus + "/" + name + ".jsonl -o " + out +
                    " --tokenizer char")
                  .code,
              0);
    const Result r = Train(std::string("chars-") + name, args + "--resume " + ckpt);
    EXPECT_EQ(r.code, 1) << name << "\n" << r.out;
    EXPECT_NE(r.out.find(ckpt + ": written by a run on other data: " + out + " holds content"),
              std::string::npos)
        << name << "\n"
        << r.out;
    EXPECT_EQ(r.out.find("vocabulary mismatch"), std::string::npos) << name << "\n" << r.out;
  }
  ASSERT_EQ(Shell("cp -r " + dir_->Join("chars") + " " + dir_->Join("chars-copied")).code, 0);
  const Result copy = Train("chars-copied", args + "--resume " + ckpt);
  EXPECT_EQ(copy.code, 0) << copy.out;
  EXPECT_NE(copy.out.find("resumed at step 2"), std::string::npos) << copy.out;
}

TEST_F(TrainCli, SpecAugmentMasksTrainingBatchesButNotEvaluation) {
  // lr 0 keeps the weights at their initial values, so the evaluation must not change when
  // augmentation is on, while the training loss of the same batch must.
  const std::string args = "--steps 1 --lr 0 --json --eval-fraction 0.3";
  const Result plain = Train("chars", args);
  const Result masked = Train("chars", args + " --spec-augment --time-masks 3 --max-time-width 40");
  ASSERT_EQ(plain.code, 0) << plain.out;
  ASSERT_EQ(masked.code, 0) << masked.out;
  const auto a = JsonLines(plain.out), b = JsonLines(masked.out);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_NE(a[0]["loss"].get<double>(), b[0]["loss"].get<double>());
  EXPECT_EQ(a[0]["eval_loss"].get<double>(), b[0]["eval_loss"].get<double>());
  EXPECT_GT(a[0]["eval_utterances"].get<int>(), 0);
}

// --eval-fraction splits the dataset by key: each epoch trains on every record not held out and
// evaluates every held-out one, each once.
TEST_F(TrainCli, HeldOutRecordsAreEvaluatedAndNeverTrained) {
  std::unique_ptr<sluice::shards::Dataset> ds;
  ASSERT_OK(sluice::shards::Dataset::Open(dir_->Join("chars"), sluice::shards::ReadOptions(), &ds));
  int total = 0, held = 0, held_tiny = 0;
  for (size_t s = 0; s < ds->num_shards(); ++s)
    for (size_t i = 0; i < ds->shard(s).num_records(); ++i, ++total) {
      held += sluice::train::IsHeldOut(ds->shard(s).key(i), 0.3);
      held_tiny += sluice::train::IsHeldOut(ds->shard(s).key(i), 0.0001);
    }
  ASSERT_GT(held, 0);
  ASSERT_LT(held, total);
  const Result r = Train("chars", "--epochs 2 --lr 0 --json --eval-fraction 0.3");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto lines = JsonLines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  for (const auto& j : lines) {
    EXPECT_EQ(j["utterances"].get<int>(), total - held) << j.dump();
    EXPECT_EQ(j["eval_utterances"].get<int>(), held) << j.dump();
  }
  // A fraction that holds out no record is an error naming the flag, not an empty evaluation.
  ASSERT_EQ(held_tiny, 0);
  const Result none = Train("chars", "--steps 1 --eval-fraction 0.0001");
  EXPECT_EQ(none.code, 1) << none.out;
  EXPECT_NE(none.out.find("--eval-fraction 0.0001 holds out none of " + dir_->Join("chars")),
            std::string::npos)
      << none.out;
}

// --data DIR:WEIGHT: a weighted mixture trains mix_records utterances an epoch and evaluates
// every source's held-out records once; its weights are part of the run.
TEST_F(TrainCli, TrainsOnAWeightedMixtureWhoseWeightsArePartOfTheRun) {
  TempDir run;
  const std::string a = dir_->Join("chars"), b = run.Join("copy");
  ASSERT_EQ(Shell("cp -r " + a + " " + b).code, 0);
  std::unique_ptr<sluice::shards::Dataset> ds;
  ASSERT_OK(sluice::shards::Dataset::Open(a, sluice::shards::ReadOptions(), &ds));
  int held = 0;
  for (size_t s = 0; s < ds->num_shards(); ++s)
    for (size_t i = 0; i < ds->shard(s).num_records(); ++i)
      held += sluice::train::IsHeldOut(ds->shard(s).key(i), 0.3);
  ASSERT_GT(held, 0);
  const std::string train = Env("SLUICE_TRAIN") +
                            " --device cpu --preset tiny --max-frames 1500 --seed 3 "
                            "--eval-fraction 0.3 --mix-records 30 ";
  const std::string ckpt = run.Join("mix.ckpt");
  const Result r = Shell(train + "--data " + a + ":3 --data " + b + ":1 --epochs 2 --json " +
                         "--checkpoint " + ckpt);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto lines = JsonLines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  for (const auto& j : lines) {
    EXPECT_EQ(j["utterances"].get<int>(), 30) << j.dump();
    EXPECT_EQ(j["eval_utterances"].get<int>(), 2 * held) << j.dump();
  }
  const Result other = Shell(train + "--data " + a + ":1 --data " + b + ":1 --epochs 2 " +
                             "--resume " + ckpt);
  EXPECT_EQ(other.code, 1) << other.out;
  EXPECT_NE(other.out.find("(flag --data)"), std::string::npos) << other.out;
  const Result same = Shell(train + "--data " + a + ":3 --data " + b + ":1 --epochs 2 " +
                            "--resume " + ckpt);
  EXPECT_EQ(same.code, 0) << same.out;

  const Result neither = Shell(Env("SLUICE_TRAIN") + " --device cpu --steps 1");
  EXPECT_NE(neither.code, 0);
  EXPECT_NE(neither.out.find("give a DATASET directory or --data"), std::string::npos)
      << neither.out;
  const Result tokenizers = Shell(train + "--steps 1 --data " + a + " --data " +
                                  dir_->Join("cased"));
  EXPECT_EQ(tokenizers.code, 1) << tokenizers.out;
  EXPECT_NE(tokenizers.out.find("disagree on their tokenizer"), std::string::npos)
      << tokenizers.out;
}

TEST_F(TrainCli, ActivationAndSpecAugmentAreStoredAndResumeRefusesAChange) {
  TempDir run;
  ASSERT_EQ(Train("chars",
                  "--steps 2 --activation swish --spec-augment --checkpoint-every 1 --checkpoint " +
                      run.Join("run-{step}.ckpt"))
                .code,
            0);
  const std::string ckpt = run.Join("run-1.ckpt");
  const Result gelu = Train("chars", "--steps 2 --spec-augment --resume " + ckpt);
  EXPECT_EQ(gelu.code, 1);
  EXPECT_NE(gelu.out.find("activation: \"gelu\" (checkpoint: \"swish\") (flag --activation)"),
            std::string::npos)
      << gelu.out;
  const Result unmasked = Train("chars", "--steps 2 --activation swish --resume " + ckpt);
  EXPECT_EQ(unmasked.code, 1);
  EXPECT_NE(unmasked.out.find("spec_augment: false (checkpoint: true) (flag --spec-augment)"),
            std::string::npos)
      << unmasked.out;
  const Result same =
      Train("chars", "--steps 2 --activation swish --spec-augment --resume " + ckpt);
  EXPECT_EQ(same.code, 0) << same.out;
}

TEST_F(TrainCli, DatasetWithoutTokenIdsHasAHint) {
  const Result r = Train("plain", "--steps 1");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find(dir_->Join("plain")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no token ids"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("HINT: shardify"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--tokenizer char"), std::string::npos) << r.out;
}

// An LLM tokenizer's ids are the file's, with no id free for CTC's blank: refused with a hint
// rather than training with a real token as the blank.
TEST_F(TrainCli, DatasetWithAnLlmTokenizerIsRefusedForCtc) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) {
    std::string c;
    sluice::features::AppendUtf8(sluice::features::ByteLevelChar(static_cast<uint8_t>(b)), &c);
    vocab[c] = b;
  }
  const nlohmann::json j = {
      {"added_tokens", {{{"id", 256}, {"content", "<|endoftext|>"}, {"special", true}}}},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
  WriteFile(dir_->Join("tokenizer.json"), j.dump());
  ASSERT_EQ(Shell(Env("SHARDIFY") + " audio -q -m " + dir_->Join("corpus/manifest.jsonl") +
                  " -o " + dir_->Join("llm") + " --tokenizer hf:" + dir_->Join("tokenizer.json"))
                .code,
            0);
  const Result r = Train("llm", "--steps 1");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("no CTC blank"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("HINT: shardify"), std::string::npos) << r.out;
}

// Without a GPU (or without the CUDA trainer built), --device cuda is an error naming the cause,
// never a crash. The default suite runs this on every machine; where a GPU is present the run
// trains instead, and the gpu suite (train_cuda_test.cc) is the test that matters.
TEST_F(TrainCli, CudaDeviceWithoutAGpuIsAClearError) {
  const Result r = Shell(Env("SLUICE_TRAIN") + " " + dir_->Join("chars") +
                         " --device cuda --steps 1 --preset tiny");
  if (r.code == 0) GTEST_SKIP() << "a GPU is present: --device cuda trained\n" << r.out;
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--device cuda"), std::string::npos) << r.out;
  const bool no_device = r.out.find("no CUDA device") != std::string::npos;
  const bool not_built = r.out.find("built without the CUDA trainer") != std::string::npos;
  EXPECT_TRUE(no_device || not_built) << r.out;
  EXPECT_NE(r.out.find("HINT"), std::string::npos) << r.out;
}

}  // namespace

// sluice-train takes the loader's flags from the table sluice-bench epoch uses, and records them
// in the run like its own: a resume that changes one is refused naming it. Flags the launcher or
// the model decide are refused, never read and ignored, and a flag's former name names the new.
TEST_F(TrainCli, LoaderFlagsOfTheBenchAreTakenAndRecordedInTheRun) {
  TempDir run;
  const std::string loader_flags =
      "--speed-perturb --corrupt skip --num-buckets 3 --dtype float32 ";
  const std::string ckpt = run.Join("run.ckpt");
  const Result r = Train("chars", "--steps 2 " + loader_flags + "--checkpoint " + ckpt);
  ASSERT_EQ(r.code, 0) << r.out;
  const Result unperturbed =
      Train("chars", "--steps 2 --corrupt skip --num-buckets 3 --resume " + ckpt);
  EXPECT_EQ(unperturbed.code, 1) << unperturbed.out;
  EXPECT_NE(
      unperturbed.out.find("loader.speed_perturb: false (checkpoint: true) (flag --speed-perturb)"),
      std::string::npos)
      << unperturbed.out;
  const Result buckets =
      Train("chars", "--steps 2 --speed-perturb --corrupt skip --resume " + ckpt);
  EXPECT_EQ(buckets.code, 1) << buckets.out;
  EXPECT_NE(buckets.out.find("loader.batching.num_buckets: 8 (checkpoint: 3) (flag --num-buckets)"),
            std::string::npos)
      << buckets.out;
  const Result same = Train("chars", "--steps 2 " + loader_flags + "--resume " + ckpt);
  EXPECT_EQ(same.code, 0) << same.out;

  const Result half = Train("chars", "--steps 1 --dtype float16");
  EXPECT_EQ(half.code, 1) << half.out;
  EXPECT_NE(half.out.find("dtype float16 (--dtype): the model takes float32 features"),
            std::string::npos)
      << half.out;
  const Result rank = Train("chars", "--steps 1 --rank 1 --world 2");
  EXPECT_NE(rank.code, 0) << rank.out;  // a command-line error (CLI11's code)
  EXPECT_NE(rank.out.find("set by the launcher"), std::string::npos) << rank.out;
  const Result packed = Train("chars", "--steps 1 --seq-len 64");
  EXPECT_NE(packed.code, 0) << packed.out;  // a command-line error (CLI11's code)
  EXPECT_NE(packed.out.find("a row per utterance"), std::string::npos) << packed.out;
  const Result conversation = Train("chars", "--steps 1 --encoder-frames fastconformer");
  EXPECT_NE(conversation.code, 0) << conversation.out;  // a command-line error (CLI11's code)
  EXPECT_NE(conversation.out.find("--encoder-frames: sluice-train trains ASR"), std::string::npos)
      << conversation.out;
  const Result renamed = Train("chars", "--steps 1 --buckets 3");
  EXPECT_NE(renamed.code, 0) << renamed.out;  // a command-line error (CLI11's code)
  EXPECT_NE(renamed.out.find("--buckets was renamed --num-buckets"), std::string::npos) << renamed.out;
}
