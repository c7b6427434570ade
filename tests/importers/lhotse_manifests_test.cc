// A Lhotse recordings manifest with its supervisions manifest: one cut per supervision, and
// every line that makes none rejected naming file and line (importers/lhotse_manifests.h).
// Files written by lhotse itself: tests/tools/import_equality_test.py.
#include "importers/lhotse_manifests.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "assert_ok.h"
#include "test_util.h"

namespace sluice::importers {
namespace {

const std::string kRec1 =
    R"({"id": "r1", "sources": [{"type": "file", "channels": [0], "source": "r1.wav"}], "sampling_rate": 16000, "num_samples": 64000, "duration": 4.0, "channel_ids": [0]})";
const std::string kRec2 =
    R"({"id": "r2", "sources": [{"type": "url", "channels": [0], "source": "s3://b/r2.wav"}], "sampling_rate": 16000, "num_samples": 16000, "duration": 1.0, "channel_ids": [0]})";
const std::string kSupA =
    R"({"id": "a", "recording_id": "r1", "start": 1.5, "duration": 2.0, "channel": 0, "text": "hello", "speaker": "s1"})";

std::vector<std::string> Summary(const std::vector<ImportItem>& items) {
  std::vector<std::string> out;
  for (const ImportItem& it : items) out.push_back(it.reason.empty() ? it.key : it.reason);
  return out;
}

TEST(LhotsePair, OneCutPerSupervisionOverItsSpan) {
  std::vector<ImportItem> items;
  LhotsePairItems("rec", {kRec1}, "sup", {kSupA}, {}, &items);
  ASSERT_EQ(Summary(items), std::vector<std::string>{"a"});
  EXPECT_EQ(items[0].audio_path, "r1.wav");
  EXPECT_EQ(items[0].offset_seconds, 1.5);
  EXPECT_EQ(items[0].duration_seconds, 2.0);
  EXPECT_EQ(items[0].text, "hello");
  EXPECT_EQ(items[0].speaker, "s1");
  EXPECT_EQ(items[0].source, "sup");
  EXPECT_EQ(items[0].line, 1u);
}

TEST(LhotsePair, EveryLineThatMakesNoCutIsRejectedNamingFileAndLine) {
  std::vector<ImportItem> items;
  LhotsePairItems("rec", {kRec1, kRec2, "{}", kRec1, R"({"id": "r3", "sources": []})"}, "sup",
                  {kSupA, "[1]", kSupA, R"({"id": "b", "recording_id": "r9", "text": "x"})",
                   R"({"id": "c", "recording_id": "r2", "start": 0, "duration": 1, "text": "x"})"},
                  {}, &items);
  EXPECT_EQ(Summary(items),
            (std::vector<std::string>{
                "a",
                "sup line 2: not a Lhotse SupervisionSegment (a JSON object with \"id\" and "
                "\"recording_id\" strings)",
                "sup line 3: duplicate supervision id \"a\" (first at line 1)",
                "sup line 4: supervision \"b\": recording \"r9\" is not in rec",
                "sup line 5: cut \"c\": recording has a \"url\" source (\"s3://b/r2.wav\"), "
                "which sluice cannot read: only \"file\" (and \"command\" with --allow-pipes). "
                "HINT: download or save the audio to local files first",
                "rec line 5: recording \"r3\" has no supervision in sup",
                "rec line 3: not a Lhotse Recording (a JSON object with an \"id\")",
                "rec line 4: duplicate recording id \"r1\" (first at line 1)",
            }));
}

TEST(LhotsePair, OpenTellsTheShapesApart) {
  testing::TempDir dir;
  testing::WriteFile(dir.Join("rec.jsonl"), kRec1 + "\n");
  testing::WriteFile(dir.Join("sup.jsonl"), kSupA + "\n");
  std::unique_ptr<Importer> in;
  ASSERT_OK(OpenLhotse({dir.Join("sup.jsonl"), dir.Join("rec.jsonl")}, {}, &in));
  ImportItem it;
  Status st;
  ASSERT_TRUE(in->Next(&it, &st));
  EXPECT_EQ(it.key, "a");
  st = OpenLhotse({dir.Join("rec.jsonl")}, {}, &in);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("rec.jsonl holds recordings. HINT"), std::string::npos)
      << st.ToString();
}

}  // namespace
}  // namespace sluice::importers
