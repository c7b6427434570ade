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

TEST(ShardLayout, HandBuiltShardMatchesTheWriterByteForByte) {
  // Block size 100: records 0 and 1 share block 0 (60 + 30 bytes), record 2 (70 bytes) would
  // take it past 100 and opens block 1.
  const std::vector<Rec> recs = {{"utt-a", std::string(60, 'a'), 16000, 3},
                                 {"b", std::string(30, 'b'), 7, 0},
                                 {"utt-ccc", std::string(70, 'c'), 1ull << 40, 70000}};
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
  // Index: "SLIX" | num_blocks u32 | num_records u64 | key_bytes u64 | reserved u64, then the
  // block table, the record table and the keys.
  const uint64_t index_offset = want.size();
  std::string index = "SLIX";
  Le(&index, blocks.size(), 4);
  Le(&index, recs.size(), 8);
  Le(&index, keys.size(), 8);
  Le(&index, 0, 8);
  index += block_table + record_table + keys;
  ASSERT_EQ(index.size(), 32 + 24 * blocks.size() + 32 * recs.size() + keys.size());
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
  ASSERT_EQ(footer.size(), 48u);
  want += footer;

  testing::TempDir dir;
  ShardWriterOptions opt;
  opt.block_size = 100;
  std::unique_ptr<ShardWriter> w;
  ASSERT_OK(ShardWriter::Create(dir.Join("s.sluice"), opt, &w));
  for (const Rec& r : recs) ASSERT_OK(w->Add({r.key, r.duration, r.tokens}, r.payload));
  ShardStats stats;
  ASSERT_OK(w->Finish(&stats));
  const std::string got = testing::ReadFile(dir.Join("s.sluice"));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(got[i], want[i]) << "first difference at byte " << i;
  EXPECT_EQ(stats.footer_xxh3, Xxh3(footer));

  // And the reader takes the hand-built bytes for what the tables say they are.
  std::unique_ptr<ShardReader> r;
  ASSERT_OK(ShardReader::Open(NewMemoryFile("hand.sluice", want), {}, Xxh3(footer), &r));
  ASSERT_EQ(r->num_blocks(), 2u);
  ASSERT_EQ(r->num_records(), 3u);
  EXPECT_EQ(r->first_record(1), 2u);
  for (size_t i = 0; i < recs.size(); ++i) {
    std::string payload;
    ASSERT_OK(r->ReadRecord(i, &payload));
    EXPECT_EQ(payload, recs[i].payload);
    EXPECT_EQ(r->key(i), recs[i].key);
    EXPECT_EQ(r->record(i).duration, recs[i].duration);
    EXPECT_EQ(r->record(i).tokens, recs[i].tokens);
  }
}

}  // namespace
}  // namespace sluice::shards
