// Damages real shard bytes (leveldb's corruption_test habit): every single
// flipped byte, every truncation and appended garbage must be reported as an
// error, and no damaged file may ever yield bytes that differ from what was
// written.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "shards/format.h"
#include "shards/shard_reader.h"
#include "shards/shard_writer.h"
#include "test_util.h"
#include "assert_ok.h"

namespace sluice::shards {
namespace {

class Corruption : public ::testing::Test {
 protected:
  void SetUp() override {
    ShardWriterOptions opt;
    opt.block_size = 300;
    std::unique_ptr<ShardWriter> w;
    ASSERT_OK(ShardWriter::Create(dir_.Join("s.sluice"), opt, &w));
    for (int i = 0; i < 24; ++i) {
      keys_.push_back("key-" + std::to_string(i));
      payloads_.push_back(testing::RandomBytes(i, 40 + 13 * i));
      ASSERT_OK(w->Add({keys_.back(), uint64_t(i), uint32_t(i)}, payloads_.back()));
    }
    ASSERT_OK(w->Finish(nullptr));
    good_ = testing::ReadFile(dir_.Join("s.sluice"));
  }

  // Opens `bytes` and reads every block. Returns false if any damage was
  // reported. Fails the test if a read "succeeds" with wrong data.
  bool ReadsClean(const std::string& bytes, std::string* first_error) {
    std::unique_ptr<ShardReader> r;
    Status s = ShardReader::Open(NewMemoryFile("s.sluice", bytes), {}, &r);
    if (!s.ok()) {
      EXPECT_TRUE(s.IsCorruption() || s.IsUnsupported() || s.IsIOError()) << s.ToString();
      *first_error = s.ToString();
      return false;
    }
    EXPECT_EQ(r->num_records(), payloads_.size());
    bool clean = true;
    Buffer scratch, raw;
    for (size_t b = 0; b < r->num_blocks(); ++b) {
      s = r->ReadBlock(b, &scratch, &raw);
      if (!s.ok()) {
        EXPECT_TRUE(s.IsCorruption()) << s.ToString();
        if (clean) *first_error = s.ToString();
        clean = false;
        continue;
      }
      for (size_t i = r->first_record(b); i < r->first_record(b + 1); ++i) {
        EXPECT_EQ(r->RecordPayload(i, raw), payloads_[i]) << "wrong data returned for record " << i;
        EXPECT_EQ(r->key(i), keys_[i]);
        EXPECT_EQ(r->record(i).duration, i);
      }
    }
    return clean;
  }

  testing::TempDir dir_;
  std::vector<std::string> keys_, payloads_;
  std::string good_;
};

TEST_F(Corruption, IntactFileReadsClean) {
  std::string err;
  EXPECT_TRUE(ReadsClean(good_, &err)) << err;
}

TEST_F(Corruption, EveryFlippedByteIsDetected) {
  ASSERT_LT(good_.size(), 20000u);  // keep the exhaustive loop fast
  for (size_t pos = 0; pos < good_.size(); ++pos) {
    for (unsigned char mask : {0x01, 0x80}) {
      std::string bad = good_;
      bad[pos] = static_cast<char>(bad[pos] ^ mask);
      std::string err;
      EXPECT_FALSE(ReadsClean(bad, &err)) << "flip of byte " << pos << " went unnoticed";
      EXPECT_NE(err.find("s.sluice"), std::string::npos) << err;
    }
  }
}

TEST_F(Corruption, FlippedBlockByteNamesBlockAndOffset) {
  std::unique_ptr<ShardReader> r;
  ASSERT_OK(ShardReader::Open(NewMemoryFile("s.sluice", good_), {}, &r));
  ASSERT_GE(r->num_blocks(), 3u);
  const BlockInfo b2 = r->block(2);
  std::string bad = good_;
  bad[b2.offset + b2.compressed_size / 2] ^= 0x10;
  std::string err;
  EXPECT_FALSE(ReadsClean(bad, &err));
  EXPECT_NE(err.find("block 2 at offset " + std::to_string(b2.offset)), std::string::npos) << err;
  EXPECT_NE(err.find("checksum mismatch"), std::string::npos) << err;
}

TEST_F(Corruption, EveryTruncationIsDetected) {
  for (size_t len = 0; len < good_.size(); ++len) {
    std::string err;
    EXPECT_FALSE(ReadsClean(good_.substr(0, len), &err))
        << "truncation to " << len << " bytes went unnoticed";
  }
}

TEST_F(Corruption, AppendedGarbageIsDetected) {
  for (size_t extra : {1u, 7u, 48u, 1000u}) {
    std::string err;
    EXPECT_FALSE(ReadsClean(good_ + testing::RandomBytes(extra, extra), &err))
        << extra << " bytes appended";
    EXPECT_NE(err.find("footer"), std::string::npos) << err;
  }
}

TEST_F(Corruption, NewerVersionGetsAHint) {
  std::string bad = good_;
  bad[8] = 2;  // header version
  std::unique_ptr<ShardReader> r;
  Status s = ShardReader::Open(NewMemoryFile("s.sluice", bad), {}, &r);
  EXPECT_TRUE(s.IsUnsupported());
  EXPECT_NE(s.message().find("HINT"), std::string::npos) << s.ToString();
}

TEST_F(Corruption, RandomGarbageNeverCrashes) {
  for (uint64_t seed = 0; seed < 200; ++seed) {
    std::string junk = testing::RandomBytes(seed, seed * 37 % 4000);
    // Give some of them valid magics so parsing goes deeper.
    if (junk.size() >= kHeaderSize + kFooterSize && seed % 2 == 0) {
      std::memcpy(junk.data(), good_.data(), kHeaderSize);
      std::memcpy(junk.data() + junk.size() - 8, good_.data() + good_.size() - 8, 8);
    }
    std::string err;
    EXPECT_FALSE(ReadsClean(junk, &err));
  }
}

}  // namespace
}  // namespace sluice::shards
