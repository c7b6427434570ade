// Lhotse Shar directories: each cut's audio from its tar member, and the ways a directory is
// rejected or refused (importers/shar.h). Directories written by lhotse's to_shar:
// tests/tools/import_equality_test.py.
#include "importers/shar.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "assert_ok.h"
#include "test_util.h"
#include "tar_writer.h"

namespace sluice::importers {
namespace {

std::string Tar(const std::vector<testing::TarEntry>& entries) { return testing::WriteTar(entries); }

// A cut as to_shar writes it: a "shar" source, start kept, the span's duration.
std::string Cut(const std::string& id, const std::string& text) {
  return R"({"id": ")" + id +
         R"(", "start": 1.0, "duration": 0.5, "channel": 0, "supervisions": [{"id": ")" + id +
         R"(", "recording_id": "r", "start": 0, "duration": 0.5, "channel": 0, "text": ")" + text +
         R"("}], "recording": {"id": "r", "sources": [{"type": "shar", "channels": [0], "source": ""}], "sampling_rate": 16000, "num_samples": 8000, "duration": 0.5, "channel_ids": [0]}, "type": "MonoCut"})" +
         "\n";
}

std::vector<std::string> ReadAll(const std::string& dir, Status* st) {
  std::unique_ptr<Importer> in;
  *st = OpenShar(dir, {}, &in);
  std::vector<std::string> out;
  if (!st->ok()) return out;
  ImportItem it;
  while (in->Next(&it, st))
    out.push_back(it.reason.empty()
                      ? it.key + "=" + it.text + " [" + it.audio_name + " " + it.audio_bytes + "]"
                      : it.reason);
  return out;
}

TEST(Shar, EachCutTakesItsMemberWholeAndRejectsCutsWithoutAudio) {
  testing::TempDir dir;
  testing::WriteFile(dir.Join("cuts.000000.jsonl"), Cut("a.1", "x") + Cut("b", "y"));
  testing::WriteFile(
      dir.Join("recording.000000.tar"),
      Tar({{"a.1.flac", "FLAC"}, {"a.1.json", "{}"}, {"b.nodata", ""}, {"b.nometa", ""}}));
  testing::WriteFile(dir.Join("cuts.000001.jsonl"), Cut("c", "z"));
  testing::WriteFile(dir.Join("recording.000001.tar"), Tar({{"c.wav", "RIFF"}, {"c.json", "{}"}}));
  Status st;
  const auto got = ReadAll(dir.path(), &st);
  ASSERT_OK(st);
  EXPECT_EQ(got, (std::vector<std::string>{
                     "a.1=x [" + dir.Join("recording.000000.tar") + ":a.1.flac FLAC]",
                     "cut \"b\" is stored without audio (" + dir.Join("recording.000000.tar") +
                         ": \"b.nodata\")",
                     "c=z [" + dir.Join("recording.000001.tar") + ":c.wav RIFF]"}));
  std::unique_ptr<Importer> in;
  ASSERT_OK(OpenShar(dir.path(), {}, &in));
  ImportItem it;
  ASSERT_TRUE(in->Next(&it, &st));
  EXPECT_EQ(it.offset_seconds, 0);  // the member holds the cut's span already
  EXPECT_EQ(it.duration_seconds, -1);
}

TEST(Shar, TarOutOfStepWithItsCutsIsAnError) {
  testing::TempDir dir;
  testing::WriteFile(dir.Join("cuts.000000.jsonl"), Cut("a", "x") + Cut("b", "y"));
  testing::WriteFile(dir.Join("recording.000000.tar"),
                     Tar({{"a.flac", "F"}, {"a.json", "{}"}, {"c.flac", "F"}}));
  Status st;
  ReadAll(dir.path(), &st);
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.message().find("member \"c.flac\" where cut \"b\"'s were expected"),
            std::string::npos)
      << st.ToString();
}

TEST(Shar, DirectoryWithoutCutsOrTarsIsRefusedWithAHint) {
  testing::TempDir dir;
  Status st;
  ReadAll(dir.path(), &st);
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
  EXPECT_NE(st.message().find("not a Lhotse Shar directory. HINT"), std::string::npos);
  testing::WriteFile(dir.Join("cuts.000000.jsonl.gz"), "");
  ReadAll(dir.path(), &st);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("has no " + dir.Join("recording.000000.tar")), std::string::npos)
      << st.ToString();
}

}  // namespace
}  // namespace sluice::importers
