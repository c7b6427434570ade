// HF parquet rows: the header of one row as an item, and the reader's stream driven by a stand-in
// "python" (a shell script writing a fixed stream), so that every way the stream can end is
// checked without pyarrow (tests/tools/import_equality_test.py reads real datasets parquet).
#include "importers/hf_parquet.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "assert_ok.h"
#include "test_util.h"

namespace sluice::importers {
namespace {

ImportItem Row(const std::string& header, std::string audio = "") {
  ImportItem item;
  ImportOptions opt;
  opt.base_dir = "/data";
  ParseHfRow("train.parquet", header, std::move(audio), opt, &item);
  return item;
}

TEST(ParseHfRow, BytesKeyAndTextMakeTheItem) {
  ImportItem item =
      Row(R"({"row": 3, "key": "u1", "text": "hi there", "path": "a.flac", "bytes": 4})", "fLaC");
  EXPECT_EQ(item.reason, "");
  EXPECT_EQ(item.source, "train.parquet");
  EXPECT_EQ(item.line, 3u);
  EXPECT_EQ(item.key, "u1");
  EXPECT_EQ(item.text, "hi there");
  EXPECT_EQ(item.audio_bytes, "fLaC");
  EXPECT_EQ(item.audio_name, "train.parquet row 3 (a.flac)");
  EXPECT_EQ(item.audio_path, "");
}

TEST(ParseHfRow, APathAloneIsReadFromDiskAndKeysTheRecordWithoutAnIdColumn) {
  ImportItem item = Row(R"({"row": 1, "text": "x", "path": "clips/a.wav", "bytes": 0})");
  EXPECT_EQ(item.reason, "");
  EXPECT_EQ(item.key, "clips/a.wav");
  EXPECT_EQ(item.audio_path, "clips/a.wav");
  EXPECT_EQ(item.base_dir, "/data");
  EXPECT_EQ(item.audio_bytes, "");
}

TEST(ParseHfRow, EachBadRowIsRejectedNamingFileAndRow) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"row": 2, "key": null, "text": "x", "path": null, "bytes": 1})", "the id is null"},
      {R"({"row": 2, "key": 7, "text": "x", "path": null, "bytes": 1})", "the id is not a string"},
      {R"({"row": 2, "key": "u", "text": null, "path": null, "bytes": 1})",
       "\"u\": the transcript is null"},
      {R"({"row": 2, "key": "u", "text": 5, "path": null, "bytes": 1})",
       "\"u\": the text column holds no string"},
      {R"({"row": 2, "text": "x", "path": null, "bytes": 1})", "no id column and no audio path"},
      {R"({"row": 2, "key": "u", "text": "x", "path": 3, "bytes": 1})",
       "the audio's path is not a string"},
  };
  for (const auto& [header, why] : cases) {
    ImportItem item = Row(header, "a");
    EXPECT_NE(item.reason.find(std::string("train.parquet row 2: ") + why), std::string::npos)
        << header << " -> " << item.reason;
    EXPECT_EQ(item.line, 2u);
    EXPECT_EQ(item.input, header);
    EXPECT_EQ(item.audio_bytes, "");
  }
  ImportItem none = Row(R"({"row": 4, "key": "u", "text": "x", "path": null, "bytes": 0})");
  EXPECT_EQ(none.reason,
            "train.parquet row 4: \"u\": no audio (the audio column's bytes and path are both "
            "null)");
  EXPECT_NE(Row("not json").reason.find("row 0: the row's header is not a JSON object"),
            std::string::npos);
}

// The items of one file whose reader is `stream_script` (sh), or the error that ends them.
struct Read {
  std::vector<ImportItem> items;
  Status status;
};

Read ReadWith(const std::string& stream_script) {
  sluice::testing::TempDir dir;
  const std::string python = dir.path() + "/python";
  sluice::testing::WriteFile(python, "#!/bin/sh\n" + stream_script + "\n");
  ::chmod(python.c_str(), 0755);
  ImportOptions opt;
  opt.python = python;
  std::unique_ptr<Importer> in;
  Read r;
  r.status = OpenHfParquet({"a.parquet", "b.parquet"}, opt, &in);
  if (!r.status.ok()) return r;
  ImportItem item;
  while (in->Next(&item, &r.status)) r.items.push_back(item);
  return r;
}

TEST(OpenHfParquet, RowsOfEveryFileInOrderWithTheirBytes) {
  // $6 is the file: "python -c SCRIPT AUDIO TEXT ID FILE".
  Read r = ReadWith(
      R"(printf '{"row": 1, "key": "%s-1", "text": "t", "path": null, "bytes": 3}\nabc' "$6")"
      "\n"
      R"(printf '{"row": 2, "key": "%s-2", "text": "t", "path": null, "bytes": 0}\n' "$6")"
      "\n"
      R"(printf '{"end": 2}\n')");
  ASSERT_OK(r.status);
  ASSERT_EQ(r.items.size(), 4u);
  EXPECT_EQ(r.items[0].key, "a.parquet-1");
  EXPECT_EQ(r.items[0].audio_bytes, "abc");
  EXPECT_NE(r.items[1].reason.find("a.parquet row 2: \"a.parquet-2\": no audio"), std::string::npos)
      << r.items[1].reason;
  EXPECT_EQ(r.items[2].key, "b.parquet-1");
  EXPECT_EQ(r.items[3].source, "b.parquet");
}

TEST(OpenHfParquet, AFileLevelErrorStopsTheRunNamingTheFile) {
  Read r = ReadWith(R"(printf '{"error": "no text column '"'"'text'"'"'"}\n'; exit 1)");
  EXPECT_TRUE(r.items.empty());
  EXPECT_EQ(r.status.message(), "a.parquet: no text column 'text'");
}

TEST(OpenHfParquet, AStreamCutShortIsAnErrorWithTheExitStatus) {
  Read r = ReadWith(R"(printf '{"row": 1, "key": "k", "text": "t", "bytes": 10}\nabc'; exit 3)");
  EXPECT_TRUE(r.items.empty());
  EXPECT_NE(r.status.message().find("a.parquet: the parquet reader ("), std::string::npos)
      << r.status.ToString();
  EXPECT_NE(r.status.message().find("exited with status 3 after row 0 without finishing the file"),
            std::string::npos)
      << r.status.ToString();
}

TEST(OpenHfParquet, AMissingEndMarkerOrAWrongCountIsAnError) {
  Read early = ReadWith(R"(printf '{"row": 1, "key": "k", "text": "t", "bytes": 0}\n')");
  EXPECT_EQ(early.items.size(), 1u);
  EXPECT_NE(early.status.message().find("exited with status 0 after row 1 without finishing"),
            std::string::npos)
      << early.status.ToString();
  Read count =
      ReadWith(R"(printf '{"row": 1, "key": "k", "text": "t", "bytes": 0}\n{"end": 5}\n')");
  EXPECT_TRUE(count.status.IsCorruption()) << count.status.ToString();
  EXPECT_NE(count.status.message().find("an end marker for 5 rows after 1"), std::string::npos);
  Read skipped = ReadWith(R"(printf '{"row": 2, "key": "k", "text": "t", "bytes": 0}\n')");
  EXPECT_NE(skipped.status.message().find("out of step (row 1 expected)"), std::string::npos)
      << skipped.status.ToString();
}

TEST(OpenHfParquet, ANonZeroExitAfterTheEndIsAnError) {
  Read r = ReadWith(R"(printf '{"end": 0}\n'; exit 4)");
  EXPECT_NE(r.status.message().find("a.parquet: the parquet reader ("), std::string::npos);
  EXPECT_NE(r.status.message().find("exited with status 4"), std::string::npos)
      << r.status.ToString();
}

TEST(OpenHfParquet, APythonThatCannotStartIsNamedWithAHint) {
  ImportOptions opt;
  opt.python = "/nonexistent/python3";
  std::unique_ptr<Importer> in;
  ASSERT_OK(OpenHfParquet({"a.parquet"}, opt, &in));
  ImportItem item;
  Status st;
  EXPECT_FALSE(in->Next(&item, &st));
  EXPECT_EQ(st.message(),
            "a.parquet: cannot start the parquet reader '/nonexistent/python3': No such file or "
            "directory. HINT: pass --python a Python 3 that has pyarrow");
}

}  // namespace
}  // namespace sluice::importers
