// The Kaldi data directory reader: utterances from segments or wav.scp, and every line that
// makes no record rejected naming its file and line (importers/kaldi.h).
#include "importers/kaldi.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "assert_ok.h"
#include "test_util.h"

namespace sluice::importers {
namespace {

std::vector<ImportItem> Items(const KaldiFiles& files, bool allow_pipes = false) {
  ImportOptions opt;
  opt.allow_pipes = allow_pipes;
  opt.base_dir = "/egs";
  std::vector<ImportItem> out;
  KaldiItems("d", files, opt, &out);
  return out;
}

// "source:line reason" of each rejected item, "key" of each kept one.
std::vector<std::string> Summary(const std::vector<ImportItem>& items) {
  std::vector<std::string> out;
  for (const ImportItem& it : items)
    out.push_back(it.reason.empty() ? it.key
                                    : it.source + ":" + std::to_string(it.line) + " " + it.reason);
  return out;
}

TEST(KaldiDir, WholeRecordingsFromWavScp) {
  const auto items = Items({{"wav.scp", "u1 a/u1.wav\nu2 /abs/u2.flac\n"},
                            {"text", "u1 hello  world \nu2\n"},
                            {"utt2spk", "u1 s1\nu2 s2\n"},
                            {"utt2lang", "u2 fr\n"}});
  ASSERT_EQ(Summary(items), (std::vector<std::string>{"u1", "u2"}));
  EXPECT_EQ(items[0].audio_path, "a/u1.wav");
  EXPECT_EQ(items[0].base_dir, "/egs");
  EXPECT_EQ(items[0].text, "hello  world");
  EXPECT_EQ(items[0].speaker, "s1");
  EXPECT_EQ(items[0].duration_seconds, -1);
  EXPECT_EQ(items[1].text, "");  // an utterance without words
  EXPECT_EQ(items[1].language, "fr");
  EXPECT_EQ(items[1].source, "d/wav.scp");
  EXPECT_EQ(items[1].line, 2u);
}

TEST(KaldiDir, SegmentsCutRecordingsInSegmentsOrder) {
  const auto items = Items({{"wav.scp", "r1 r1.wav\n"},
                            {"segments", "b r1 1.5 2.25\na r1 0 -1\n"},
                            {"text", "a x\nb y\n"}});
  ASSERT_EQ(Summary(items), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(items[0].offset_seconds, 1.5);
  EXPECT_EQ(items[0].duration_seconds, 0.75);
  EXPECT_EQ(items[0].source, "d/segments");
  EXPECT_EQ(items[1].duration_seconds, -1);  // end -1: to the end of the recording
}

TEST(KaldiDir, PipesRunOnlyWhenAllowed) {
  const KaldiFiles f = {{"wav.scp", "u1 sox a.wav -t wav - |\n"}, {"text", "u1 x\n"}};
  EXPECT_EQ(Summary(Items(f)),
            (std::vector<std::string>{
                "d/wav.scp:1 d/wav.scp line 1: utterance \"u1\": pipe entry \"sox a.wav -t wav - "
                "|\" not run without --allow-pipes. HINT: pass --allow-pipes to run wav.scp's "
                "commands (with the rights of this user), or convert the audio to files"}));
  const auto items = Items(f, true);
  ASSERT_EQ(Summary(items), (std::vector<std::string>{"u1"}));
  EXPECT_EQ(items[0].pipe_command, "sox a.wav -t wav -");
  EXPECT_EQ(items[0].audio_name, "d/wav.scp command of u1");
}

TEST(KaldiDir, EveryInconsistencyIsRejectedNamingFileAndLine) {
  const auto items = Items({
      {"wav.scp", "r1 r1.wav\nr1 again.wav\nr2 x.ark:123\nr3 two words\nr4\nr5 r5.wav\nr6 - \n"},
      {"segments",
       "a r1 0 1\nb r9 0 1\nc r1 2 1\nd r1 0\ne r2 0 1\nf r3 0 1\ng r1 0 1\na r1 0 1\nh r1 0 1\n"
       "i r6 0 1\n"},
      {"text", "a x\nb x\nc x\nd x\ne x\nf x\nh x\ni x\nzz orphan\n\n"},
      {"utt2spk", "a s\nb s\nc s\nd s\ne s\nf s\ng s\ni s\nzz s\na s t\n"},
      {"utt2lang", "q en\n"},
  });
  const std::vector<std::string> want = {
      "a",
      "d/segments:2 d/segments line 2: utterance \"b\": recording \"r9\" is not in d/wav.scp",
      "d/segments:3 d/segments line 3: utterance \"c\": start \"2\" and end \"1\" must be seconds "
      "with 0 <= start < end (or end -1: to the end of the recording)",
      "d/segments:4 d/segments line 4: utterance \"d\": expected \"UTT REC START END\"",
      "d/segments:5 d/segments line 5: utterance \"e\": its recording's wav.scp entry: "
      "\"x.ark:123\" is an ark offset (extended filename), which sluice does not read. HINT: "
      "write the audio out to files (e.g. with wav-copy ark:... ark,scp:...) and list those",
      "d/segments:6 d/segments line 6: utterance \"f\": its recording's wav.scp entry: \"two "
      "words\" is neither a path (no spaces) nor a pipe (ending in \"|\")",
      "d/segments:7 d/segments line 7: utterance \"g\": no line in d/text",
      "d/segments:9 d/segments line 9: utterance \"h\": no line in d/utt2spk",
      "d/segments:10 d/segments line 10: utterance \"i\": its recording's wav.scp entry: \"-\": "
      "stdin and output pipes are not audio sources",
      "d/text:9 d/text line 9: utterance \"zz\" is not in d/segments",
      "d/utt2spk:9 d/utt2spk line 9: utterance \"zz\" is not in d/segments",
      "d/utt2lang:1 d/utt2lang line 1: utterance \"q\" is not in d/segments",
      "d/wav.scp:6 d/wav.scp line 6: recording \"r5\" has no line in d/segments",
      "d/wav.scp:2 d/wav.scp line 2: duplicate id \"r1\" (first at line 1)",
      "d/wav.scp:5 d/wav.scp line 5: \"r4\" has no value (expected \"ID VALUE\")",
      "d/text:10 d/text line 10: empty line",
      "d/segments:8 d/segments line 8: duplicate id \"a\" (first at line 1)",
      "d/utt2spk:10 d/utt2spk line 10: expected two fields \"ID VALUE\", found 3",
  };
  EXPECT_EQ(Summary(items), want);
}

TEST(KaldiDir, MissingTextIsNotFoundWithAHint) {
  testing::TempDir dir;
  testing::WriteFile(dir.Join("wav.scp"), "u1 a.wav\n");
  std::unique_ptr<Importer> in;
  Status st = OpenKaldiDir(dir.path(), {}, &in);
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
  EXPECT_NE(st.message().find("/text: no such file; a Kaldi data directory holds wav.scp and text"),
            std::string::npos)
      << st.ToString();
  testing::WriteFile(dir.Join("text"), "u1 hi\n");
  ASSERT_OK(OpenKaldiDir(dir.path(), {}, &in));
  ImportItem it;
  st = Status::OK();
  ASSERT_TRUE(in->Next(&it, &st));
  EXPECT_EQ(it.key, "u1");
  EXPECT_FALSE(in->Next(&it, &st));
  ASSERT_OK(st);
}

}  // namespace
}  // namespace sluice::importers
