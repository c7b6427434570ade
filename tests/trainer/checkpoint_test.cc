// The checkpoint file: round trip, and every kind of damage becomes a Corruption (or Unsupported)
// naming the file: flipped bytes anywhere, truncation, a foreign file, a newer version.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "trainer/checkpoint.h"
#include "trainer/checkpoint_format.h"
#include "test_util.h"
#include "assert_ok.h"

namespace sluice::train {
namespace {

Checkpoint Sample() {
  Checkpoint c;
  c.config = {{"model", {{"d_model", 32}}}, {"run", {{"seed", 7}}}};
  c.tokenizer_fingerprint = 0x0123456789abcdefull;
  c.vocab = 27;
  for (int i = 0; i < 101; ++i) {
    c.params.push_back(0.5f * i - 3);
    c.adam_m.push_back(1e-3f * i);
    c.adam_v.push_back(1e-6f * i);
  }
  c.adam_step = 42;
  c.loader = {3, 17};
  c.counters = {42, 7, 1234, 5678.25, 99.5, 4};
  return c;
}

void ExpectEqual(const Checkpoint& a, const Checkpoint& b) {
  EXPECT_EQ(a.config, b.config);
  EXPECT_EQ(a.tokenizer_fingerprint, b.tokenizer_fingerprint);
  EXPECT_EQ(a.vocab, b.vocab);
  EXPECT_EQ(a.params, b.params);
  EXPECT_EQ(a.adam_m, b.adam_m);
  EXPECT_EQ(a.adam_v, b.adam_v);
  EXPECT_EQ(a.adam_step, b.adam_step);
  EXPECT_EQ(a.loader, b.loader);
  EXPECT_EQ(a.counters.step, b.counters.step);
  EXPECT_EQ(a.counters.seed, b.counters.seed);
  EXPECT_EQ(a.counters.utterances, b.counters.utterances);
  EXPECT_EQ(a.counters.audio_seconds, b.counters.audio_seconds);
  EXPECT_EQ(a.counters.epoch_loss_sum, b.counters.epoch_loss_sum);
  EXPECT_EQ(a.counters.epoch_steps, b.counters.epoch_steps);
}

TEST(Checkpoint, RoundTripsThroughAFile) {
  testing::TempDir dir;
  const std::string path = dir.Join("run.ckpt");
  ASSERT_OK(WriteCheckpoint(path, Sample()));
  Checkpoint back;
  const Status s = ReadCheckpoint(path, &back);
  ASSERT_OK(s);
  ExpectEqual(Sample(), back);
}

TEST(Checkpoint, SameStateGivesSameBytes) {
  std::string a, b;
  ASSERT_OK(EncodeCheckpoint(Sample(), &a));
  ASSERT_OK(EncodeCheckpoint(Sample(), &b));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size() % 8, 0u);
  EXPECT_EQ(std::memcmp(a.data(), ckpt::kMagic, 8), 0);
}

TEST(Checkpoint, EveryFlippedByteIsDetected) {
  std::string good;
  ASSERT_OK(EncodeCheckpoint(Sample(), &good));
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    Checkpoint out;
    const Status s = DecodeCheckpoint(bad, "x/run.ckpt", &out);
    ASSERT_FALSE(s.ok()) << "byte " << i;
    EXPECT_TRUE(s.IsCorruption() || s.IsUnsupported()) << s.ToString();
    EXPECT_NE(s.message().find("x/run.ckpt"), std::string::npos) << s.ToString();
  }
}

TEST(Checkpoint, FlippedParameterByteIsAChecksumMismatch) {
  std::string bytes;
  ASSERT_OK(EncodeCheckpoint(Sample(), &bytes));
  bytes[bytes.size() / 2] ^= 1;
  Checkpoint out;
  const Status s = DecodeCheckpoint(bytes, "run.ckpt", &out);
  ASSERT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("checksum mismatch"), std::string::npos) << s.ToString();
}

TEST(Checkpoint, TruncatedFileSaysTruncated) {
  std::string bytes;
  ASSERT_OK(EncodeCheckpoint(Sample(), &bytes));
  for (size_t keep : {size_t{0}, size_t{7}, size_t{31}, size_t{100}, bytes.size() - 1}) {
    Checkpoint out;
    const Status s = DecodeCheckpoint(std::string_view(bytes).substr(0, keep), "run.ckpt", &out);
    ASSERT_TRUE(s.IsCorruption()) << keep;
    if (keep >= ckpt::kHeaderBytes) {
      EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.ToString();
    }
  }
}

TEST(Checkpoint, ForeignFileHasAHint) {
  Checkpoint out;
  const Status s = DecodeCheckpoint(std::string(64, 'x'), "model.pt", &out);
  ASSERT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("HINT"), std::string::npos);
  EXPECT_NE(s.message().find("model.pt"), std::string::npos);
}

TEST(Checkpoint, NewerVersionIsUnsupported) {
  std::string bytes;
  ASSERT_OK(EncodeCheckpoint(Sample(), &bytes));
  const uint32_t v = ckpt::kVersion + 1;
  std::memcpy(bytes.data() + 8, &v, 4);
  Checkpoint out;
  EXPECT_TRUE(DecodeCheckpoint(bytes, "run.ckpt", &out).IsUnsupported());
}

TEST(Checkpoint, MissingFileIsNotFoundNamingIt) {
  Checkpoint out;
  const Status s = ReadCheckpoint("/nonexistent/dir/run.ckpt", &out);
  ASSERT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_NE(s.message().find("/nonexistent/dir/run.ckpt"), std::string::npos);
}

// sluice-train --resume reads the checkpoint with ReadCheckpoint: a FIFO given there blocked
// open() until a writer appeared; it is refused at once, naming the path and what it is.
TEST(Checkpoint, FifoIsRefusedNotWaitedOn) {
  testing::TempDir dir;
  const std::string path = dir.Join("run.ckpt");
  testing::FifoWatchdog watchdog(path, 10);
  Checkpoint out;
  const Status s = ReadCheckpoint(path, &out);
  EXPECT_FALSE(watchdog.fired()) << "ReadCheckpoint blocked in open() on a FIFO";
  ASSERT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find(path + ": not a regular file (FIFO)"), std::string::npos)
      << s.message();
}

TEST(Checkpoint, MismatchedOptimizerStateIsRefused) {
  Checkpoint c = Sample();
  c.adam_v.pop_back();
  std::string bytes;
  EXPECT_TRUE(EncodeCheckpoint(c, &bytes).IsInvalidArgument());
}

TEST(TokenizerFingerprint, DependsOnContentNotKeyOrder) {
  const auto a = nlohmann::json::parse(R"({"type": "char", "vocab": ["a", "b"]})");
  const auto b = nlohmann::json::parse(R"({"vocab": ["a", "b"], "type": "char"})");
  const auto c = nlohmann::json::parse(R"({"type": "char", "vocab": ["a", "c"]})");
  EXPECT_EQ(TokenizerFingerprint(a), TokenizerFingerprint(b));
  EXPECT_NE(TokenizerFingerprint(a), TokenizerFingerprint(c));
}

}  // namespace
}  // namespace sluice::train
