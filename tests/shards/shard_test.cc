#include <gtest/gtest.h>

#include <fstream>
#include <thread>
#include <vector>

#include "assert_ok.h"
#include "shards/coding.h"
#include "shards/format.h"
#include "shards/shard_reader.h"
#include "shards/shard_writer.h"
#include "test_util.h"

namespace sluice::shards {
namespace {

struct Rec {
  std::string key;
  std::string payload;
  uint64_t duration;
  uint32_t tokens;
};

// Records of varied sizes, including some larger than a block.
std::vector<Rec> MakeRecords(size_t n, size_t max_size, uint64_t seed) {
  std::vector<Rec> out;
  for (size_t i = 0; i < n; ++i) {
    const size_t size = (i * 7919 + seed) % max_size;
    out.push_back({"utt-" + std::to_string(i), testing::RandomBytes(seed * 1000 + i, size), i * 160,
                   uint32_t(i % 13)});
  }
  return out;
}

std::string WriteShard(const std::string& path, const std::vector<Rec>& recs,
                       ShardWriterOptions opt = {}) {
  std::unique_ptr<ShardWriter> w;
  EXPECT_OK(ShardWriter::Create(path, opt, &w));
  for (const Rec& r : recs) EXPECT_OK(w->Add({r.key, r.duration, r.tokens}, r.payload));
  ShardStats st;
  Status s = w->Finish(&st);
  EXPECT_OK(s);
  EXPECT_EQ(st.records, recs.size());
  return testing::ReadFile(path);
}

TEST(Shard, EveryRecordReadsBackByRandomAccess) {
  testing::TempDir dir;
  ShardWriterOptions opt;
  opt.block_size = 4096;
  auto recs = MakeRecords(300, 9000, 1);  // some records exceed the block size
  WriteShard(dir.Join("a.sluice"), recs, opt);

  std::unique_ptr<ShardReader> r;
  ASSERT_OK(ShardReader::Open(dir.Join("a.sluice"), {}, &r));
  ASSERT_EQ(r->num_records(), recs.size());
  EXPECT_GT(r->num_blocks(), 10u);
  // Visit in a scrambled order: access must not depend on reading sequentially.
  for (size_t k = 0; k < recs.size(); ++k) {
    const size_t i = (k * 131) % recs.size();
    std::string payload;
    ASSERT_OK(r->ReadRecord(i, &payload));
    EXPECT_EQ(payload, recs[i].payload) << "record " << i;
    EXPECT_EQ(r->key(i), recs[i].key);
    EXPECT_EQ(r->record(i).duration, recs[i].duration);
    EXPECT_EQ(r->record(i).tokens, recs[i].tokens);
  }
}

TEST(Shard, AuxBytesReadBackPerRecordFromTheIndex) {
  testing::TempDir dir;
  auto recs = MakeRecords(40, 3000, 4);
  std::vector<std::string> aux;
  for (size_t i = 0; i < recs.size(); ++i)  // some records without aux bytes, between others
    aux.push_back(i % 3 == 1 ? "" : testing::RandomBytes(77 + i, 1 + i % 17));
  std::unique_ptr<ShardWriter> w;
  ASSERT_OK(ShardWriter::Create(dir.Join("a.sluice"), {}, &w));
  for (size_t i = 0; i < recs.size(); ++i)
    ASSERT_OK(w->Add({recs[i].key, recs[i].duration, recs[i].tokens, aux[i]}, recs[i].payload));
  ASSERT_OK(w->Finish(nullptr));
  std::unique_ptr<ShardReader> r;
  ASSERT_OK(ShardReader::Open(dir.Join("a.sluice"), {}, &r));
  ASSERT_TRUE(r->has_aux());
  for (size_t i = 0; i < recs.size(); ++i) {
    EXPECT_EQ(r->aux(i), aux[i]) << "record " << i;
    EXPECT_EQ(r->key(i), recs[i].key);
    std::string payload;
    ASSERT_OK(r->ReadRecord(i, &payload));
    EXPECT_EQ(payload, recs[i].payload);
  }
}

TEST(Shard, NoAuxBytesWritesNoAuxArea) {
  // Shards of kinds without aux bytes keep the layout (and bytes) they had before the area.
  testing::TempDir dir;
  const std::string bytes = WriteShard(dir.Join("a.sluice"), MakeRecords(5, 100, 5));
  std::unique_ptr<ShardReader> r;
  ASSERT_OK(ShardReader::Open(dir.Join("a.sluice"), {}, &r));
  EXPECT_FALSE(r->has_aux());
  EXPECT_EQ(r->aux(0), "");
  const uint64_t index_offset = DecodeFixed64(bytes.data() + bytes.size() - kFooterSize);
  EXPECT_EQ(DecodeFixed64(bytes.data() + index_offset + 24), 0u);  // aux_bytes
}

TEST(Shard, RecordsNeverSpanBlocks) {
  testing::TempDir dir;
  ShardWriterOptions opt;
  opt.block_size = 1000;
  WriteShard(dir.Join("a.sluice"), MakeRecords(100, 700, 2), opt);
  std::unique_ptr<ShardReader> r;
  ASSERT_OK(ShardReader::Open(dir.Join("a.sluice"), {}, &r));
  for (size_t b = 0; b < r->num_blocks(); ++b) {
    for (size_t i = r->first_record(b); i < r->first_record(b + 1); ++i) {
      EXPECT_EQ(r->record(i).block, b);
      EXPECT_LE(r->record(i).offset + r->record(i).size, r->block(b).raw_size);
    }
  }
  EXPECT_EQ(r->first_record(r->num_blocks()), r->num_records());
}

TEST(Shard, EmptyShardIsValid) {
  testing::TempDir dir;
  WriteShard(dir.Join("e.sluice"), {});
  std::unique_ptr<ShardReader> r;
  ASSERT_OK(ShardReader::Open(dir.Join("e.sluice"), {}, &r));
  EXPECT_EQ(r->num_records(), 0u);
  EXPECT_EQ(r->num_blocks(), 0u);
}

TEST(Shard, OutputIsByteIdenticalForTheSameInput) {
  testing::TempDir dir;
  auto recs = MakeRecords(50, 5000, 3);
  EXPECT_EQ(WriteShard(dir.Join("a.sluice"), recs), WriteShard(dir.Join("b.sluice"), recs));
}

TEST(Shard, UnfinishedWriterLeavesNoFile) {
  testing::TempDir dir;
  {
    std::unique_ptr<ShardWriter> w;
    ASSERT_OK(ShardWriter::Create(dir.Join("x.sluice"), {}, &w));
    ASSERT_OK(w->Add({"k", 1, 0}, "payload"));
  }
  EXPECT_FALSE(std::ifstream(dir.Join("x.sluice")).good());
  EXPECT_FALSE(std::ifstream(dir.Join("x.sluice.tmp")).good());
}

TEST(Shard, OversizedKeyIsRejected) {
  testing::TempDir dir;
  std::unique_ptr<ShardWriter> w;
  ASSERT_OK(ShardWriter::Create(dir.Join("x.sluice"), {}, &w));
  std::string key(kMaxKeySize + 1, 'k');
  EXPECT_TRUE(w->Add({key, 0, 0}, "p").IsInvalidArgument());
}

TEST(Shard, ConcurrentReadsReturnTheSameBytes) {
  testing::TempDir dir;
  ShardWriterOptions opt;
  opt.block_size = 2048;
  auto recs = MakeRecords(200, 3000, 4);
  WriteShard(dir.Join("a.sluice"), recs, opt);
  std::unique_ptr<ShardReader> r;
  ASSERT_OK(ShardReader::Open(dir.Join("a.sluice"), {}, &r));
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Buffer scratch, raw;
      for (size_t b = t; b < r->num_blocks(); b += 1) {
        if (!r->ReadBlock(b, &scratch, &raw).ok()) { bad[t]++; continue; }
        for (size_t i = r->first_record(b); i < r->first_record(b + 1); ++i)
          if (r->RecordPayload(i, raw) != recs[i].payload) bad[t]++;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
}

TEST(Shard, ForeignFileIsNotAShard) {
  testing::TempDir dir;
  testing::WriteFile(dir.Join("x.wav"), testing::RandomBytes(9, 5000));
  std::unique_ptr<ShardReader> r;
  Status s = ShardReader::Open(dir.Join("x.wav"), {}, &r);
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("x.wav"), std::string::npos);
  EXPECT_NE(s.message().find("not a sluice shard"), std::string::npos) << s.ToString();
}

TEST(Shard, MissingFileIsNotFound) {
  std::unique_ptr<ShardReader> r;
  EXPECT_TRUE(ShardReader::Open("/nonexistent/shard-00000.sluice", {}, &r).IsNotFound());
}

}  // namespace
}  // namespace sluice::shards
