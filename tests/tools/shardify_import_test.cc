// End-to-end: `shardify audio --from lhotse|kaldi|wds` on small generated inputs. The importers'
// parsing has its own suite (tests/importers); this one checks what the shared pipeline adds for
// imported items: pipes run with --allow-pipes under --pipe-timeout, rejects with reasons, the
// same bytes for any thread count, parts that merge into a single run's dataset, and the
// argument checks. Equality with the real producers: import_equality_test.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "assert_ok.h"
#include "dataset_compare.h"
#include "shards/dataset.h"
#include "test_util.h"
#include "../importers/tar_writer.h"

namespace sluice {
namespace {
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

std::string Shardify() {
  const char* p = std::getenv("SHARDIFY");
  return p ? p : "build/tools/shardify";
}

testing::ShellResult Sh(const std::string& cmd) { return testing::RunShell(cmd); }

// A mono PCM16 WAV file of `n` samples of a tone at `rate`.
std::string Wav(int n, int rate, int seed) {
  auto u32 = [](uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); };
  auto u16 = [](uint16_t v) { return std::string(reinterpret_cast<const char*>(&v), 2); };
  std::string data;
  for (int i = 0; i < n; ++i) {
    const int16_t s = static_cast<int16_t>(8000 * std::sin(0.01 * (seed + 1) * i));
    data += u16(static_cast<uint16_t>(s));
  }
  return "RIFF" + u32(36 + data.size()) + "WAVEfmt " + u32(16) + u16(1) + u16(1) + u32(rate) +
         u32(rate * 2) + u16(2) + u16(16) + "data" + u32(data.size()) + data;
}

std::string Tar(const std::vector<std::pair<std::string, std::string>>& members) {
  std::vector<sluice::testing::TarEntry> entries;
  for (const auto& [name, data] : members) entries.push_back({name, data});
  return sluice::testing::WriteTar(entries);
}

// reason of each line of DIR/rejects.jsonl.
std::vector<std::string> Rejects(const std::string& dir) {
  std::vector<std::string> out;
  const std::string text = ReadFile(dir + "/rejects.jsonl");
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    out.push_back(nlohmann::json::parse(text.substr(pos, nl - pos))["reason"]);
    pos = nl + 1;
  }
  return out;
}

// Every record of a dataset in order: key and payload.
std::vector<std::string> Records(const std::string& dir) {
  std::unique_ptr<shards::Dataset> ds;
  EXPECT_TRUE(shards::Dataset::Open(dir, {}, &ds).ok()) << dir;
  std::vector<std::string> out;
  for (size_t s = 0; ds && s < ds->num_shards(); ++s) {
    for (size_t i = 0; i < ds->shard(s).num_records(); ++i) {
      std::string p;
      EXPECT_TRUE(ds->shard(s).ReadRecord(i, &p).ok());
      out.push_back(std::string(ds->shard(s).key(i)) + "=" + p);
    }
  }
  return out;
}

class ShardifyImport : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 12; ++i)
      WriteFile(tmp_.Join("u" + std::to_string(i) + ".wav"), Wav(4000 + 400 * i, 16000, i));
  }
  std::string Path(int i) { return tmp_.Join("u" + std::to_string(i) + ".wav"); }
  TempDir tmp_;
};

TEST_F(ShardifyImport, KaldiPipesRunOnlyWithAllowPipesAndFailuresGiveStderr) {
  const std::string d = tmp_.Join("data");
  ASSERT_EQ(Sh("mkdir -p " + d).code, 0);
  WriteFile(d + "/wav.scp", "a " + Path(0) + "\nb cat " + Path(1) +
                                " |\nc sh -c 'echo sox FAIL: cannot open >&2; exit 2' |\n"
                                "d sleep 20 |\n");
  WriteFile(d + "/text", "a one\nb two\nc three\nd four\n");
  auto r = Sh(Shardify() + " audio -q --from kaldi " + d + " -o " + tmp_.Join("no"));
  ASSERT_EQ(r.code, 0) << r.out;
  auto rejects = Rejects(tmp_.Join("no"));
  ASSERT_EQ(rejects.size(), 3u);
  EXPECT_NE(rejects[0].find("wav.scp line 2: utterance \"b\": pipe entry \"cat "),
            std::string::npos)
      << rejects[0];
  EXPECT_NE(rejects[0].find("not run without --allow-pipes"), std::string::npos) << rejects[0];

  r = Sh(Shardify() + " audio -q --from kaldi " + d + " --allow-pipes --pipe-timeout 0.5 -o " +
         tmp_.Join("yes"));
  ASSERT_EQ(r.code, 0) << r.out;
  rejects = Rejects(tmp_.Join("yes"));
  ASSERT_EQ(rejects.size(), 2u);
  EXPECT_NE(rejects[0].find("wav.scp command of c: command \"sh -c 'echo sox FAIL: cannot open "
                            ">&2; exit 2'\" exited with status 2; stderr: sox FAIL: cannot open"),
            std::string::npos)
      << rejects[0];
  EXPECT_NE(rejects[1].find("command \"sleep 20\" ran past the --pipe-timeout of 0.5"),
            std::string::npos)
      << rejects[1];
  const auto m = nlohmann::json::parse(ReadFile(tmp_.Join("yes/manifest.json")));
  EXPECT_EQ(m["records"], 2);

  // The piped record is the file's record: the same bytes as a path entry for it.
  WriteFile(d + "/wav.scp", "a " + Path(0) + "\nb " + Path(1) + "\n");
  WriteFile(d + "/text", "a one\nb two\n");
  ASSERT_EQ(Sh(Shardify() + " audio -q --from kaldi " + d + " -o " + tmp_.Join("paths")).code, 0);
  WriteFile(d + "/wav.scp", "a " + Path(0) + "\nb cat " + Path(1) + " |\n");
  ASSERT_EQ(
      Sh(Shardify() + " audio -q --from kaldi " + d + " --allow-pipes -o " + tmp_.Join("pipes"))
          .code,
      0);
  auto a = testing::DirContents(tmp_.Join("paths")), b = testing::DirContents(tmp_.Join("pipes"));
  a.erase("manifest.json");
  b.erase("manifest.json");
  EXPECT_EQ(a, b);
}

// A tar of the 12 clips, and one sample with a broken transcript.
std::string WdsInput(ShardifyImport* t, const std::string& dir) {
  std::vector<std::pair<std::string, std::string>> m;
  for (int i = 0; i < 12; ++i) {
    m.emplace_back("k" + std::to_string(i) + ".wav",
                   ReadFile(dir + "/u" + std::to_string(i) + ".wav"));
    m.emplace_back("k" + std::to_string(i) + ".txt", "clip " + std::to_string(i));
  }
  m.emplace_back("bad.wav", ReadFile(dir + "/u0.wav"));
  m.emplace_back("bad.txt", "caf\xc3");
  (void)t;
  const std::string tar = dir + "/a.tar";
  WriteFile(tar, Tar(m));
  return tar;
}

TEST_F(ShardifyImport, WebDatasetSameBytesForAnyThreadCountAndPartsMerge) {
  const std::string tar = WdsInput(this, tmp_.path());
  const std::string base = Shardify() + " audio -q --from wds " + tar + " --shard-size 64KiB";
  ASSERT_EQ(Sh(base + " --threads 1 -o " + tmp_.Join("t1")).code, 0);
  ASSERT_EQ(Sh(base + " --threads 4 -o " + tmp_.Join("t4")).code, 0);
  testing::ExpectSameDatasetBytes(tmp_.Join("t1"), tmp_.Join("t4"));
  const auto rejects = Rejects(tmp_.Join("t1"));
  ASSERT_EQ(rejects.size(), 1u);
  EXPECT_EQ(rejects[0], "\"bad\": invalid UTF-8 at byte 3 of the transcript");
  const auto m = nlohmann::json::parse(ReadFile(tmp_.Join("t1/manifest.json")));
  EXPECT_EQ(m["records"], 12);
  EXPECT_EQ(m["source"]["from"], "wds");

  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(Sh(base + " -o " + tmp_.Join("p" + std::to_string(i)) + " --part " +
                 std::to_string(i) + "/2")
                  .code,
              0);
  auto r = Sh(Shardify() + " merge " + tmp_.Join("p0") + " " + tmp_.Join("p1") + " -o " +
              tmp_.Join("merged"));
  ASSERT_EQ(r.code, 0) << r.out;
  // A part ends its last shard early, so the shards differ; the records, in order, may not.
  const auto single = Records(tmp_.Join("t1"));
  EXPECT_EQ(single.size(), 12u);
  EXPECT_EQ(single, Records(tmp_.Join("merged")));
}

TEST_F(ShardifyImport, KilledWebDatasetRunResumesToTheSameBytes) {
  const std::string tar = WdsInput(this, tmp_.path());
  const std::string base =
      Shardify() + " audio -q --from wds " + tar + " --shard-size 24KiB --block-size 8KiB";
  ASSERT_EQ(Sh(base + " -o " + tmp_.Join("full")).code, 0);
  // Killed before the first write of the third shard: two are durable.
  auto crash =
      Sh("SLUICE_FAULT_INJECT=2:kill:shard-00002.sluice.tmp " + base + " -o " + tmp_.Join("ds"));
  ASSERT_NE(crash.out.find("kills the process"), std::string::npos) << crash.out;
  ASSERT_TRUE(std::filesystem::exists(tmp_.Join("ds/shard-00001.sluice")));
  auto resumed = Sh(base + " --resume --json -o " + tmp_.Join("ds"));
  ASSERT_EQ(resumed.code, 0) << resumed.out;
  EXPECT_TRUE(nlohmann::json::parse(resumed.out)["resumed"].get<bool>()) << resumed.out;
  EXPECT_EQ(testing::DirContents(tmp_.Join("full")), testing::DirContents(tmp_.Join("ds")));
  // A tar changed in place to the same size after the crash: the items' digest differs, so
  // --resume refuses it rather than finishing a dataset of two inputs.
  crash =
      Sh("SLUICE_FAULT_INJECT=2:kill:shard-00002.sluice.tmp " + base + " -o " + tmp_.Join("ds2"));
  ASSERT_NE(crash.out.find("kills the process"), std::string::npos) << crash.out;
  std::string changed = ReadFile(tar);
  changed[changed.find("clip 5")] = 'C';
  WriteFile(tar, changed);
  auto refused = Sh(base + " --resume -o " + tmp_.Join("ds2"));
  EXPECT_NE(refused.code, 0) << refused.out;
  EXPECT_NE(refused.out.find("other inputs or options"), std::string::npos) << refused.out;
}

TEST_F(ShardifyImport, LhotseCutSpansAndSourcesRelativeToTheCurrentDirectory) {
  std::string cuts;
  for (int i = 0; i < 3; ++i)
    cuts +=
        R"({"id": "c)" + std::to_string(i) +
        R"(", "start": 0.0625, "duration": 0.125, "channel": 0, "supervisions": [{"id": "s", "recording_id": "r", "start": 0, "duration": 0.125, "channel": 0, "text": "hi"}], "recording": {"id": "r", "sources": [{"type": "file", "channels": [0], "source": "u)" +
        std::to_string(i) +
        R"(.wav"}], "sampling_rate": 16000, "num_samples": 4000, "duration": 0.25, "channel_ids": [0]}, "type": "MonoCut"})" +
        "\n";
  WriteFile(tmp_.Join("cuts.jsonl"), cuts);
  // Relative sources resolve against the current directory, as lhotse resolves them.
  auto r = Sh("cd " + tmp_.path() + " && " + std::filesystem::absolute(Shardify()).string() +
              " audio -q --from lhotse cuts.jsonl -o out --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto m = nlohmann::json::parse(ReadFile(tmp_.Join("out/manifest.json")));
  EXPECT_EQ(m["records"], 3);
  // 0.125 s at 16 kHz: the cut's span, not the whole file.
  EXPECT_EQ(m["shards"][0]["duration"], 3 * 2000) << m.dump();
}

// Every record's metadata columns, "key speaker|language|chars|kept...", null as "-".
std::vector<std::string> ColumnRows(const std::string& dir) {
  std::unique_ptr<shards::Dataset> ds;
  EXPECT_TRUE(shards::Dataset::Open(dir, {}, &ds).ok()) << dir;
  std::vector<std::string> out;
  for (size_t s = 0; ds && s < ds->num_shards(); ++s) {
    const shards::ColumnTable& t = ds->shard(s).columns();
    for (size_t i = 0; i < ds->shard(s).num_records(); ++i) {
      std::string row(ds->shard(s).key(i));
      for (const shards::Column& c : t.columns) {
        row += c.spec.name == "speaker" ? " " : "|";
        if (c.is_null(i)) row += "-";
        else if (c.spec.type == shards::ColumnType::kString) row += c.string_at(i);
        else if (c.spec.type == shards::ColumnType::kInt) row += std::to_string(c.int_at(i));
        else row += std::to_string(c.float_at(i));
      }
      out.push_back(row);
    }
  }
  return out;
}

TEST_F(ShardifyImport, KaldiAndNemoMetadataBecomeIndexColumns) {
  const std::string d = tmp_.Join("data");
  ASSERT_EQ(Sh("mkdir -p " + d).code, 0);
  WriteFile(d + "/wav.scp", "a " + Path(0) + "\nb " + Path(1) + "\nc " + Path(2) + "\n");
  WriteFile(d + "/text", "a caf\xc3\xa9\nb two words\nc three\n");
  WriteFile(d + "/utt2spk", "a spk1\nb spk2\nc spk1\n");
  WriteFile(d + "/utt2lang", "a fr\nb en\nc en\n");
  WriteFile(d + "/utt2age", "a 31\nc 40\n");  // b has none: null
  WriteFile(d + "/utt2snr", "b 3.5\n");
  // A kept field the directory has no file for is refused, not a column of nulls.
  auto r = Sh(Shardify() + " audio -q --from kaldi " + d + " --keep-field gendr -o " +
              tmp_.Join("typo"));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("utt2gendr: no such file; --keep-field gendr reads it"), std::string::npos)
      << r.out;
  r = Sh(Shardify() + " audio -q --from kaldi " + d +
         " --keep-field age:int --keep-field snr:float -o " + tmp_.Join("k"));
  ASSERT_EQ(r.code, 0) << r.out;
  // chars counts code points: "café" is 4 (5 bytes).
  EXPECT_EQ(
      ColumnRows(tmp_.Join("k")),
      (std::vector<std::string>{"a spk1|fr|4|31|-", "b spk2|en|9|-|3.500000", "c spk1|en|5|40|-"}));
  const auto m = nlohmann::json::parse(ReadFile(tmp_.Join("k/manifest.json")));
  EXPECT_EQ(m["columns"].dump(),
            R"([{"name":"speaker","type":"string"},{"name":"language","type":"string"},)"
            R"({"name":"chars","type":"int"},{"name":"age","type":"int"},)"
            R"({"name":"snr","type":"float"}])");

  // A value of another type rejects its item, naming the field; NeMo's integer speaker is text.
  WriteFile(tmp_.Join("m.jsonl"), "{\"audio_filepath\": \"" + Path(0) +
                                      "\", \"text\": \"x\", \"id\": \"n0\", "
                                      "\"speaker\": 92, \"lang\": \"de\", \"age\": 7}\n"
                                      "{\"audio_filepath\": \"" +
                                      Path(1) +
                                      "\", \"text\": \"y\", \"id\": \"n1\", "
                                      "\"age\": \"old\"}\n"
                                      "{\"audio_filepath\": \"" +
                                      Path(2) +
                                      "\", \"text\": \"z\", \"id\": \"n2\", "
                                      "\"speaker\": [1]}\n");
  r = Sh(Shardify() + " audio -q -m " + tmp_.Join("m.jsonl") + " --keep-field age:int -o " +
         tmp_.Join("n"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(ColumnRows(tmp_.Join("n")), (std::vector<std::string>{"n0 92|de|1|7"}));
  EXPECT_EQ(
      Rejects(tmp_.Join("n")),
      (std::vector<std::string>{"\"n1\": --keep-field age:int: the value \"old\" is not an integer",
                                "\"speaker\" must be a string or an integer"}));

  // A name the filter computes, or a type it does not know, is refused before any work.
  for (const auto& [flag, want] : std::vector<std::pair<std::string, std::string>>{
           {"duration", "'duration' is a column every audio dataset has or a filter word"},
           {"age:date", "type 'date' is not int, float or string"},
           {"9lives", "is not a filter identifier"}}) {
    r = Sh(Shardify() + " audio -q -m " + tmp_.Join("m.jsonl") + " --keep-field " + flag + " -o " +
           tmp_.Join("bad"));
    EXPECT_NE(r.code, 0) << flag;
    EXPECT_NE(r.out.find(want), std::string::npos) << flag << ": " << r.out;
  }
}

TEST_F(ShardifyImport, PartsMergeAndRepackKeepTheColumns) {
  std::string lines;
  for (int i = 0; i < 12; ++i)
    lines += "{\"audio_filepath\": \"" + Path(i) + "\", \"text\": \"clip " + std::to_string(i) +
             "\", \"id\": \"u" + std::to_string(i) + "\", \"speaker\": \"s" +
             std::to_string(i % 5) + "\"" +
             (i % 3 ? ", \"snr\": " + std::to_string(i) + ".5" : "") + "}\n";
  WriteFile(tmp_.Join("m.jsonl"), lines);
  const std::string base = Shardify() + " audio -q -m " + tmp_.Join("m.jsonl") +
                           " --keep-field snr:float --shard-size 40KiB";
  ASSERT_EQ(Sh(base + " -o " + tmp_.Join("one")).code, 0);
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(Sh(base + " -o " + tmp_.Join("p" + std::to_string(i)) + " --part " +
                 std::to_string(i) + "/2")
                  .code,
              0);
  const std::string parts = tmp_.Join("p0") + " " + tmp_.Join("p1");
  auto r = Sh(Shardify() + " merge " + parts + " -o " + tmp_.Join("merged"));
  ASSERT_EQ(r.code, 0) << r.out;
  r = Sh(Shardify() + " merge --repack " + parts + " -o " + tmp_.Join("repacked"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto want = ColumnRows(tmp_.Join("one"));
  ASSERT_EQ(want.size(), 12u);
  EXPECT_EQ(want[1], "u1 s1|-|6|1.500000");
  EXPECT_EQ(want[3], "u3 s3|-|6|-");
  EXPECT_EQ(ColumnRows(tmp_.Join("merged")), want);
  EXPECT_EQ(ColumnRows(tmp_.Join("repacked")), want);

  // A part written with other columns does not merge.
  ASSERT_EQ(Sh(Shardify() + " audio -q -m " + tmp_.Join("m.jsonl") + " --shard-size 40KiB -o " +
               tmp_.Join("q1") + " --part 1/2")
                .code,
            0);
  r = Sh(Shardify() + " merge " + tmp_.Join("p0") + " " + tmp_.Join("q1") + " -o " +
         tmp_.Join("mixed"));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("columns"), std::string::npos) << r.out;
}

TEST_F(ShardifyImport, ArgumentErrorsSayWhatToPass) {
  struct Case {
    std::string args, says;
  };
  const Case cases[] = {
      {"--from kaldi -m x.jsonl",
       "-m/--manifest names a NeMo manifest; with --from kaldi pass "
       "the input as an argument"},
      {"--from wds", "--from wds needs an INPUT argument (the tar files)"},
      {"--from kaldi " + Path(0), "not a directory (--from kaldi reads a data directory"},
      {"--from lhotse " + tmp_.Join("none.jsonl"), "none.jsonl: no such file"},
      {"-m " + Path(0) + " --allow-pipes", "--allow-pipes runs the commands of Kaldi and Lhotse"},
      {"", "no input: pass the manifest (-m/--manifest FILE), or --from FORMAT INPUT..."},
      {"--from csv x", "--from: csv not in {nemo,lhotse,kaldi,wds,hf}"},
      {"--from hf", "--from hf needs an INPUT argument (the parquet files)"},
      {"-m " + Path(0) + " --hf-text sentence",
       "--python and --hf-* read HF parquet files: they need --from hf"},
  };
  for (const Case& c : cases) {
    auto r = Sh(Shardify() + " audio " + c.args + " -o " + tmp_.Join("x"));
    EXPECT_NE(r.code, 0) << c.args;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << ": " << r.out;
  }
  auto r = Sh(Shardify() + " audio --help");
  for (const char* f : {"nemo", "lhotse", "kaldi", "wds", "--allow-pipes", "--pipe-timeout"})
    EXPECT_NE(r.out.find(f), std::string::npos) << f;
}

}  // namespace
}  // namespace sluice
