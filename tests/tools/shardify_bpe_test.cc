// shardify --tokenizer hf:PATH and tiktoken:PATH[:ENCODING]: the file travels with the dataset
// (its checksum in manifest.json), the ids are the file's own with its end-of-text token after
// each document, and the loader's online tokenization gives the same ids as shardify's.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "assert_ok.h"
#include "features/byte_level.h"
#include "features/tokenizer.h"
#include "features/utf8.h"
#include "loader/dataset_tokenizer.h"
#include "loader/loader.h"
#include "shards/dataset.h"
#include "shards/record.h"
#include "epoch_digests.h"
#include "test_util.h"

namespace sluice {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

std::string Shardify() {
  const char* p = std::getenv("SHARDIFY");
  return p ? p : "build/tools/shardify";
}

std::string Alphabet(const std::string& raw) {
  std::string s;
  for (unsigned char c : raw) features::AppendUtf8(features::ByteLevelChar(c), &s);
  return s;
}

// A GPT-2-shaped tokenizer.json: 256 byte tokens, a few merges, <|endoftext|> = 262; with
// `post_processor`, also <s> = 263 and </s> = 264 for it to use.
std::string TokenizerJson(const json& post_processor = nullptr) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[Alphabet(std::string(1, static_cast<char>(b)))] = b;
  json merges = json::array();
  for (auto [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {" ", "w"}, {"o", "r"}}) {
    vocab[Alphabet(a + b)] = static_cast<int>(vocab.size());
    merges.push_back(Alphabet(a) + " " + Alphabet(b));
  }
  json added = {{{"id", 262}, {"content", "<|endoftext|>"}, {"special", true}}};
  if (!post_processor.is_null()) {
    added.push_back({{"id", 263}, {"content", "<s>"}, {"special", true}});
    added.push_back({{"id", 264}, {"content", "</s>"}, {"special", true}});
  }
  return json{{"added_tokens", added},
              {"post_processor", post_processor},
              {"normalizer", nullptr},
              {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
              {"decoder", {{"type", "ByteLevel"}}},
              {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}}
      .dump();
}

std::string RankFile() {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string f;
  auto b64 = [&](const std::string& raw) {
    std::string out;
    uint32_t acc = 0;
    int bits = 0;
    for (unsigned char c : raw) {
      acc = (acc << 8) | c;
      for (bits += 8; bits >= 6; bits -= 6) out += k[(acc >> (bits - 6)) & 63];
    }
    if (bits > 0) out += k[(acc << (6 - bits)) & 63];
    while (out.size() % 4) out += '=';
    return out;
  };
  int rank = 0;
  for (int b = 0; b < 256; ++b)
    f += b64(std::string(1, char(b))) + " " + std::to_string(rank++) + "\n";
  for (const char* t : {"he", "ll", "hell", "hello", " w", "or", " wor"})
    f += b64(t) + " " + std::to_string(rank++) + "\n";
  return f;
}

std::vector<int32_t> RecordTokens(const shards::Dataset& ds, size_t i, std::string* text) {
  std::string p;
  EXPECT_OK(ds.shard(0).ReadRecord(i, &p));
  shards::RecordView v;
  EXPECT_OK(shards::ParseRecord(p.data(), p.size(), "t", &v));
  *text = std::string(v.Find(shards::FieldType::kText)->bytes());
  const auto* f = v.Find(shards::FieldType::kTokens);
  if (!f) return {};
  std::vector<int32_t> ids(f->size / 4);
  std::memcpy(ids.data(), f->data, f->size);
  return ids;
}

std::vector<uint64_t> EpochDigests(const std::string& dir) {
  loader::LoaderOptions o;  // no tokenizer given: the dataset's own
  o.threads = 2;
  o.seed = 3;
  o.packing.seq_len = 15;
  o.packing.batch_size = 2;
  o.packing.chunk_tokens = 500;
  return testing::EpochDigests(dir, o, 1);
}

class ShardifyBpeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string text;
    for (int i = 0; i < 60; ++i) text += "Hello world " + std::to_string(i) + ", hello ünïcode ✓\n";
    testing::WriteFile(tmp_.Join("in.txt"), text);
  }
  testing::ShellResult Run(const std::string& tokenizer, const std::string& out,
                           const std::string& extra = "") {
    return testing::RunShell(Shardify() + " text -q --tokenizer " + tokenizer + " -i " +
                             tmp_.Join("in.txt") + " -o " + tmp_.Join(out) + extra);
  }
  // Every record's ids: the file's ids of its text, then the end-of-text id.
  void ExpectFileIds(const std::string& dir, const std::string& file, int32_t eot) {
    std::unique_ptr<shards::Dataset> ds;
    ASSERT_OK(shards::Dataset::Open(tmp_.Join(dir), {}, &ds));
    const json& d = *ds->manifest().tokenizer;
    EXPECT_EQ(d["file"], file);
    EXPECT_TRUE(d["blank_id"].is_null()) << d.dump();
    EXPECT_EQ(d["end_of_document_id"], eot);
    EXPECT_EQ(testing::ReadFile(tmp_.Join(dir + "/" + file)), testing::ReadFile(d["given"]));
    std::unique_ptr<features::Tokenizer> tok;
    ASSERT_OK(loader::LoadDatasetTokenizer(d, tmp_.Join(dir), &tok));
    EXPECT_EQ(tok->end_of_document_id(), eot);
    ASSERT_GT(ds->shard(0).num_records(), 0u);
    for (size_t i = 0; i < ds->shard(0).num_records(); ++i) {
      std::string text;
      std::vector<int32_t> ids = RecordTokens(*ds, i, &text), want;
      ASSERT_OK(tok->Encode(text, &want));
      want.push_back(eot);
      EXPECT_EQ(ids, want) << text;
    }
    // A replaced file is caught by its checksum.
    testing::WriteFile(tmp_.Join(dir + "/" + file), "replaced");
    Status s = loader::LoadDatasetTokenizer(d, tmp_.Join(dir), &tok);
    EXPECT_TRUE(s.IsCorruption()) << s.ToString();
    EXPECT_NE(s.message().find(file), std::string::npos) << s.ToString();
  }
  testing::TempDir tmp_;
};

TEST_F(ShardifyBpeTest, HfTokenizerJsonTravelsWithTheDatasetAndGivesTheFilesIds) {
  testing::WriteFile(tmp_.Join("tokenizer.json"), TokenizerJson());
  auto r = Run("hf:" + tmp_.Join("tokenizer.json"), "ds");
  ASSERT_EQ(r.code, 0) << r.out;
  ExpectFileIds("ds", "tokenizer.json", 262);
}

TEST_F(ShardifyBpeTest, TiktokenRankFileTravelsWithTheDatasetAndGivesTheFilesIds) {
  testing::WriteFile(tmp_.Join("ranks.tiktoken"), RankFile());
  auto r = Run("tiktoken:" + tmp_.Join("ranks.tiktoken") + ":cl100k_base", "ds");
  ASSERT_EQ(r.code, 0) << r.out;
  ExpectFileIds("ds", "tokenizer.tiktoken", 100257);
  std::unique_ptr<shards::Dataset> ds;
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("ds"), {}, &ds));
  EXPECT_EQ((*ds->manifest().tokenizer)["encoding"], "cl100k_base");
  // Without an encoding the file's name must name one.
  r = Run("tiktoken:" + tmp_.Join("ranks.tiktoken"), "x");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find(":cl100k_base"), std::string::npos) << r.out;
  fs::copy_file(tmp_.Join("ranks.tiktoken"), tmp_.Join("o200k_base.tiktoken"));
  r = Run("tiktoken:" + tmp_.Join("o200k_base.tiktoken"), "o");
  ASSERT_EQ(r.code, 0) << r.out;
  ASSERT_OK(shards::Dataset::Open(tmp_.Join("o"), {}, &ds));
  EXPECT_EQ((*ds->manifest().tokenizer)["encoding"], "o200k_base");
}

// A post-processor that closes each text with </s>: that token ends documents, the records
// hold <s> text </s> with one </s> (HF's encode(add_special_tokens=True), the default), or
// text </s> with --add-special-tokens=false; the manifest says which, and the loader reads the
// dataset's tokenizer back with the same switch.
TEST_F(ShardifyBpeTest, PostProcessorTokensAreAddedOnceAndRecorded) {
  const json tmpl = {{"type", "TemplateProcessing"},
                     {"single",
                      {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                       {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                       {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}}},
                     {"special_tokens",
                      {{"<s>", {{"id", "<s>"}, {"ids", {263}}, {"tokens", {"<s>"}}}},
                       {"</s>", {{"id", "</s>"}, {"ids", {264}}, {"tokens", {"</s>"}}}}}}};
  testing::WriteFile(tmp_.Join("tokenizer.json"), TokenizerJson(tmpl));
  for (const bool special : {true, false}) {
    const std::string out = special ? "with" : "without";
    auto r =
        Run("hf:" + tmp_.Join("tokenizer.json"), out, special ? "" : " --add-special-tokens=false");
    ASSERT_EQ(r.code, 0) << r.out;
    std::unique_ptr<shards::Dataset> ds;
    ASSERT_OK(shards::Dataset::Open(tmp_.Join(out), {}, &ds));
    const json& d = *ds->manifest().tokenizer;
    EXPECT_EQ(d["add_special_tokens"], special) << d.dump();
    EXPECT_EQ(d["end_of_document_id"], 264);
    std::string text;
    const std::vector<int32_t> ids = RecordTokens(*ds, 0, &text);
    ASSERT_GE(ids.size(), 3u);
    EXPECT_EQ(ids.front() == 263, special) << text;
    EXPECT_EQ(ids.back(), 264);
    EXPECT_NE(ids[ids.size() - 2], 264) << "the end of document twice: " << text;
    std::unique_ptr<features::Tokenizer> tok;
    ASSERT_OK(loader::LoadDatasetTokenizer(d, tmp_.Join(out), &tok));
    std::vector<int32_t> again;
    ASSERT_OK(tok->Encode(text, &again));
    if (!tok->encode_ends_document()) again.push_back(tok->end_of_document_id());
    EXPECT_EQ(again, ids);
  }
}

// Online tokenization (--store text: the loader encodes each record) appends the same
// end-of-document id as shardify, so the packed batches are the same.
TEST_F(ShardifyBpeTest, LoaderOnlineTokenizationGivesTheStoredIds) {
  testing::WriteFile(tmp_.Join("tokenizer.json"), TokenizerJson());
  const std::string spec = "hf:" + tmp_.Join("tokenizer.json");
  ASSERT_EQ(Run(spec, "ids").code, 0);
  auto r = Run(spec, "text", " --store text");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::vector<uint64_t> offline = EpochDigests(tmp_.Join("ids"));
  EXPECT_GT(offline.size(), 5u);
  EXPECT_EQ(EpochDigests(tmp_.Join("text")), offline);
}

TEST_F(ShardifyBpeTest, PartsMergeWithTheirTokenizerJson) {
  testing::WriteFile(tmp_.Join("tokenizer.json"), TokenizerJson());
  for (int i = 0; i < 2; ++i) {
    auto r = Run("hf:" + tmp_.Join("tokenizer.json"), "p/" + std::to_string(i),
                 " --part " + std::to_string(i) + "/2");
    ASSERT_EQ(r.code, 0) << r.out;
  }
  auto m = testing::RunShell(Shardify() + " merge " + tmp_.Join("p/0") + " " + tmp_.Join("p/1") +
                             " -o " + tmp_.Join("merged"));
  ASSERT_EQ(m.code, 0) << m.out;
  EXPECT_EQ(testing::ReadFile(tmp_.Join("merged/tokenizer.json")), TokenizerJson());
  shards::Manifest man;
  ASSERT_OK(shards::LoadManifest(tmp_.Join("merged"), &man));
  std::unique_ptr<features::Tokenizer> tok;
  EXPECT_OK(loader::LoadDatasetTokenizer(*man.tokenizer, tmp_.Join("merged"), &tok));
}

TEST_F(ShardifyBpeTest, AnUnsupportedTokenizerJsonIsRefusedNamingThePath) {
  json j = json::parse(TokenizerJson());
  j["normalizer"] = {{"type", "Lowercase"}};
  testing::WriteFile(tmp_.Join("tokenizer.json"), j.dump());
  auto r = Run("hf:" + tmp_.Join("tokenizer.json"), "ds");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find(tmp_.Join("tokenizer.json") + ": normalizer.type \"Lowercase\" is not "
                                                     "supported"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace sluice
