// Token ids are u32 on disk (docs/formats/shard.md) and int32 in batches: loader/token_ids.h
// passes every id below 2^31 through unchanged and refuses a larger one, naming shard and record,
// in padded and in packed batches alike, instead of handing the trainer a negative id.
#include "loader/token_ids.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "assert_ok.h"
#include "loader/loader.h"
#include "shards/dataset_writer.h"
#include "shards/manifest.h"
#include "shards/record.h"
#include "test_dataset.h"
#include "test_util.h"

namespace sluice::loader {
namespace {

constexpr uint32_t kTooLarge = uint32_t{1} << 31;

shards::FieldView Tokens(const std::vector<uint32_t>& ids) {
  return {shards::FieldType::kTokens, reinterpret_cast<const char*>(ids.data()),
          static_cast<uint32_t>(ids.size() * 4)};
}

TEST(StoredTokenIds, IdsBelowTwoToThe31PassUnchanged) {
  const std::vector<uint32_t> ids = {0, 1, 5, kTooLarge - 1};
  std::span<const int32_t> got;
  ASSERT_OK(StoredTokenIds(Tokens(ids), "t", &got));
  EXPECT_EQ(std::vector<int32_t>(got.begin(), got.end()),
            (std::vector<int32_t>{0, 1, 5, INT32_MAX}));
}

TEST(StoredTokenIds, IdOfTwoToThe31IsRefusedNamingItsPosition) {
  const std::vector<uint32_t> ids = {3, 4, kTooLarge, 6};
  std::span<const int32_t> got;
  const Status s = StoredTokenIds(Tokens(ids), "shard-00000.sluice: record 'utt1'", &got);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("record 'utt1'"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("2147483648 at position 2"), std::string::npos) << s.ToString();
}

TEST(StoredTokenIds, PartialIdIsCorruption) {
  const std::vector<uint32_t> ids = {3, 4};
  shards::FieldView f = Tokens(ids);
  f.size = 6;
  std::span<const int32_t> got;
  EXPECT_TRUE(StoredTokenIds(f, "t", &got).IsCorruption());
}

// A text dataset of 40 records utt0..utt39 with stored ids; record `bad` holds one id of 2^31.
void WriteDataset(const std::string& dir, int bad) {
  shards::DatasetWriterOptions opt;
  opt.shard_size = 2000;  // several shards
  opt.shard.block_size = 500;
  shards::DatasetWriter w(dir, opt);
  uint64_t tokens = 0;
  for (int i = 0; i < 40; ++i) {
    std::vector<uint32_t> ids = {2, 3, static_cast<uint32_t>(4 + i), 1};
    if (i == bad) ids[2] = kTooLarge;
    shards::RecordBuilder rb;
    rb.AddField(shards::FieldType::kText, loader::testing::RecordText(i));
    rb.AddField(shards::FieldType::kTokens, ids.data(), ids.size() * 4);
    tokens += ids.size();
    ASSERT_OK(w.Add({loader::testing::RecordKey(i), 0, static_cast<uint32_t>(ids.size())},
                    rb.data()));
  }
  ASSERT_OK(w.Finish());
  shards::Manifest m;
  m.kind = "text";
  m.fields = {"text", "tokens"};
  m.records = 40;
  m.tokens = tokens;
  m.shards = w.shards();
  ASSERT_OK(shards::SaveManifest(dir, m));
}

// The status that ended epoch 0.
Status EpochEnd(const std::string& dir, const LoaderOptions& o) {
  std::unique_ptr<Loader> l;
  SLUICE_RETURN_IF_ERROR(Loader::Open(dir, o, &l));
  SLUICE_RETURN_IF_ERROR(l->Start(0));
  const Batch* b = nullptr;
  Status st;
  while ((st = l->Next(&b)).ok() && b != nullptr) {
  }
  return st;
}

TEST(StoredTokenIds, LoaderStopsOnAnIdOfTwoToThe31NamingShardAndRecord) {
  sluice::testing::TempDir dir;
  WriteDataset(dir.path(), 17);
  LoaderOptions padded;
  padded.threads = 2;
  padded.batching.max_frames = 40;  // token ids per batch
  LoaderOptions packed = padded;
  packed.packing.seq_len = 7;
  packed.packing.batch_size = 2;
  for (const LoaderOptions& base : {padded, packed}) {
    for (CorruptPolicy policy : {CorruptPolicy::kFail, CorruptPolicy::kSkip}) {
      LoaderOptions o = base;
      o.corrupt = policy;
      const Status st = EpochEnd(dir.path(), o);
      const std::string mode = o.packing.seq_len > 0 ? "packed" : "padded";
      EXPECT_TRUE(st.IsInvalidArgument()) << mode << ": " << st.ToString();
      EXPECT_NE(st.message().find("record 'utt17'"), std::string::npos)
          << mode << ": " << st.ToString();
      EXPECT_NE(st.message().find("shard-0000"), std::string::npos)
          << mode << ": " << st.ToString();
      EXPECT_NE(st.message().find("2147483648"), std::string::npos)
          << mode << ": " << st.ToString();
    }
  }
  // The same dataset without the large id reads to the end in both modes.
  sluice::testing::TempDir good;
  WriteDataset(good.path(), -1);
  EXPECT_OK(EpochEnd(good.path(), padded));
  EXPECT_OK(EpochEnd(good.path(), packed));
}

}  // namespace
}  // namespace sluice::loader
