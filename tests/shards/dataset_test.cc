#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "assert_ok.h"
#include "fuzz_regression.h"
#include "shards/checksum.h"
#include "shards/dataset.h"
#include "shards/dataset_writer.h"
#include "shards/manifest.h"
#include "shards/record.h"
#include "test_util.h"

namespace sluice::shards {
namespace {

// Writes `n` records through a DatasetWriter with small shards and saves a manifest.
Manifest WriteDataset(const std::string& dir, int n, uint64_t shard_size) {
  DatasetWriterOptions opt;
  opt.shard_size = shard_size;
  opt.shard.block_size = 2000;
  int done_calls = 0;
  DatasetWriter w(dir, opt, [&](const ShardEntry&) {
    done_calls++;
    return Status::OK();
  });
  for (int i = 0; i < n; ++i) {
    std::string key = "r" + std::to_string(i);
    RecordBuilder rb;
    rb.AddField(FieldType::kAudioPcm16, testing::RandomBytes(i, 500 + i % 700));
    rb.AddField(FieldType::kText, "text of " + key);
    EXPECT_OK(w.Add({key, uint64_t(1000 + i), 0}, rb.data()));
  }
  EXPECT_OK(w.Finish());
  EXPECT_EQ(done_calls, static_cast<int>(w.shards().size()));
  Manifest m;
  m.kind = "audio";
  m.sample_rate = 16000;
  m.codec = "pcm16";
  m.fields = {"audio", "text"};
  m.records = n;
  m.shards = w.shards();
  EXPECT_OK(SaveManifest(dir, m));
  return m;
}

TEST(Dataset, RollsShardsAtTheSizeTarget) {
  testing::TempDir dir;
  Manifest m = WriteDataset(dir.path(), 200, 30000);
  EXPECT_GT(m.shards.size(), 3u);
  uint64_t records = 0;
  for (const auto& s : m.shards) {
    records += s.records;
    // A shard may overshoot its target by at most one block plus the index.
    EXPECT_LT(s.bytes, 30000u + 2000u + 200 * 40);
  }
  EXPECT_EQ(records, 200u);
  EXPECT_EQ(m.shards[0].file, "shard-00000.sluice");
}

TEST(Dataset, ManifestRoundTrips) {
  testing::TempDir dir;
  Manifest m = WriteDataset(dir.path(), 50, 20000);
  Manifest back;
  ASSERT_OK(LoadManifest(dir.path(), &back));
  EXPECT_EQ(ManifestToJson(back), ManifestToJson(m));
  EXPECT_DOUBLE_EQ(back.seconds(), static_cast<double>(m.duration()) / 16000);
}

// Found by manifest_fuzzer under UBSan: nlohmann's get<uint64_t>() casts a float, so
// "records": 6.67e97 was undefined behaviour (in practice a garbage count). Counts must be integers.
TEST(Dataset, ManifestCountThatIsAFloatIsCorruption) {
  testing::TempDir dir;
  testing::WriteFile(dir.Join("manifest.json"),
                     testing::FuzzRegression("manifest", "records-6.7e97.json"));
  Manifest m;
  Status s = LoadManifest(dir.path(), &m);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("\"records\" must be an integer"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("manifest.json"), std::string::npos) << s.message();
}

TEST(Dataset, OpensEveryShardAndReportsRecords) {
  testing::TempDir dir;
  WriteDataset(dir.path(), 120, 25000);
  std::unique_ptr<Dataset> ds;
  Status s = Dataset::Open(dir.path(), {}, &ds);
  ASSERT_OK(s);
  uint64_t n = 0;
  for (size_t i = 0; i < ds->num_shards(); ++i) n += ds->shard(i).num_records();
  EXPECT_EQ(n, 120u);
  EXPECT_EQ(ds->shard(0).key(0), "r0");
}

TEST(Dataset, VerifyPassesOnAnIntactDataset) {
  testing::TempDir dir;
  WriteDataset(dir.path(), 80, 25000);
  VerifyReport rep;
  ASSERT_OK(VerifyDataset(dir.path(), &rep));
  EXPECT_TRUE(rep.ok()) << rep.problems[0].message;
  EXPECT_EQ(rep.records, 80u);
}

TEST(Dataset, VerifyNamesTheDamagedShardAndBlock) {
  testing::TempDir dir;
  Manifest m = WriteDataset(dir.path(), 80, 25000);
  const std::string victim = dir.Join(m.shards[1].file);
  std::string bytes = testing::ReadFile(victim);
  bytes[100] ^= 0x40;  // inside block 0's compressed bytes
  testing::WriteFile(victim, bytes);
  VerifyReport rep;
  ASSERT_OK(VerifyDataset(dir.path(), &rep));
  ASSERT_FALSE(rep.ok());
  bool whole_file = false, block = false;
  for (const auto& p : rep.problems) {
    EXPECT_EQ(p.shard, m.shards[1].file);
    whole_file |= p.message.find("whole-file checksum") != std::string::npos;
    block |= p.message.find("block 0 at offset 16: checksum mismatch") != std::string::npos;
  }
  EXPECT_TRUE(whole_file);
  EXPECT_TRUE(block) << rep.problems.back().message;
}

TEST(Dataset, MissingShardIsReported) {
  testing::TempDir dir;
  Manifest m = WriteDataset(dir.path(), 80, 25000);
  std::filesystem::remove(dir.Join(m.shards[0].file));
  VerifyReport rep;
  ASSERT_OK(VerifyDataset(dir.path(), &rep));
  ASSERT_EQ(rep.problems.size(), 1u);
  EXPECT_NE(rep.problems[0].message.find("no such file"), std::string::npos);
  std::unique_ptr<Dataset> ds;
  EXPECT_TRUE(Dataset::Open(dir.path(), {}, &ds).IsNotFound());
}

TEST(Dataset, ManifestRecordsEachShardsFooterChecksum) {
  testing::TempDir dir;
  Manifest m = WriteDataset(dir.path(), 80, 25000);
  std::unique_ptr<Dataset> ds;
  ASSERT_OK(Dataset::Open(dir.path(), {}, &ds));
  for (size_t i = 0; i < m.shards.size(); ++i) {
    ASSERT_TRUE(m.shards[i].footer_xxh3.has_value()) << i;
    EXPECT_EQ(*m.shards[i].footer_xxh3, ds->shard(i).footer_xxh3()) << i;
    const std::string bytes = testing::ReadFile(dir.Join(m.shards[i].file));
    EXPECT_EQ(*m.shards[i].footer_xxh3, Checksum(bytes.data() + bytes.size() - 48, 48)) << i;
  }
  Manifest back;
  ASSERT_OK(LoadManifest(dir.path(), &back));
  EXPECT_EQ(back.shards[1].footer_xxh3, m.shards[1].footer_xxh3);
}

// manifest.json names one version of each shard; a shard file of another version (an upload in
// progress, a directory rewritten under a reader) is an error saying so, at open and in verify.
TEST(Dataset, ShardOfAnotherVersionIsAMidUpdateErrorAtOpenAndInVerify) {
  testing::TempDir dir;
  Manifest m = WriteDataset(dir.path(), 80, 25000);
  m.shards[1].footer_xxh3 = *m.shards[1].footer_xxh3 ^ 1;  // as if the manifest were newer
  ASSERT_OK(SaveManifest(dir.path(), m));
  std::unique_ptr<Dataset> ds;
  const Status s = Dataset::Open(dir.path(), {}, &ds);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find(dir.Join(m.shards[1].file) + ": footer checksum"), std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("different versions of the dataset"), std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("HINT: wait for the upload to finish and re-run"), std::string::npos)
      << s.ToString();
  VerifyReport rep;
  ASSERT_OK(VerifyDataset(dir.path(), &rep));
  ASSERT_EQ(rep.problems.size(), 1u);
  EXPECT_EQ(rep.problems[0].shard, m.shards[1].file);
  EXPECT_NE(rep.problems[0].message.find("different versions of the dataset"), std::string::npos)
      << rep.problems[0].message;
}

// Manifests written before footer_xxh3 existed load, open and verify as before (no footer is
// checked against them).
TEST(Dataset, ManifestWithoutFooterChecksumsStillOpens) {
  testing::TempDir dir;
  WriteDataset(dir.path(), 80, 25000);
  nlohmann::json j = nlohmann::json::parse(testing::ReadFile(dir.Join("manifest.json")));
  for (auto& shard : j["shards"]) shard.erase("footer_xxh3");
  testing::WriteFile(dir.Join("manifest.json"), j.dump(2));
  Manifest back;
  ASSERT_OK(LoadManifest(dir.path(), &back));
  EXPECT_FALSE(back.shards[0].footer_xxh3.has_value());
  EXPECT_FALSE(ShardEntryToJson(back.shards[0]).contains("footer_xxh3"));
  std::unique_ptr<Dataset> ds;
  ASSERT_OK(Dataset::Open(dir.path(), {}, &ds));
  VerifyReport rep;
  ASSERT_OK(VerifyDataset(dir.path(), &rep));
  EXPECT_TRUE(rep.ok()) << rep.problems[0].message;
}

TEST(Dataset, MalformedFooterChecksumIsCorruption) {
  testing::TempDir dir;
  WriteDataset(dir.path(), 30, 25000);
  nlohmann::json j = nlohmann::json::parse(testing::ReadFile(dir.Join("manifest.json")));
  j["shards"][0]["footer_xxh3"] = "xyz";
  testing::WriteFile(dir.Join("manifest.json"), j.dump(2));
  Manifest back;
  const Status s = LoadManifest(dir.path(), &back);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("bad footer_xxh3 'xyz'"), std::string::npos) << s.ToString();
}

// --resume helps a directory shardify left unfinished, and only that: a directory it never wrote,
// a file, or a path that does not exist each say what they are.
TEST(Dataset, DirectoryShardifyNeverWroteIsNotADatasetDirectory) {
  testing::TempDir dir;
  testing::WriteFile(dir.Join("notes.txt"), "x");
  std::unique_ptr<Dataset> ds;
  const Status s = Dataset::Open(dir.path(), {}, &ds);
  EXPECT_TRUE(s.IsNotFound());
  EXPECT_NE(s.message().find(dir.path() + ": not a dataset directory"), std::string::npos)
      << s.ToString();
  EXPECT_EQ(s.message().find("--resume"), std::string::npos) << s.ToString();
}

TEST(Dataset, UnfinishedShardifyOutputSaysResume) {
  for (const char* mark : {kShardifyJournalName, kShardifyLockName}) {
    testing::TempDir dir;
    testing::WriteFile(dir.Join(mark), "{}\n");
    std::unique_ptr<Dataset> ds;
    const Status s = Dataset::Open(dir.path(), {}, &ds);
    EXPECT_TRUE(s.IsNotFound());
    EXPECT_NE(s.message().find("shardify did not finish"), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("--resume"), std::string::npos) << s.ToString();
  }
}

TEST(Dataset, FileGivenAsTheDatasetSaysSoAndNamesItsDirectory) {
  testing::TempDir dir;
  WriteDataset(dir.path(), 3, 25000);
  std::unique_ptr<Dataset> ds;
  Status s = Dataset::Open(dir.Join("manifest.json"), {}, &ds);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find(dir.Join("manifest.json") + " is a file, not a dataset directory"),
            std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("HINT: give its directory, " + dir.path()), std::string::npos)
      << s.ToString();
  EXPECT_EQ(s.message().find("--resume"), std::string::npos) << s.ToString();
  testing::WriteFile(dir.Join("list.txt"), "x");
  s = Dataset::Open(dir.Join("list.txt"), {}, &ds);
  EXPECT_NE(s.message().find("is a file"), std::string::npos) << s.ToString();
}

TEST(Dataset, MissingDirectorySaysSo) {
  testing::TempDir dir;
  std::unique_ptr<Dataset> ds;
  const Status s = Dataset::Open(dir.Join("nothing"), {}, &ds);
  EXPECT_TRUE(s.IsNotFound());
  EXPECT_NE(s.message().find(dir.Join("nothing") + ": no such directory"), std::string::npos)
      << s.ToString();
}

TEST(Dataset, ManifestRecordCountMismatchIsCorruption) {
  testing::TempDir dir;
  Manifest m = WriteDataset(dir.path(), 30, 25000);
  m.records = 31;
  ASSERT_OK(SaveManifest(dir.path(), m));
  Manifest back;
  EXPECT_TRUE(LoadManifest(dir.path(), &back).IsCorruption());
}

TEST(Dataset, ManifestThatIsNotJsonIsCorruption) {
  testing::TempDir dir;
  testing::WriteFile(dir.Join("manifest.json"), "{\"format\": \"sluice-dataset\", ");
  Manifest back;
  Status s = LoadManifest(dir.path(), &back);
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("manifest.json"), std::string::npos);
}

TEST(Dataset, ShardColumnsOtherThanTheManifestsAreCorruption) {
  testing::TempDir dir;
  DatasetWriterOptions opt;
  opt.shard.columns = {{"speaker", ColumnType::kString}, {"age", ColumnType::kInt}};
  DatasetWriter w(dir.path(), opt);
  std::vector<ColumnValue> values(2);
  values[0] = {false, 0, 0, "spk1"};
  ASSERT_OK(w.Add({"r0", 1000, 0, "", values}, "payload"));
  ASSERT_OK(w.Finish());
  Manifest m;
  m.kind = "audio";
  m.sample_rate = 16000;
  m.codec = "pcm16";
  m.fields = {"audio"};
  m.records = 1;
  m.shards = w.shards();
  m.columns = opt.shard.columns;
  ASSERT_OK(SaveManifest(dir.path(), m));
  std::unique_ptr<Dataset> ds;
  ASSERT_OK(Dataset::Open(dir.path(), {}, &ds));
  EXPECT_EQ(ds->shard(0).columns().columns[0].string_at(0), "spk1");
  EXPECT_TRUE(ds->shard(0).columns().columns[1].is_null(0));

  Manifest loaded;
  ASSERT_OK(LoadManifest(dir.path(), &loaded));
  EXPECT_EQ(loaded.columns, opt.shard.columns);
  m.columns = {{"speaker", ColumnType::kString}};
  ASSERT_OK(SaveManifest(dir.path(), m));
  Status st = Dataset::Open(dir.path(), {}, &ds);
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.message().find("index columns (speaker:string, age:int) are not manifest.json's "
                              "(speaker:string)"),
            std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace sluice::shards
