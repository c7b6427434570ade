// Stored recordings (docs/formats/shard.md, "Stored recordings"): the recording ref built by hand
// from the spec's byte table, what ReadRecordingRef checks, and that a group of records stays in
// one shard.
#include "shards/recording.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "assert_ok.h"
#include "shards/dataset_writer.h"
#include "shards/shard_reader.h"
#include "shards/shard_writer.h"
#include "test_util.h"

namespace sluice::shards {
namespace {

void Le(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// kind u8 | reserved u8[3] | chunk u32 | offset u64 | samples u64, from the spec's table.
std::string HandRef(uint8_t kind, uint32_t chunk, uint64_t offset, uint64_t samples) {
  std::string s(1, static_cast<char>(kind));
  s.append(3, '\0');
  Le(&s, chunk, 4);
  Le(&s, offset, 8);
  Le(&s, samples, 8);
  return s;
}

TEST(RecordingRef, HandBuiltBytesMatchEncodeAndDecode) {
  const std::string want = HandRef(2, 7, 12345, 1ull << 33);
  std::string got;
  RecordingRef{RefKind::kSegment, 7, 12345, 1ull << 33}.EncodeTo(&got);
  EXPECT_EQ(got, want);
  std::string_view in = want;
  RecordingRef r;
  ASSERT_OK(r.DecodeFrom(&in));
  EXPECT_TRUE(in.empty());
  EXPECT_EQ(r.kind, RefKind::kSegment);
  EXPECT_EQ(r.chunk, 7u);
  EXPECT_EQ(r.offset, 12345u);
  EXPECT_EQ(r.samples, 1ull << 33);
}

TEST(RecordingRef, DamagedRefsAreCorruption) {
  std::string reserved = HandRef(1, 0, 0, 5);
  reserved[2] = 1;
  for (const std::string& bad : {HandRef(0, 0, 0, 5), HandRef(3, 0, 0, 5), HandRef(1, 0, 0, 0),
                                 reserved, HandRef(1, 0, 0, 5).substr(0, 23)}) {
    std::string_view in = bad;
    RecordingRef r;
    EXPECT_TRUE(r.DecodeFrom(&in).IsCorruption());
  }
}

// A shard of one recording of 3 chunks (4, 4 and 2 samples) and the given segment refs (chunk,
// offset, samples), each with the record duration `samples`.
std::unique_ptr<ShardReader> RecordingShard(const testing::TempDir& dir,
                                            const std::vector<std::array<uint64_t, 3>>& segments) {
  std::unique_ptr<ShardWriter> w;
  EXPECT_OK(ShardWriter::Create(dir.Join("r.sluice"), {}, &w));
  const uint64_t sizes[] = {4, 4, 2};
  for (uint32_t c = 0; c < 3; ++c) {
    const std::string aux = HandRef(1, c, 4 * c, sizes[c]);
    EXPECT_OK(w->Add({"rec/chunk-" + std::to_string(c), sizes[c], 0, aux},
                     std::string(2 * sizes[c], 'a')));
  }
  for (size_t i = 0; i < segments.size(); ++i) {
    const auto& [chunk, offset, samples] = segments[i];
    const std::string aux = HandRef(2, static_cast<uint32_t>(chunk), offset, samples);
    EXPECT_OK(w->Add({"seg" + std::to_string(i), samples, 0, aux}, "text"));
  }
  ShardStats st;
  EXPECT_OK(w->Finish(&st));
  std::unique_ptr<ShardReader> r;
  EXPECT_OK(ShardReader::Open(dir.Join("r.sluice"), {}, &r));
  return r;
}

TEST(RecordingRef, SegmentSpansTheChunksItCovers) {
  testing::TempDir dir;
  // Samples 5..9 of the recording: chunk 1 from offset 1, and chunk 2.
  auto r = RecordingShard(dir, {{1, 1, 5}, {0, 0, 10}, {2, 1, 1}});
  RecordingRef ref;
  SegmentSpan span;
  ASSERT_OK(ReadRecordingRef(*r, 3, &ref, &span));
  EXPECT_EQ(span.first_chunk, 1u);
  EXPECT_EQ(span.end_chunk, 3u);
  EXPECT_EQ(span.offset, 1u);
  EXPECT_EQ(span.samples, 5u);
  ASSERT_OK(ReadRecordingRef(*r, 4, &ref, &span));
  EXPECT_EQ(span.first_chunk, 0u);
  EXPECT_EQ(span.end_chunk, 3u);
  ASSERT_OK(ReadRecordingRef(*r, 5, &ref, &span));
  EXPECT_EQ(span.first_chunk, 2u);
  EXPECT_EQ(span.end_chunk, 3u);
  ASSERT_OK(ReadRecordingRef(*r, 0, &ref, &span));
  EXPECT_EQ(ref.kind, RefKind::kChunk);
}

TEST(RecordingRef, SegmentOutsideItsRecordingIsCorruption) {
  testing::TempDir dir;
  auto r = RecordingShard(dir, {{1, 1, 6},    // one sample past the recording's end
                                {1, 4, 1},    // offset past its chunk
                                {3, 0, 1},    // a segment, not a chunk
                                {9, 0, 1}});  // not in the shard
  for (size_t i = 3; i < 7; ++i) {
    RecordingRef ref;
    SegmentSpan span;
    Status st = ReadRecordingRef(*r, i, &ref, &span);
    EXPECT_TRUE(st.IsCorruption()) << i;
    EXPECT_NE(st.message().find("'seg" + std::to_string(i - 3) + "'"), std::string::npos)
        << st.message();
  }
}

TEST(DatasetWriterGroup, AGroupStaysInOneShard) {
  testing::TempDir dir;
  DatasetWriterOptions opt;
  opt.shard_size = 200;  // every record alone would fill a shard
  DatasetWriter w(dir.path(), opt);
  ASSERT_OK(w.Add({"before", 1, 0, ""}, std::string(300, 'x')));
  w.BeginGroup();
  for (int i = 0; i < 4; ++i)
    ASSERT_OK(w.Add({"g" + std::to_string(i), 1, 0, ""}, std::string(300, 'y')));
  ASSERT_OK(w.EndBlock());
  ASSERT_OK(w.EndGroup());
  ASSERT_OK(w.Add({"after", 1, 0, ""}, std::string(300, 'z')));
  ASSERT_OK(w.Finish());
  ASSERT_EQ(w.shards().size(), 3u);
  EXPECT_EQ(w.shards()[0].records, 1u);
  EXPECT_EQ(w.shards()[1].records, 4u);
  EXPECT_EQ(w.shards()[2].records, 1u);
}

}  // namespace
}  // namespace sluice::shards
