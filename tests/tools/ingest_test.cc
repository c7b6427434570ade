// shardify's ingest engine (tools/shardify/ingest.h) on an in-memory item source with a process
// function of the test's making: what a run does with an item whose processing throws, with an
// input whose every item is rejected, and with an output directory another run holds.
#include "ingest.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "assert_ok.h"
#include "dataset_compare.h"
#include "out_lock.h"
#include "set_aside.h"
#include "shards/manifest.h"
#include "shards/record.h"
#include "test_util.h"

namespace sluice::shardify {
namespace {
namespace fs = std::filesystem;
using testing::DirContents;
using testing::TempDir;

class VectorSource : public ItemSource {
 public:
  explicit VectorSource(std::vector<std::string> items) : items_(std::move(items)) {}
  Status Count(uint64_t* n, uint64_t* digest) override {
    *n = items_.size();
    *digest = 0;
    for (const auto& s : items_) *digest = *digest * 31 + std::hash<std::string>()(s);
    return Status::OK();
  }
  bool Next(InputItem* item, Status*) override {
    if (next_ == items_.size()) return false;
    item->index = next_;
    item->source = "items.txt";
    item->line = next_ + 1;
    item->text = items_[next_++];
    return true;
  }

 private:
  std::vector<std::string> items_;
  size_t next_ = 0;
};

// "bad..." is rejected, "throw..." throws, anything else is a record keyed by its text.
void Process(const InputItem& item, ItemResult* r) {
  if (item.text.rfind("throw", 0) == 0) throw std::length_error("vector::reserve");
  if (item.text.rfind("bad", 0) == 0) {
    r->reason = "bad item";
    return;
  }
  shards::RecordBuilder b;
  b.AddField(shards::FieldType::kText, item.text);
  r->ok = true;
  r->key = item.text;
  r->payload = b.data();
}

class IngestTest : public ::testing::Test {
 protected:
  Status Run(const std::vector<std::string>& items, bool overwrite = false,
             IngestSummary* summary = nullptr) {
    VectorSource source(items);
    IngestOptions opt;
    opt.out_dir = dir();
    opt.threads = 2;
    opt.progress = false;
    opt.overwrite = overwrite;
    opt.fingerprint = {{"command", "test"}};
    shards::Manifest m;
    m.kind = "text";
    m.fields = {"text"};
    IngestSummary local;
    return RunIngest(&source, Process, opt, m, summary ? summary : &local);
  }
  std::string dir() const { return tmp_.Join("ds"); }
  std::vector<nlohmann::json> Rejects() const {
    std::vector<nlohmann::json> out;
    std::ifstream in(dir() + "/rejects.jsonl");
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  }
  TempDir tmp_;
};

// An exception thrown for one item (here what a 1e15 s offset once caused) used to cancel the
// pipeline: "internal error: vector::reserve", the run stopped, nothing in rejects.jsonl.
TEST_F(IngestTest, AnItemWhoseProcessingThrowsIsRejectedNamingIt) {
  IngestSummary s;
  ASSERT_OK(Run({"a", "throw me", "b"}, false, &s));
  EXPECT_EQ(s.records, 2u);
  EXPECT_EQ(s.rejected, 1u);
  const auto rejects = Rejects();
  ASSERT_EQ(rejects.size(), 1u);
  EXPECT_EQ(rejects[0]["source"], "items.txt");
  EXPECT_EQ(rejects[0]["line"], 2);
  EXPECT_NE(rejects[0]["reason"].get<std::string>().find("vector::reserve"), std::string::npos)
      << rejects[0].dump();
}

TEST_F(IngestTest, AnInputWhoseEveryItemIsRejectedIsAnErrorAndWritesNoDataset) {
  const Status st = Run({"bad 1", "bad 2", "throw 3"});
  ASSERT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("every one of the 3 input items was rejected"), std::string::npos)
      << st.ToString();
  EXPECT_NE(st.message().find("items.txt:1: bad item"), std::string::npos) << st.ToString();
  EXPECT_FALSE(fs::exists(dir() + "/manifest.json"));
  EXPECT_EQ(Rejects().size(), 3u);  // the reasons stay for the user to read
  // Nothing left that would make a rerun refuse ("an interrupted run").
  ASSERT_OK(Run({"a"}));
}

TEST_F(IngestTest, OverwriteWithAnInputWhoseEveryItemIsRejectedKeepsTheDataset) {
  ASSERT_OK(Run({"a", "bad", "b"}));
  const auto before = DirContents(dir());
  const Status st = Run({"bad 1", "bad 2"}, /*overwrite=*/true);
  ASSERT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("keeps the dataset it held"), std::string::npos) << st.ToString();
  EXPECT_EQ(DirContents(dir()), before);
  shards::Manifest m;
  ASSERT_OK(shards::LoadManifest(dir(), &m));
  EXPECT_EQ(m.records, 2u);
  // A good input still replaces it, and leaves no set-aside behind.
  ASSERT_OK(Run({"c"}, /*overwrite=*/true));
  ASSERT_OK(shards::LoadManifest(dir(), &m));
  EXPECT_EQ(m.records, 1u);
  EXPECT_FALSE(fs::exists(dir() + "/" + kSetAsideName));
}

// The set-aside a crashed --overwrite run left comes back when the run that follows writes
// nothing, and goes when it completes.
TEST_F(IngestTest, ASetAsideLeftByACrashIsRestoredOrDiscarded) {
  ASSERT_OK(Run({"a", "b"}));
  const auto before = DirContents(dir());
  ASSERT_OK(SetAsideDataset(dir()));
  EXPECT_FALSE(fs::exists(dir() + "/manifest.json"));
  EXPECT_FALSE(Run({"bad"}, /*overwrite=*/true).ok());
  EXPECT_EQ(DirContents(dir()), before);
  ASSERT_OK(SetAsideDataset(dir()));
  ASSERT_OK(Run({"c"}, /*overwrite=*/true));
  EXPECT_FALSE(fs::exists(dir() + "/" + kSetAsideName));
}

TEST_F(IngestTest, ADirectoryAnotherRunHoldsIsRefusedNamingThatRun) {
  std::unique_ptr<OutDirLock> held;
  ASSERT_OK(OutDirLock::Acquire(dir(), "shardify test-holder", &held));
  const Status st = Run({"a"});
  ASSERT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("pid " + std::to_string(::getpid())), std::string::npos)
      << st.ToString();
  EXPECT_NE(st.message().find("shardify test-holder"), std::string::npos) << st.ToString();
  EXPECT_FALSE(fs::exists(dir() + "/manifest.json"));
  held.reset();
  EXPECT_FALSE(fs::exists(dir() + "/" + kLockName));
  ASSERT_OK(Run({"a"}));
  EXPECT_FALSE(fs::exists(dir() + "/" + kLockName));  // a finished dataset carries no lock file
}

// A crashed holder's lock file (the kernel dropped its lock) never blocks a rerun.
TEST_F(IngestTest, AStaleLockFileIsTakenOver) {
  fs::create_directories(dir());
  testing::WriteFile(dir() + "/" + kLockName, R"({"pid": 1, "host": "gone"})");
  ASSERT_OK(Run({"a"}));
}

}  // namespace
}  // namespace sluice::shardify
