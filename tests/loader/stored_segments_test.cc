// Segments of stored recordings (loader/stored_segments.h) through the Loader: a segment reads only
// the blocks of the chunks it covers, gives the batches its cut-at-ingest twin gives, and resumes
// exactly. Datasets are written here from docs/formats/shard.md's "Stored recordings" rules.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "assert_ok.h"
#include "loader/digest.h"
#include "loader/loader.h"
#include "loader/stored_segments.h"
#include "shards/dataset_writer.h"
#include "shards/manifest.h"
#include "shards/record.h"
#include "shards/recording.h"
#include "test_util.h"

namespace sluice::loader {
namespace {

constexpr int kRate = 16000;

struct Segment {
  size_t recording = 0;
  uint64_t start = 0;  // samples
  uint64_t samples = 0;
  std::string key, text;
};

// A tone (a table of one period) plus a slow ramp and a little deterministic noise: every chunk
// differs, and an hour of it costs no sin() per sample.
std::vector<int16_t> Recording(uint64_t samples, int seed) {
  const int period = 80 + 10 * seed;
  std::vector<int16_t> tone(period);
  for (int i = 0; i < period; ++i)
    tone[i] = static_cast<int16_t>(8000 * std::sin(2 * M_PI * i / period));
  std::vector<int16_t> x(samples);
  uint32_t noise = 12345u + seed;
  for (uint64_t i = 0; i < samples; ++i) {
    noise = noise * 1664525u + 1013904223u;
    x[i] = static_cast<int16_t>(tone[i % period] + static_cast<int>((i / 1000) % 2000) +
                                static_cast<int>(noise >> 27) - 16);
  }
  return x;
}

void SaveManifest(const std::string& dir, const shards::DatasetWriter& w, uint64_t chunk_samples) {
  shards::Manifest m;
  m.kind = "audio";
  m.sample_rate = kRate;
  m.codec = "pcm16";
  m.fields = {"audio", "text"};
  if (chunk_samples > 0) {
    m.segments = "stored";
    m.chunk_samples = chunk_samples;
  }
  m.shards = w.shards();
  for (const auto& e : m.shards) m.records += e.records;
  ASSERT_OK(shards::SaveManifest(dir, m));
}

// Each recording once as chunks of `chunk` samples, then its segments (in their order).
void WriteStored(const std::string& dir, const std::vector<std::vector<int16_t>>& recs,
                 const std::vector<Segment>& segs, uint64_t chunk, size_t block_size,
                 uint64_t shard_size) {
  shards::DatasetWriterOptions opt;
  opt.shard.block_size = block_size;
  opt.shard.zstd_level = -1;  // as shardify audio writes audio, and fast for an hour of it
  opt.shard_size = shard_size;
  shards::DatasetWriter w(dir, opt);
  for (size_t r = 0; r < recs.size(); ++r) {
    w.BeginGroup();
    ASSERT_OK(w.EndBlock());
    const uint64_t base = w.NextPosition().second;
    for (uint64_t at = 0, c = 0; at < recs[r].size(); at += chunk, ++c) {
      const uint64_t n = std::min<uint64_t>(chunk, recs[r].size() - at);
      shards::RecordBuilder rb;
      rb.AddField(shards::FieldType::kAudioPcm16, recs[r].data() + at, n * 2);
      std::string aux;
      shards::RecordingRef{shards::RefKind::kChunk, static_cast<uint32_t>(c), at, n}.EncodeTo(&aux);
      ASSERT_OK(
          w.Add({"rec" + std::to_string(r) + "/chunk-" + std::to_string(c), n, 0, aux}, rb.data()));
    }
    ASSERT_OK(w.EndBlock());
    for (const Segment& s : segs) {
      if (s.recording != r) continue;
      shards::RecordBuilder rb;
      rb.AddField(shards::FieldType::kText, s.text);
      std::string aux;
      shards::RecordingRef{shards::RefKind::kSegment, static_cast<uint32_t>(base + s.start / chunk),
                           s.start % chunk, s.samples}
          .EncodeTo(&aux);
      ASSERT_OK(w.Add({s.key, s.samples, 0, aux}, rb.data()));
    }
    ASSERT_OK(w.EndBlock());
    ASSERT_OK(w.EndGroup());
  }
  ASSERT_OK(w.Finish());
  SaveManifest(dir, w, chunk);
}

// The same segments cut at ingest: a record of its samples and text each.
void WriteCut(const std::string& dir, const std::vector<std::vector<int16_t>>& recs,
              const std::vector<Segment>& segs) {
  shards::DatasetWriterOptions opt;
  opt.shard.block_size = 200000;
  shards::DatasetWriter w(dir, opt);
  for (size_t r = 0; r < recs.size(); ++r)
    for (const Segment& s : segs) {
      if (s.recording != r) continue;
      shards::RecordBuilder rb;
      rb.AddField(shards::FieldType::kAudioPcm16, recs[r].data() + s.start, s.samples * 2);
      rb.AddField(shards::FieldType::kText, s.text);
      ASSERT_OK(w.Add({s.key, s.samples, 0}, rb.data()));
    }
  ASSERT_OK(w.Finish());
  SaveManifest(dir, w, 0);
}

std::vector<uint64_t> Epoch(const std::string& dir, const LoaderOptions& o, uint64_t epoch,
                            uint64_t start = 0, EpochStats* stats = nullptr,
                            std::vector<std::string>* keys = nullptr) {
  std::unique_ptr<Loader> l;
  Status st = Loader::Open(dir, o, &l);
  EXPECT_OK(st);
  if (!st.ok()) return {};
  st = l->Start(epoch, start);
  EXPECT_OK(st);
  std::vector<uint64_t> out;
  const Batch* b;
  while ((st = l->Next(&b)).ok() && b != nullptr) {
    out.push_back(DigestOf(*b));
    if (keys)
      for (std::string_view k : b->keys()) keys->emplace_back(k);
  }
  EXPECT_OK(st);
  if (stats) *stats = l->stats();
  return out;
}

TEST(StoredSegments, ThreeSecondSegmentOfAnHourReadsTwoAudioBlocks) {
  sluice::testing::TempDir stored, cut;
  const std::vector<std::vector<int16_t>> recs = {Recording(3600ull * kRate, 0)};
  // 10 s chunks of 320000 bytes: three to a 1 MiB block. 29 s .. 32 s crosses chunk 2 (block 0)
  // into chunk 3 (block 1): the worst case for a segment shorter than a chunk.
  const std::vector<Segment> segs = {{0, 29ull * kRate, 3ull * kRate, "seg", "three seconds"}};
  WriteStored(stored.path(), recs, segs, 10 * kRate, 1 << 20, 1ull << 32);
  WriteCut(cut.path(), recs, segs);
  LoaderOptions o;
  o.threads = 2;
  EpochStats s;
  std::vector<std::string> keys;
  const std::vector<uint64_t> got = Epoch(stored.path(), o, 0, 0, &s, &keys);
  EXPECT_EQ(keys, std::vector<std::string>{"seg"});
  EXPECT_EQ(s.utterances, 1u);
  EXPECT_EQ(s.blocks_read, 1u);             // the segment record's own block (its text)
  EXPECT_EQ(s.segment_blocks_read, 2u);     // of the recording's 120 blocks of audio
  EXPECT_EQ(got, Epoch(cut.path(), o, 0));  // the samples of the cut record, exactly
}

class StoredSegmentsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    stored_ = new sluice::testing::TempDir();
    cut_ = new sluice::testing::TempDir();
    std::vector<std::vector<int16_t>>& recs = recs_;
    for (int r = 0; r < 4; ++r) recs.push_back(Recording((40 + 7 * r) * kRate + 123 * r, r));
    // Segments of 0.3 .. 3.9 s at uneven places, some across chunk and block boundaries, one
    // ending at its recording's last sample.
    uint32_t x = 7;
    for (size_t r = 0; r < recs.size(); ++r) {
      uint64_t at = 1000 * r;
      for (int k = 0; at < recs[r].size(); ++k) {
        x = x * 1103515245u + 12345u;
        const uint64_t n = std::min<uint64_t>(4800 + (x >> 8) % 57600, recs[r].size() - at);
        segs_.push_back({r, at, n, "r" + std::to_string(r) + "-s" + std::to_string(k),
                         "text of " + std::to_string(r) + "/" + std::to_string(k)});
        at += n + (x >> 20) % 8000;
      }
    }
    // 2 s chunks, blocks of three, and shards of a few recordings.
    WriteStored(stored_->path(), recs, segs_, 2 * kRate, 3 * 4 * kRate, 3ull << 20);
    WriteCut(cut_->path(), recs, segs_);
  }
  static void TearDownTestSuite() {
    delete stored_;
    delete cut_;
  }
  static LoaderOptions Options() {
    LoaderOptions o;
    o.threads = 2;
    o.seed = 5;
    o.batching.max_frames = 2000;
    o.batching.shuffle_window = 16;
    return o;
  }
  static sluice::testing::TempDir *stored_, *cut_;
  static std::vector<std::vector<int16_t>> recs_;
  static std::vector<Segment> segs_;
};
std::vector<std::vector<int16_t>> StoredSegmentsTest::recs_;
sluice::testing::TempDir* StoredSegmentsTest::stored_ = nullptr;
sluice::testing::TempDir* StoredSegmentsTest::cut_ = nullptr;
std::vector<Segment> StoredSegmentsTest::segs_;

TEST_F(StoredSegmentsTest, SameBatchesAsSegmentsCutAtIngest) {
  LoaderOptions o = Options();
  // In file order: the two layouts put the segments in different blocks, so a block shuffle
  // orders them differently; the stream, the buckets and every row are otherwise the same.
  o.batching.shuffle = false;
  std::vector<std::string> keys;
  EpochStats s;
  const std::vector<uint64_t> stored = Epoch(stored_->path(), o, 1, 0, &s, &keys);
  ASSERT_GT(stored.size(), 5u);
  EXPECT_EQ(stored, Epoch(cut_->path(), o, 1));
  EXPECT_EQ(keys.size(), segs_.size());  // every segment once, no chunk
  EXPECT_GT(s.segment_blocks_read, 0u);
}

TEST_F(StoredSegmentsTest, SameBatchesWithOneOrThreeThreads) {
  LoaderOptions o = Options();
  o.threads = 1;
  EpochStats one_stats, three_stats;
  const std::vector<uint64_t> one = Epoch(stored_->path(), o, 2, 0, &one_stats);
  o.threads = 3;
  const std::vector<uint64_t> three = Epoch(stored_->path(), o, 2, 0, &three_stats);
  EXPECT_EQ(one, three);
  EXPECT_EQ(one_stats.segment_blocks_read, three_stats.segment_blocks_read);
}

TEST_F(StoredSegmentsTest, MidEpochResumeIsExact) {
  const LoaderOptions o = Options();
  const std::vector<uint64_t> full = Epoch(stored_->path(), o, 3);
  ASSERT_GT(full.size(), 4u);
  const uint64_t k = full.size() / 2;
  const std::vector<uint64_t> rest = Epoch(stored_->path(), o, 3, k);
  EXPECT_EQ(rest, std::vector<uint64_t>(full.begin() + k, full.end()));
}

TEST_F(StoredSegmentsTest, AFilterChoosesAmongSegmentsOnly) {
  LoaderOptions o = Options();
  o.filter = "duration < 2";
  std::vector<std::string> keys;
  Epoch(stored_->path(), o, 0, 0, nullptr, &keys);
  size_t want = 0;
  for (const Segment& s : segs_) want += s.samples < 2 * kRate;
  EXPECT_EQ(keys.size(), want);
  for (const std::string& k : keys) EXPECT_EQ(k.find("chunk"), std::string::npos) << k;
}

// window_seconds: one row per recording per epoch, its samples from WindowStart's start, its text
// the segments it holds whole (a segment partly inside gives none), in order.
TEST_F(StoredSegmentsTest, WindowsAreRecordingSpansWithTheTextOfTheSegmentsTheyHold) {
  LoaderOptions o = Options();
  o.kind = FeatureKind::kRaw;  // rows are the samples themselves
  o.window_seconds = 8;
  o.batching.max_frames = 1 << 22;
  const uint64_t w = 8 * kRate;
  std::vector<std::vector<uint64_t>> starts(2);
  size_t with_text = 0, partial = 0;
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    std::unique_ptr<Loader> l;
    ASSERT_OK(Loader::Open(stored_->path(), o, &l));
    ASSERT_OK(l->Start(epoch));
    const Batch* b;
    size_t rows = 0;
    while (l->Next(&b).ok() && b != nullptr) {
      for (size_t i = 0; i < b->size(); ++i, ++rows) {
        const std::string key(b->keys()[i]);
        ASSERT_EQ(key.substr(4), "/chunk-0") << key;
        const size_t r = key[3] - '0';
        const std::vector<int16_t>& rec = recs_[r];
        const uint64_t start = WindowStart(o.seed, epoch, b->record_ids()[i], rec.size(), w);
        starts[epoch].push_back(start);
        ASSERT_EQ(b->lengths()[i], static_cast<int32_t>(w));
        const float* row = b->features_f32() + i * b->frames();
        for (uint64_t k = 0; k < w; k += 997)
          ASSERT_EQ(row[k], static_cast<float>(rec[start + k])) << key << " sample " << k;
        ASSERT_EQ(row[w - 1], static_cast<float>(rec[start + w - 1]));
        std::string want;
        for (const Segment& sg : segs_) {
          if (sg.recording != r) continue;
          const bool inside = sg.start >= start && sg.start + sg.samples <= start + w;
          const bool overlaps = sg.start < start + w && sg.start + sg.samples > start;
          partial += overlaps && !inside;
          if (!inside) continue;
          if (!want.empty()) want += ' ';
          want += sg.text;
        }
        with_text += !want.empty();
        EXPECT_EQ(b->texts()[i], want) << key << " at " << start;
      }
    }
    EXPECT_EQ(rows, recs_.size());
    EXPECT_LE(l->stats().segment_blocks_read, 4 * rows);  // <= 3 audio blocks and 1 of text each
  }
  EXPECT_GT(with_text, 0u);
  EXPECT_GT(partial, 0u);           // the rule for partial overlaps was exercised
  EXPECT_NE(starts[0], starts[1]);  // keyed by the epoch
}

TEST_F(StoredSegmentsTest, WindowsSameWithOneOrThreeThreadsAndResumeExact) {
  LoaderOptions o = Options();
  o.window_seconds = 3;
  o.batching.max_frames = 700;  // a batch of two 3 s windows
  o.threads = 1;
  const std::vector<uint64_t> one = Epoch(stored_->path(), o, 4);
  o.threads = 3;
  EXPECT_EQ(one, Epoch(stored_->path(), o, 4));
  ASSERT_GE(one.size(), 2u);
  const std::vector<uint64_t> rest = Epoch(stored_->path(), o, 4, 1);
  EXPECT_EQ(rest, std::vector<uint64_t>(one.begin() + 1, one.end()));
  EXPECT_NE(one, Epoch(stored_->path(), o, 5));
}

TEST_F(StoredSegmentsTest, WindowsNeedStoredRecordings) {
  LoaderOptions o = Options();
  o.window_seconds = 5;
  std::unique_ptr<Loader> l;
  const Status st = Loader::Open(cut_->path(), o, &l);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("segments were cut at ingest"), std::string::npos) << st.message();
}

// A window's columns are its first chunk's (null) and its tokens unknown at plan time: what would
// read them is refused rather than acting on nothing.
TEST_F(StoredSegmentsTest, WindowsRefuseWhatWouldReadTheirColumnsOrTokens) {
  for (int k = 0; k < 3; ++k) {
    LoaderOptions o = Options();
    o.window_seconds = 3;
    if (k == 0) o.filter = "duration > 1";
    if (k == 1) o.batching.bucket_2d = true;
    if (k == 2) o.batching.max_tokens = 100;
    std::unique_ptr<Loader> l;
    const Status st = Loader::Open(stored_->path(), o, &l);
    EXPECT_TRUE(st.IsInvalidArgument()) << k;
    EXPECT_NE(st.message().find("known only when it is cut"), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace sluice::loader
