// The shard layout of docs/formats/shard.md, built by hand from its byte tables (not with
// shards/format.h's structs or shards/coding.h): the writer must produce these bytes exactly,
// and the reader must read them. A change to either side that the spec does not make fails here.
#include <gtest/gtest.h>
#include <xxhash.h>
#include <zstd.h>

#include <string>
#include <vector>

#include "assert_ok.h"
#include "shards/shard_reader.h"
#include "shards/shard_writer.h"
#include "test_util.h"

namespace sluice::shards {
namespace {

// `bytes` little-endian bytes of v, as every integer of the spec.
void Le(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t Xxh3(const std::string& s) { return XXH3_64bits(s.data(), s.size()); }

struct Rec {
  std::string key, payload;
  uint64_t duration;
  uint32_t tokens;
};

// The records of both tests. Block size 100: records 0 and 1 share block 0 (60 + 30 bytes),
// record 2 (70 bytes) would take it past 100 and opens block 1.
const std::vector<Rec> kRecs = {{"utt-a", std::string(60, 'a'), 16000, 3},
                                {"b", std::string(30, 'b'), 7, 0},
                                {"utt-ccc", std::string(70, 'c'), 1ull << 40, 70000}};

struct HandBuilt {
  std::string bytes;
  std::string footer;
};

// kRecs as the spec lays them out, with `aux_area` (the spec's aux area bytes, or "") after the
// keys.
HandBuilt Build(const std::string& aux_area) {
  const std::vector<Rec>& recs = kRecs;
  const std::vector<std::vector<size_t>> blocks = {{0, 1}, {2}};
  std::string want;
  // Header: magic "SLUICESH" | version 1 | reserved 0.
  want += "SLUICESH";
  Le(&want, 1, 4);
  Le(&want, 0, 4);
  // Blocks: one zstd frame each (zstd level 3, the writer's default), back to back.
  std::string block_table, record_table, keys;
  for (size_t b = 0; b < blocks.size(); ++b) {
    std::string raw;
    for (size_t i : blocks[b]) {
      Le(&record_table, b, 4);           // block
      Le(&record_table, raw.size(), 4);  // offset inside the raw block
      Le(&record_table, recs[i].payload.size(), 4);
      Le(&record_table, keys.size(), 4);         // key_offset
      Le(&record_table, recs[i].key.size(), 4);  // key_size
      Le(&record_table, recs[i].tokens, 4);
      Le(&record_table, recs[i].duration, 8);
      raw += recs[i].payload;
      keys += recs[i].key;
    }
    std::string frame(ZSTD_compressBound(raw.size()), '\0');
    frame.resize(ZSTD_compress(frame.data(), frame.size(), raw.data(), raw.size(), 3));
    Le(&block_table, want.size(), 8);   // offset
    Le(&block_table, frame.size(), 4);  // compressed_size
    Le(&block_table, raw.size(), 4);    // raw_size
    Le(&block_table, Xxh3(frame), 8);   // checksum of the compressed bytes
    want += frame;
  }
  // Index: "SLIX" | num_blocks u32 | num_records u64 | key_bytes u64 | aux_bytes u64, then the
  // block table, the record table, the keys and the aux area.
  const uint64_t index_offset = want.size();
  std::string index = "SLIX";
  Le(&index, blocks.size(), 4);
  Le(&index, recs.size(), 8);
  Le(&index, keys.size(), 8);
  Le(&index, aux_area.size(), 8);
  index += block_table + record_table + keys + aux_area;
  EXPECT_EQ(index.size(),
            32 + 24 * blocks.size() + 32 * recs.size() + keys.size() + aux_area.size());
  want += index;
  // Footer: index_offset | index_size | index_xxh3 | flags 0 | version 1 | footer_xxh3 of
  // bytes 0..31 | magic.
  std::string footer;
  Le(&footer, index_offset, 8);
  Le(&footer, index.size(), 8);
  Le(&footer, Xxh3(index), 8);
  Le(&footer, 0, 4);
  Le(&footer, 1, 4);
  Le(&footer, Xxh3(footer), 8);
  footer += "SLUICESH";
  EXPECT_EQ(footer.size(), 48u);
  want += footer;
  return {want, footer};
}

// The writer's bytes for kRecs, with per-record aux bytes when given.
std::string Write(const std::vector<std::string>& aux, ShardStats* stats) {
  testing::TempDir dir;
  ShardWriterOptions opt;
  opt.block_size = 100;
  std::unique_ptr<ShardWriter> w;
  EXPECT_OK(ShardWriter::Create(dir.Join("s.sluice"), opt, &w));
  for (size_t i = 0; i < kRecs.size(); ++i) {
    const Rec& r = kRecs[i];
    EXPECT_OK(w->Add({r.key, r.duration, r.tokens, aux.empty() ? "" : aux[i]}, r.payload));
  }
  EXPECT_OK(w->Finish(stats));
  return testing::ReadFile(dir.Join("s.sluice"));
}

void ExpectSameBytes(const std::string& got, const std::string& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(got[i], want[i]) << "first difference at byte " << i;
}

TEST(ShardLayout, HandBuiltShardMatchesTheWriterByteForByte) {
  const HandBuilt want = Build("");
  ShardStats stats;
  ExpectSameBytes(Write({}, &stats), want.bytes);
  EXPECT_EQ(stats.footer_xxh3, Xxh3(want.footer));

  // And the reader takes the hand-built bytes for what the tables say they are.
  std::unique_ptr<ShardReader> r;
  ASSERT_OK(ShardReader::Open(NewMemoryFile("hand.sluice", want.bytes), {}, Xxh3(want.footer), &r));
  ASSERT_EQ(r->num_blocks(), 2u);
  ASSERT_EQ(r->num_records(), 3u);
  EXPECT_EQ(r->first_record(1), 2u);
  EXPECT_FALSE(r->has_aux());
  for (size_t i = 0; i < kRecs.size(); ++i) {
    std::string payload;
    ASSERT_OK(r->ReadRecord(i, &payload));
    EXPECT_EQ(payload, kRecs[i].payload);
    EXPECT_EQ(r->key(i), kRecs[i].key);
    EXPECT_EQ(r->record(i).duration, kRecs[i].duration);
    EXPECT_EQ(r->record(i).tokens, kRecs[i].tokens);
  }
}

// Aux area: offsets u32 [R + 1] (0, then where each record's bytes end) | data.
std::string AuxArea(const std::vector<uint64_t>& offsets, const std::string& data) {
  std::string a;
  for (uint64_t o : offsets) Le(&a, o, 4);
  return a + data;
}

TEST(ShardLayout, HandBuiltAuxAreaMatchesTheWriterByteForByte) {
  const std::vector<std::string> aux = {"xyz", "", "0123456"};
  const HandBuilt want = Build(AuxArea({0, 3, 3, 10}, "xyz0123456"));
  ShardStats stats;
  ExpectSameBytes(Write(aux, &stats), want.bytes);
  std::unique_ptr<ShardReader> r;
  ASSERT_OK(ShardReader::Open(NewMemoryFile("hand.sluice", want.bytes), {}, Xxh3(want.footer), &r));
  ASSERT_TRUE(r->has_aux());
  for (size_t i = 0; i < aux.size(); ++i) EXPECT_EQ(r->aux(i), aux[i]) << "record " << i;
}

TEST(ShardLayout, InconsistentAuxOffsetsAreCorruption) {
  // Checksums are right (the hand builder computes them): only the offsets are wrong.
  for (const auto& [offsets, data] : std::vector<std::pair<std::vector<uint64_t>, std::string>>{
           {{1, 3, 3, 10}, "xyz0123456"},     // does not start at 0
           {{0, 5, 3, 10}, "xyz0123456"},     // decreases
           {{0, 3, 3, 9}, "xyz0123456"},      // does not end at the data's size
           {{0, 3, 3, 11}, "xyz0123456"}}) {  // past the data
    const HandBuilt bad = Build(AuxArea(offsets, data));
    std::unique_ptr<ShardReader> r;
    Status st = ShardReader::Open(NewMemoryFile("bad.sluice", bad.bytes), {}, std::nullopt, &r);
    EXPECT_TRUE(st.IsCorruption()) << offsets[0] << " " << offsets[1] << " " << offsets[3];
    EXPECT_NE(st.message().find("aux offset"), std::string::npos) << st.message();
  }
  // Shorter than its offsets table.
  std::unique_ptr<ShardReader> r;
  Status st = ShardReader::Open(NewMemoryFile("bad.sluice", Build(AuxArea({0, 0}, "")).bytes), {},
                                std::nullopt, &r);
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("shorter than its offsets table"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace sluice::shards
