// The Lhotse cut parser: what a cut becomes, and every reason a cut is rejected
// (importers/lhotse.h). Lines are shaped as lhotse 1.33's CutSet.to_file writes them
// (tests/tools/import_equality_test.py checks files written by lhotse itself).
#include "importers/lhotse.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "assert_ok.h"
#include "importers/text_lines.h"
#include "test_util.h"

namespace sluice::importers {
namespace {

constexpr const char* kCut =
    R"({"id": "c1", "start": 0.5, "duration": 1.25, "channel": 0, "supervisions": [)"
    R"({"id": "s2", "recording_id": "r1", "start": 0.7, "duration": 0.5, "channel": 0, "text": "world", "speaker": "spk1", "language": "en"},)"
    R"({"id": "s1", "recording_id": "r1", "start": 0.0, "duration": 0.6, "channel": 0, "text": "hello"}],)"
    R"( "recording": {"id": "r1", "sources": [{"type": "file", "channels": [0], "source": "a/r1.wav"}],)"
    R"( "sampling_rate": 16000, "num_samples": 64000, "duration": 4.0, "channel_ids": [0]},)"
    R"( "custom": {"origin": "x"}, "type": "MonoCut"})";

ImportItem Parse(const std::string& line, bool allow_pipes = false) {
  ImportOptions opt;
  opt.allow_pipes = allow_pipes;
  opt.base_dir = "/base";
  ImportItem item;
  ParseLhotseCut(line, opt, &item);
  return item;
}

// kCut with `from` replaced by `to` (once).
std::string With(const std::string& from, const std::string& to) {
  std::string s = kCut;
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(LhotseCut, BecomesOneClipWithItsSupervisionsInOrderOfStart) {
  const ImportItem it = Parse(kCut);
  ASSERT_EQ(it.reason, "");
  EXPECT_EQ(it.key, "c1");
  EXPECT_EQ(it.audio_path, "a/r1.wav");
  EXPECT_EQ(it.base_dir, "/base");
  EXPECT_EQ(it.offset_seconds, 0.5);
  EXPECT_EQ(it.duration_seconds, 1.25);
  EXPECT_EQ(it.text, "hello world");
  EXPECT_EQ(it.speaker, "spk1");
  EXPECT_EQ(it.language, "en");
}

TEST(LhotseCut, CutOfSomeChannelsTakesThoseChannels) {
  // One channel of a 2-channel file: that channel alone. (Before, such a cut was rejected.)
  const std::string two = With(R"("channels": [0])", R"("channels": [0, 1])");
  ImportItem it = Parse(two);  // "channel": 0
  ASSERT_EQ(it.reason, "");
  EXPECT_EQ(it.channels, std::vector<int>{0});
  std::string s = two;
  s.replace(s.find(R"("channel": 0, "supervisions")"), 12, R"("channel": 1)");
  it = Parse(s);
  ASSERT_EQ(it.reason, "");
  EXPECT_EQ(it.channels, std::vector<int>{1});
  // A mono file: no selection (its one channel).
  EXPECT_TRUE(Parse(kCut).channels.empty());
}

TEST(LhotseCut, KeptFieldsComeFromCustomThenTheSupervisions) {
  std::string s =
      With(R"("language": "en"})",
           R"("language": "en", "gender": "f", "custom": {"snr": 3, "origin": "sup"}})");
  const ImportItem it = Parse(s);
  ASSERT_EQ(it.reason, "");
  // The cut's custom wins over a supervision's; a supervision's attribute (gender) is there too.
  EXPECT_EQ(nlohmann::json::parse(it.fields),
            nlohmann::json::parse(R"({"origin": "x", "snr": 3, "gender": "f"})"));
  EXPECT_EQ(Parse(With(R"("speaker": "spk1")", R"("speaker": 7)")).reason,
            "cut \"c1\" supervision 0: \"speaker\" must be a string");
}

TEST(LhotseCut, MultiCutOverEveryChannelIsMixedDown) {
  std::string s = With(R"("channel": 0, "supervisions")", R"("channel": [0, 1], "supervisions")");
  s = s.replace(s.find(R"("channels": [0])"), 15, R"("channels": [0, 1])");
  s = s.replace(s.find("MonoCut"), 7, "MultiCut");
  EXPECT_EQ(Parse(s).reason, "");
}

TEST(LhotseCut, CommandSourceRunsOnlyWhenAllowed) {
  const std::string s = With(R"("type": "file", "channels": [0], "source": "a/r1.wav")",
                             R"("type": "command", "channels": [0], "source": "cat a.wav")");
  {
    const ImportItem no = Parse(s);
    EXPECT_NE(no.reason.find("cut \"c1\": recording is a command source (\"cat a.wav\"), not run "
                             "without --allow-pipes"),
              std::string::npos)
        << no.reason;
    const ImportItem yes = Parse(s, true);
    EXPECT_EQ(yes.reason, "");
    EXPECT_EQ(yes.pipe_command, "cat a.wav");
    EXPECT_EQ(yes.audio_path, "");
  }
}

struct RejectCase {
  const char* name;
  std::string line;
  const char* reason;  // a part of the reason
};

TEST(LhotseCut, EveryRejectionNamesItsReason) {
  const RejectCase cases[] = {
      {"empty", "  ", "empty line"},
      {"json", "{\"id\": ", "invalid JSON"},
      {"array", "[1]", "not a JSON object"},
      {"recording", R"({"id": "r1", "sources": []})", "a Lhotse Recording, not a cut. HINT"},
      {"no id", With(R"("id": "c1", )", ""), "cut has no \"id\""},
      {"empty id", With(R"("id": "c1")", R"("id": "")"), "\"id\" must be a non-empty string"},
      {"type", With("MonoCut", "MixedCut"), "cut \"c1\" is a MixedCut; sluice imports MonoCut"},
      {"start", With(R"("start": 0.5)", R"("start": -1)"),
       "cut \"c1\": \"start\" must be a number"},
      {"duration", With(R"("duration": 1.25)", R"("duration": 0)"), "\"duration\" must be above 0"},
      {"huge", With(R"("duration": 1.25)", R"("duration": 1e300)"),
       "\"duration\" must be a number"},
      {"channel", With(R"("channel": 0,)", R"("channel": "a",)"), "\"channel\" must be an integer"},
      {"url", With(R"("type": "file")", R"("type": "url")"),
       "recording has a \"url\" source (\"a/r1.wav\"), which sluice cannot read"},
      {"memory", With(R"("type": "file")", R"("type": "memory")"), "\"memory\" source"},
      {"shar", With(R"("type": "file")", R"("type": "shar")"), "\"shar\" source"},
      {"two sources",
       With(
           R"([{"type": "file", "channels": [0], "source": "a/r1.wav"}])",
           R"([{"type": "file", "channels": [0], "source": "a"}, {"type": "file", "channels": [1], "source": "b"}])"),
       "has 2 sources (one file per channel)"},
      {"no sources", With(R"([{"type": "file", "channels": [0], "source": "a/r1.wav"}])", "[]"),
       "\"sources\" must be a non-empty list"},
      {"transforms",
       With(R"("channel_ids": [0]})", R"("channel_ids": [0], "transforms": [{"name": "Speed"}]})"),
       "recording has transforms"},
      {"channel past the file",
       std::string(With(R"("channels": [0])", R"("channels": [0, 1])"))
           .replace(std::string(kCut).find(R"("channel": 0, "supervisions")"), 12,
                    R"("channel": 2)"),
       "cut \"c1\" selects channel 2 of a 2-channel recording"},
      {"no recording", With(R"("recording")", R"("recordinx")"), "cut \"c1\" has no \"recording\""},
      {"no text", With(R"("text": "hello")", R"("txt": "hello")"),
       "cut \"c1\" supervision 1 has no \"text\""},
      {"text type", With(R"("text": "hello")", R"("text": 3)"), "\"text\" must be a string"},
      {"no supervisions",
       std::string(kCut).replace(std::string(kCut).find("\"supervisions\": ["), 17,
                                 "\"supervisions\": [], \"x\": ["),
       "cut \"c1\" has no supervisions"},
  };
  for (const RejectCase& c : cases) {
    const ImportItem it = Parse(c.line);
    EXPECT_NE(it.reason.find(c.reason), std::string::npos)
        << c.name << ": " << it.reason << "\n  line: " << c.line;
    EXPECT_EQ(it.audio_path, "") << c.name;
  }
}

std::string Gzip(const std::string& s) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, s.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(s.data()));
  z.avail_in = s.size();
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = out.size();
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

TEST(LhotseCuts, ReadsGzipAndPlainFilesInOrderWithLineNumbers) {
  testing::TempDir dir;
  testing::WriteFile(dir.Join("a.jsonl.gz"), Gzip(std::string(kCut) + "\n") + Gzip("oops\n"));
  testing::WriteFile(dir.Join("b.jsonl"), std::string(kCut) + "\r\n");
  std::unique_ptr<Importer> in;
  ASSERT_OK(OpenLhotseCuts({dir.Join("a.jsonl.gz"), dir.Join("b.jsonl")}, {}, &in));
  ImportItem it;
  Status st;
  std::vector<std::string> got;
  while (in->Next(&it, &st))
    got.push_back(it.source.substr(dir.path().size() + 1) + ":" + std::to_string(it.line) + ":" +
                  (it.reason.empty() ? it.key : "rejected"));
  ASSERT_OK(st);
  EXPECT_EQ(got,
            (std::vector<std::string>{"a.jsonl.gz:1:c1", "a.jsonl.gz:2:rejected", "b.jsonl:1:c1"}));
}

TEST(LhotseCuts, CutOffGzipIsAnErrorNamingTheFile) {
  testing::TempDir dir;
  const std::string gz = Gzip(std::string(kCut) + "\n" + kCut + "\n");
  testing::WriteFile(dir.Join("cut.jsonl.gz"), gz.substr(0, gz.size() - 12));
  std::unique_ptr<Importer> in;
  ASSERT_OK(OpenLhotseCuts({dir.Join("cut.jsonl.gz")}, {}, &in));
  ImportItem it;
  Status st;
  while (in->Next(&it, &st)) {
  }
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.message().find("cut.jsonl.gz: gzip data cut off"), std::string::npos)
      << st.ToString();
  std::string out;
  EXPECT_TRUE(GunzipString("x", gz.substr(0, gz.size() - 12), &out).IsCorruption());
  ASSERT_OK(GunzipString("x", gz, &out));
  EXPECT_EQ(out, std::string(kCut) + "\n" + kCut + "\n");
}

TEST(LhotseCuts, MissingManifestIsNotFound) {
  std::unique_ptr<Importer> in;
  ASSERT_OK(OpenLhotseCuts({"/nonexistent/cuts.jsonl"}, {}, &in));
  ImportItem it;
  Status st;
  EXPECT_FALSE(in->Next(&it, &st));
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
}

}  // namespace
}  // namespace sluice::importers
