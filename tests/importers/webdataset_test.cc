// WebDataset tars: samples grouped by key, audio and text found by extension, and every reason a
// sample is rejected (importers/webdataset.h). The tars here are written with libarchive's
// writer, so they can hold what webdataset's TarWriter never writes (tests/tools/
// import_equality_test.py reads TarWriter's own).
#include "importers/webdataset.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "assert_ok.h"
#include "fuzz_regression.h"
#include "test_util.h"
#include "tar_writer.h"

namespace sluice::importers {
namespace {

using Entry = testing::TarEntry;

std::string Tar(const std::vector<testing::TarEntry>& entries) { return testing::WriteTar(entries); }

std::vector<std::string> Summary(const std::vector<ImportItem>& items) {
  std::vector<std::string> out;
  for (const ImportItem& it : items)
    out.push_back(it.reason.empty() ? it.key + "=" + it.text + " [" + it.audio_name + " " +
                                          std::to_string(it.audio_bytes.size()) + "]"
                                    : std::to_string(it.line) + " " + it.reason);
  return out;
}

TEST(WebDataset, GroupsMembersByKeyAndFindsAudioAndText) {
  std::vector<ImportItem> items;
  ASSERT_OK(WebDatasetItems("t.tar",
                            Tar({{"d/", "", AE_IFDIR},
                                 {"d/a.flac", "FLAC"},
                                 {"d/a.txt", "hello"},
                                 {"d/a.cls", "3"},
                                 {"d/b.seg.WAV", "RIFF.."},
                                 {"d/b.json", R"({"text": "hi there", "speaker": "s1"})"}}),
                            &items));
  EXPECT_EQ(Summary(items), (std::vector<std::string>{"d/a=hello [t.tar:d/a.flac 4]",
                                                      "d/b=hi there [t.tar:d/b.seg.WAV 6]"}));
  EXPECT_EQ(items[1].speaker, "s1");
  EXPECT_EQ(items[1].source, "t.tar");
  EXPECT_EQ(items[1].line, 2u);
}

TEST(WebDataset, EveryRejectionNamesTarSampleAndReason) {
  std::vector<ImportItem> items;
  ASSERT_OK(WebDatasetItems("t.tar",
                            Tar({{"a.txt", "no audio"},
                                 {"b.wav", "x"},
                                 {"c.wav", "x"},
                                 {"c.mp3", "y"},
                                 {"c.txt", "t"},
                                 {"d.ogg", "x"},
                                 {"d.json", "[1]"},
                                 {"e.opus", "x"},
                                 {"e.json", R"({"txt": 1})"},
                                 {"f.wav", "x"},
                                 {"f.txt", "t"},
                                 {"g.wav", "x"},
                                 {"g.txt", "t"},
                                 {"f.txt", "again"},
                                 {"f.wav", "again"},
                                 {"h.wav", "", AE_IFLNK}}),
                            &items));
  EXPECT_EQ(Summary(items),
            (std::vector<std::string>{
                "1 t.tar sample 1 \"a\": no audio member (.wav, .flac, .mp3, .ogg or .opus)",
                "2 t.tar sample 2 \"b\": no transcript (a .txt member, or a .json member with "
                "\"text\")",
                "3 t.tar sample 3 \"c\": two audio members, \"c.wav\" and \"c.mp3\": one record "
                "holds one clip",
                "4 t.tar sample 4 \"d\": \"d.json\" is not a JSON object",
                "5 t.tar sample 5 \"e\": \"e.json\" has no \"text\" string",
                "f=t [t.tar:f.wav 1]",
                "g=t [t.tar:g.wav 1]",
                "8 t.tar sample 8 \"f\": the key appears again after other samples (a tar "
                "written out of order)",
                "9 t.tar sample 9 \"h.wav\": member \"h.wav\" is not a regular file (a link or "
                "device)",
            }));
}

TEST(WebDataset, DamagedTarIsAnErrorNamingTheTar) {
  const std::string tar = Tar({{"a.wav", std::string(3000, 'x')}, {"a.txt", "t"}});
  std::vector<ImportItem> items;
  Status st = WebDatasetItems("cut.tar", tar.substr(0, 1500), &items);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cut.tar"), std::string::npos) << st.ToString();

  testing::TempDir dir;
  testing::WriteFile(dir.Join("bad.tar"), std::string(1024, 'z'));
  std::unique_ptr<Importer> in;
  ASSERT_OK(OpenWebDataset({dir.Join("bad.tar")}, &in));
  ImportItem it;
  EXPECT_FALSE(in->Next(&it, &st));
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.message().find("bad.tar"), std::string::npos) << st.ToString();
}

TEST(WebDataset, ReadsTarsFromFilesInOrder) {
  testing::TempDir dir;
  testing::WriteFile(dir.Join("1.tar"), Tar({{"a.wav", "A"}, {"a.txt", "x"}}));
  testing::WriteFile(dir.Join("2.tar"), Tar({{"a.wav", "B"}, {"a.txt", "y"}}));
  std::unique_ptr<Importer> in;
  ASSERT_OK(OpenWebDataset({dir.Join("1.tar"), dir.Join("2.tar")}, &in));
  ImportItem it;
  Status st;
  std::string got;
  while (in->Next(&it, &st)) got += it.audio_bytes + it.text + std::to_string(it.line);
  ASSERT_OK(st);
  EXPECT_EQ(got, "Ax1By1");  // a key repeated across tars is the next tar's sample
}

}  // namespace
}  // namespace sluice::importers

namespace sluice::importers {
namespace {

// webdataset_fuzzer found a sample accepted without audio bytes, which shardify would then have
// taken for a sample with an (empty) audio path.
TEST(WebDataset, FuzzerInputsNeverAcceptASampleWithoutKeyOrAudio) {
  std::vector<ImportItem> items;
  const Status st = WebDatasetItems(
      "fuzz.tar", testing::FuzzRegression("webdataset", "accepted-sample-without-audio-bytes"),
      &items);
  (void)st;  // damaged: an error is fine, an accepted empty sample is not
  for (const ImportItem& it : items) {
    if (!it.reason.empty()) continue;
    EXPECT_FALSE(it.key.empty());
    EXPECT_FALSE(it.audio_bytes.empty()) << it.key << " " << it.audio_name;
  }
  ASSERT_OK(WebDatasetItems("t.tar", Tar({{"a.wav", ""}, {"a.txt", "t"}}), &items));
  ASSERT_FALSE(items.empty());
  EXPECT_EQ(items.back().reason, "t.tar sample 1 \"a\": audio member \"a.wav\" is empty");
}

}  // namespace
}  // namespace sluice::importers
