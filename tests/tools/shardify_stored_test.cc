// `shardify audio --segments stored` end to end on generated WAVs, Kaldi directories and Lhotse
// cuts: each recording written once as chunks and each segment a record referring to them
// (docs/formats/shard.md, "Stored recordings"), every segment written or rejected with its reason,
// the same bytes for any thread count and after a resume, and the loader's batches equal to those
// of the same segments cut at ingest.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "assert_ok.h"
#include "dataset_compare.h"
#include "loader/digest.h"
#include "loader/loader.h"
#include "shards/dataset.h"
#include "shards/recording.h"
#include "test_util.h"

namespace sluice {
namespace {
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

std::string Shardify() {
  const char* p = std::getenv("SHARDIFY");
  return p ? p : "build/tools/shardify";
}

testing::ShellResult Sh(const std::string& cmd) { return testing::RunShell(cmd); }

// A mono PCM16 WAV of `n` samples at 16 kHz.
std::string Wav(int n, int seed) {
  auto u32 = [](uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); };
  auto u16 = [](uint16_t v) { return std::string(reinterpret_cast<const char*>(&v), 2); };
  std::string data;
  for (int i = 0; i < n; ++i)
    data += u16(static_cast<uint16_t>(
        static_cast<int16_t>(8000 * std::sin(0.01 * (seed + 1) * i) + (i * 7919 % 61) - 30)));
  return "RIFF" + u32(36 + data.size()) + "WAVEfmt " + u32(16) + u16(1) + u16(1) + u32(16000) +
         u32(32000) + u16(2) + u16(16) + "data" + u32(data.size()) + data;
}

std::vector<std::string> Rejects(const std::string& dir) {
  std::vector<std::string> out;
  const std::string text = ReadFile(dir + "/rejects.jsonl");
  for (size_t pos = 0; pos < text.size();) {
    const size_t nl = text.find('\n', pos);
    out.push_back(nlohmann::json::parse(text.substr(pos, nl - pos))["reason"]);
    pos = nl + 1;
  }
  return out;
}

std::vector<uint64_t> EpochDigests(const std::string& dir) {
  loader::LoaderOptions o;
  o.threads = 2;
  o.batching.shuffle = false;  // the layouts' blocks differ: compare in file order
  o.batching.max_frames = 400;
  std::unique_ptr<loader::Loader> l;
  EXPECT_OK(loader::Loader::Open(dir, o, &l));
  if (!l) return {};
  EXPECT_OK(l->Start(0));
  std::vector<uint64_t> out;
  const loader::Batch* b;
  Status st;
  while ((st = l->Next(&b)).ok() && b != nullptr) out.push_back(loader::DigestOf(*b));
  EXPECT_OK(st);
  return out;
}

class ShardifyStored : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(tmp_.Join("r0.wav"), Wav(48000, 0));  // 3 s
    WriteFile(tmp_.Join("r1.wav"), Wav(32000, 1));  // 2 s
    data_ = tmp_.Join("data");
    ASSERT_EQ(Sh("mkdir -p " + data_).code, 0);
    WriteFile(data_ + "/wav.scp",
              "r0 " + tmp_.Join("r0.wav") + "\nr1 " + tmp_.Join("r1.wav") + "\n");
    WriteFile(data_ + "/segments",
              "u0 r0 0.0 1.0\nu1 r0 0.9 2.5\nu2 r0 2.5 3.5\nu3 r1 0.5 1.5\nu4 r1 1.25 2.0\n");
    WriteFile(data_ + "/text", "u0 zero\nu1 one\nu2 two\nu3 three\nu4 four\n");
  }
  // 1 s chunks of 32000 bytes: two to a 64 KiB block.
  std::string Base() {
    return Shardify() + " audio -q --from kaldi " + data_ +
           " --segments stored --chunk-seconds 1 --block-size 64KiB";
  }
  TempDir tmp_;
  std::string data_;
};

TEST_F(ShardifyStored, KaldiRecordingsStoredOnceAndASegmentOutsideItsRecordingRejected) {
  auto r = Sh(Base() + " -o " + tmp_.Join("ds"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto rejects = Rejects(tmp_.Join("ds"));
  ASSERT_EQ(rejects.size(), 1u);
  EXPECT_NE(rejects[0].find("\"u2\": segment at 2.5 s of recording 'r0' (3 s) ends 0.5 s past "
                            "the recording's end: it lies outside its recording"),
            std::string::npos)
      << rejects[0];
  const auto m = nlohmann::json::parse(ReadFile(tmp_.Join("ds/manifest.json")));
  EXPECT_EQ(m["segments"], (nlohmann::json{{"layout", "stored"}, {"chunk_samples", 16000}}));

  std::unique_ptr<shards::Dataset> ds;
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("ds"), {}, &ds));
  ASSERT_EQ(ds->num_shards(), 1u);
  const shards::ShardReader& s = ds->shard(0);
  std::vector<std::string> keys;
  for (size_t i = 0; i < s.num_records(); ++i) keys.emplace_back(s.key(i));
  EXPECT_EQ(keys,
            (std::vector<std::string>{"r0/chunk-000000", "r0/chunk-000001", "r0/chunk-000002", "u0",
                                      "u1", "r1/chunk-000000", "r1/chunk-000001", "u3", "u4"}));
  // The chunks hold the WAV's samples, once; u1 starts 0.9 s in: chunk 0, sample 14400.
  std::string audio;
  for (size_t i : {0, 1, 2}) {
    std::string p;
    ASSERT_OK(s.ReadRecord(i, &p));
    audio += p.substr(8, s.record(i).duration * 2);
  }
  EXPECT_EQ(audio, ReadFile(tmp_.Join("r0.wav")).substr(44));
  shards::RecordingRef ref;
  shards::SegmentSpan span;
  ASSERT_OK(shards::ReadRecordingRef(s, 4, &ref, &span));
  EXPECT_EQ(span.first_chunk, 0u);
  EXPECT_EQ(span.end_chunk, 3u);
  EXPECT_EQ(span.offset, 14400u);
  EXPECT_EQ(span.samples, 25600u);
  ASSERT_OK(shards::ReadRecordingRef(s, 8, &ref, &span));  // u4: r1's chunk 1, from 0.25 s
  EXPECT_EQ(span.first_chunk, 6u);
  EXPECT_EQ(span.offset, 4000u);
  // Segment records share no block with audio: the chunks' blocks hold chunks only.
  EXPECT_NE(s.record(3).block, s.record(2).block);
  EXPECT_NE(s.record(5).block, s.record(4).block);

  // The loader gives the batches of the same segments cut at ingest (same rate: same samples).
  r = Sh(Shardify() + " audio -q --from kaldi " + data_ + " -o " + tmp_.Join("cut"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(Rejects(tmp_.Join("cut")).size(), 1u);
  const std::vector<uint64_t> stored = EpochDigests(tmp_.Join("ds"));
  EXPECT_FALSE(stored.empty());
  EXPECT_EQ(stored, EpochDigests(tmp_.Join("cut")));
}

// Segments keep their metadata columns as cut records do (a chunk, audio only, has none), so a
// filter on them keeps the same segments in both layouts.
TEST_F(ShardifyStored, SegmentsCarryTheirMetadataColumnsAndFilterAsCutRecordsDo) {
  WriteFile(data_ + "/utt2spk", "u0 alice\nu1 bob\nu2 bob\nu3 alice\nu4 carol\n");
  WriteFile(data_ + "/utt2lang", "u0 en\nu1 de\nu2 de\nu3 en\nu4 en\n");
  auto r = Sh(Base() + " -o " + tmp_.Join("ds"));
  ASSERT_EQ(r.code, 0) << r.out;
  r = Sh(Shardify() + " audio -q --from kaldi " + data_ + " -o " + tmp_.Join("cut"));
  ASSERT_EQ(r.code, 0) << r.out;
  std::unique_ptr<shards::Dataset> ds;
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("ds"), {}, &ds));
  const shards::ShardReader& s = ds->shard(0);
  const shards::ColumnTable& t = s.columns();
  ASSERT_GE(t.columns.size(), 2u);
  ASSERT_EQ(t.columns[0].spec.name, "speaker");
  ASSERT_EQ(t.columns[1].spec.name, "language");
  std::vector<std::string> got;
  for (size_t i = 0; i < s.num_records(); ++i)
    got.push_back(std::string(s.key(i)) + ":" +
                  (t.columns[0].is_null(i) ? "-" : std::string(t.columns[0].string_at(i))) + ":" +
                  (t.columns[1].is_null(i) ? "-" : std::string(t.columns[1].string_at(i))));
  EXPECT_EQ(got, (std::vector<std::string>{"r0/chunk-000000:-:-", "r0/chunk-000001:-:-",
                                           "r0/chunk-000002:-:-", "u0:alice:en", "u1:bob:de",
                                           "r1/chunk-000000:-:-", "r1/chunk-000001:-:-",
                                           "u3:alice:en", "u4:carol:en"}));
  for (const char* filter : {"lang == \"en\"", "speaker != \"alice\""}) {
    std::vector<std::vector<std::string>> keys;
    for (const char* dir : {"ds", "cut"}) {
      loader::LoaderOptions o;
      o.batching.shuffle = false;
      o.filter = filter;
      std::unique_ptr<loader::Loader> l;
      ASSERT_OK(loader::Loader::Open(tmp_.Join(dir), o, &l));
      ASSERT_OK(l->Start(0));
      keys.emplace_back();
      const loader::Batch* b;
      while (l->Next(&b).ok() && b != nullptr)
        for (std::string_view k : b->keys()) keys.back().emplace_back(k);
      std::sort(keys.back().begin(), keys.back().end());
    }
    EXPECT_EQ(keys[0], keys[1]) << filter;
    EXPECT_FALSE(keys[0].empty()) << filter;
  }
}

// FLAC chunks are lossless: a stored dataset in FLAC gives the batches of its PCM16 twin, and both
// those of the segments cut at ingest; the loader checks each chunk's rate and sample count.
TEST_F(ShardifyStored, FlacChunksGiveTheBatchesOfTheirPcm16Twin) {
  auto r = Sh(Base() + " -o " + tmp_.Join("pcm"));
  ASSERT_EQ(r.code, 0) << r.out;
  r = Sh(Base() + " --codec flac -o " + tmp_.Join("flac"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto m = nlohmann::json::parse(ReadFile(tmp_.Join("flac/manifest.json")));
  EXPECT_EQ(m["codec"], "flac");
  const std::vector<uint64_t> pcm = EpochDigests(tmp_.Join("pcm"));
  ASSERT_FALSE(pcm.empty());
  EXPECT_EQ(EpochDigests(tmp_.Join("flac")), pcm);
}

TEST_F(ShardifyStored, SameBytesForAnyThreadCountAndAfterAResume) {
  // A recording per shard.
  const std::string base = Base() + " --shard-size 32KiB";
  ASSERT_EQ(Sh(base + " --threads 1 -o " + tmp_.Join("t1")).code, 0);
  ASSERT_EQ(Sh(base + " --threads 3 -o " + tmp_.Join("t3")).code, 0);
  testing::ExpectSameDatasetBytes(tmp_.Join("t1"), tmp_.Join("t3"));
  const auto m = nlohmann::json::parse(ReadFile(tmp_.Join("t1/manifest.json")));
  EXPECT_EQ(m["shards"].size(), 2u);
  // Killed before the first write of the second shard: the first is durable.
  auto crash =
      Sh("SLUICE_FAULT_INJECT=2:kill:shard-00001.sluice.tmp " + base + " -o " + tmp_.Join("ds"));
  ASSERT_NE(crash.out.find("kills the process"), std::string::npos) << crash.out;
  auto resumed = Sh(base + " --resume --json -o " + tmp_.Join("ds"));
  ASSERT_EQ(resumed.code, 0) << resumed.out;
  EXPECT_TRUE(nlohmann::json::parse(resumed.out)["resumed"].get<bool>()) << resumed.out;
  EXPECT_EQ(testing::DirContents(tmp_.Join("t1")), testing::DirContents(tmp_.Join("ds")));
}

// Every record of a dataset in order: key and payload (refs are shard-local: a part's shards hold
// other record indices).
std::vector<std::string> Records(const std::string& dir) {
  std::unique_ptr<shards::Dataset> ds;
  EXPECT_OK(shards::Dataset::Open(dir, {}, &ds));
  std::vector<std::string> out;
  for (size_t s = 0; ds && s < ds->num_shards(); ++s)
    for (size_t i = 0; i < ds->shard(s).num_records(); ++i) {
      std::string p;
      EXPECT_OK(ds->shard(s).ReadRecord(i, &p));
      out.push_back(std::string(ds->shard(s).key(i)) + "=" + p);
    }
  return out;
}

TEST_F(ShardifyStored, PartsSplitBetweenRecordingsAndMerge) {
  const std::string base = Base();
  ASSERT_EQ(Sh(base + " -o " + tmp_.Join("single")).code, 0);
  for (int i = 0; i < 2; ++i) {
    auto r = Sh(base + " -o " + tmp_.Join("p" + std::to_string(i)) + " --part " +
                std::to_string(i) + "/2");
    ASSERT_EQ(r.code, 0) << r.out;
  }
  // Two recordings, one per part: the segments of one recording never go to two parts.
  EXPECT_EQ(Records(tmp_.Join("p0")).size(), 5u);
  auto r = Sh(Shardify() + " merge " + tmp_.Join("p0") + " " + tmp_.Join("p1") + " -o " +
              tmp_.Join("merged"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(Records(tmp_.Join("single")), Records(tmp_.Join("merged")));
  EXPECT_EQ(EpochDigests(tmp_.Join("single")), EpochDigests(tmp_.Join("merged")));
  const auto m = nlohmann::json::parse(ReadFile(tmp_.Join("merged/manifest.json")));
  EXPECT_EQ(m["segments"]["layout"], "stored");
  r = Sh(Shardify() + " merge --repack " + tmp_.Join("p0") + " " + tmp_.Join("p1") + " -o " +
         tmp_.Join("repacked"));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("which --repack cannot move yet"), std::string::npos) << r.out;
}

TEST_F(ShardifyStored, LhotseSegmentsOfARecordingMustFollowEachOther) {
  auto cut = [&](const std::string& id, const std::string& rec, double start) {
    return R"({"id": ")" + id + R"(", "start": )" + std::to_string(start) +
           R"(, "duration": 0.5, "channel": 0, "supervisions": [{"id": ")" + id +
           R"(", "recording_id": ")" + rec +
           R"(", "start": 0, "duration": 0.5, "channel": 0, "text": "hi"}], "recording": {"id": ")" +
           rec + R"(", "sources": [{"type": "file", "channels": [0], "source": ")" +
           tmp_.Join(rec + ".wav") +
           R"("}], "sampling_rate": 16000, "num_samples": 48000, "duration": 3, "channel_ids": [0]}, "type": "MonoCut"})" +
           "\n";
  };
  WriteFile(tmp_.Join("cuts.jsonl"),
            cut("a", "r0", 0) + cut("b", "r0", 1) + cut("c", "r1", 0) + cut("d", "r0", 2));
  auto r = Sh(Shardify() + " audio -q --from lhotse " + tmp_.Join("cuts.jsonl") +
              " --segments stored -o " + tmp_.Join("ds"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto rejects = Rejects(tmp_.Join("ds"));
  ASSERT_EQ(rejects.size(), 1u);
  EXPECT_NE(rejects[0].find("\"d\": its recording's audio was written already (chunk "
                            "'r0/chunk-000000', record 0 of shard-00000.sluice)"),
            std::string::npos)
      << rejects[0];
  EXPECT_NE(rejects[0].find("HINT: sort the cuts"), std::string::npos) << rejects[0];
  const auto m = nlohmann::json::parse(ReadFile(tmp_.Join("ds/manifest.json")));
  EXPECT_EQ(m["records"], 1 + 2 + 1 + 1);  // r0's chunk, a, b, r1's chunk, c
}

TEST_F(ShardifyStored, ArgumentErrorsSayWhatToPass) {
  for (const auto& [args, want] : std::vector<std::pair<std::string, std::string>>{
           {"--from wds x.tar --segments stored",
            "--segments stored stores the recordings segments point into"},
           {"--from kaldi " + data_ + " --chunk-seconds 5",
            "--chunk-seconds sizes the chunks of --segments stored"},
           {"--from kaldi " + data_ + " --segments stored --features fbank",
            "--segments stored keeps audio only"}}) {
    WriteFile(tmp_.Join("x.tar"), "");
    auto r = Sh("cd " + tmp_.path() + " && " + std::filesystem::absolute(Shardify()).string() +
                " audio -q " + args + " -o " + tmp_.Join("out"));
    EXPECT_NE(r.code, 0) << args;
    EXPECT_NE(r.out.find(want), std::string::npos) << args << ": " << r.out;
  }
}

}  // namespace
}  // namespace sluice
