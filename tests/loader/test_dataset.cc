#include "test_dataset.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <gtest/gtest.h>

#include "assert_ok.h"
#include "base/random.h"
#include "features/fbank.h"
#include "features/flac.h"
#include "features/half.h"
#include "features/pcm.h"
#include "features/tokenizer.h"
#include "loader/dataset_tokenizer.h"
#include "shards/dataset_writer.h"
#include "shards/fields.h"
#include "shards/record.h"
#include "shards/shard_reader.h"

namespace sluice::loader::testing {

std::string RecordKey(int i) { return "utt" + std::to_string(i); }
std::string RecordText(int i) { return "transcript number " + std::to_string(i); }

std::vector<int16_t> RecordSamples(const AudioDatasetSpec& spec, int i) {
  Rng rng(StreamKey(spec.seed, 0, i));
  const uint64_t n = spec.min_samples + rng.UniformInt(0, spec.max_samples - spec.min_samples);
  std::vector<int16_t> s(n);
  const double f = 100 + 50 * (i % 7);
  for (uint64_t k = 0; k < n; ++k) {
    const double v = 3000 * std::sin(2 * M_PI * f * k / spec.sample_rate) +
                     500 * (rng.Uniform() - 0.5);
    s[k] = static_cast<int16_t>(v);
  }
  return s;
}

std::vector<uint16_t> RecordFeaturesF16(const AudioDatasetSpec& spec, int i, uint32_t* frames) {
  const std::vector<int16_t> pcm = RecordSamples(spec, i);
  std::vector<float> x(pcm.size()), feats;
  features::Pcm16ToFloat(pcm.data(), pcm.size(), x.data(), 1.0f);
  features::FbankOptions fo;
  fo.sample_frequency = static_cast<float>(spec.sample_rate);
  fo.frame_shift_ms = spec.precomputed_shift_ms;
  features::Workspace ws;
  *frames =
      static_cast<uint32_t>(features::FbankComputer(fo).Compute(x.data(), x.size(), &ws, &feats));
  std::vector<uint16_t> half(feats.size());
  features::FloatToHalf(feats.data(), feats.size(), half.data());
  return half;
}

shards::Manifest WriteAudioDataset(const std::string& dir, const AudioDatasetSpec& spec) {
  shards::DatasetWriterOptions opt;
  opt.shard_size = spec.shard_size;
  opt.shard.block_size = spec.block_size;
  shards::DatasetWriter w(dir, opt);
  uint64_t tokens = 0;
  for (int i = 0; i < spec.records; ++i) {
    const std::vector<int16_t> s = RecordSamples(spec, i);
    const std::string key = RecordKey(i);
    shards::RecordBuilder rb;
    if (spec.flac) {
      std::vector<uint8_t> flac;
      EXPECT_OK(features::EncodeFlac(s.data(), s.size(), spec.sample_rate, &flac));
      rb.AddField(shards::FieldType::kAudioFlac, flac.data(), flac.size());
    } else {
      rb.AddField(shards::FieldType::kAudioPcm16, s.data(), s.size() * 2);
    }
    const bool long_transcript = spec.with_tokens && i == spec.long_transcript;
    rb.AddField(shards::FieldType::kText,
                long_transcript ? std::string(spec.long_tokens, 'x') : RecordText(i));
    if (spec.precomputed) {
      uint32_t frames = 0;
      const std::vector<uint16_t> half = RecordFeaturesF16(spec, i, &frames);
      std::vector<uint16_t> field;
      std::copy(half.begin(), half.end(), shards::EncodeFeaturesF16(frames, 80, &field));
      rb.AddField(shards::FieldType::kFeaturesF16, field.data(), field.size() * 2);
    }
    uint32_t ntok = 0;
    if (spec.with_tokens) {
      std::vector<uint32_t> ids(long_transcript ? spec.long_tokens : 1 + i % 9);
      for (size_t k = 0; k < ids.size(); ++k) ids[k] = static_cast<uint32_t>(i * 10 + k);
      rb.AddField(shards::FieldType::kTokens, ids.data(), ids.size() * 4);
      ntok = static_cast<uint32_t>(ids.size());
      tokens += ntok;
    }
    EXPECT_OK(w.Add({key, s.size(), ntok}, rb.data()));
  }
  EXPECT_OK(w.Finish());
  shards::Manifest m;
  m.kind = "audio";
  m.sample_rate = spec.sample_rate;
  m.codec = spec.flac ? "flac" : "pcm16";
  m.fields = {"audio", "text"};
  if (spec.with_tokens) m.fields.push_back("tokens");
  if (spec.precomputed) {
    m.fields.push_back("features");
    *m.features = {{"kind", "fbank"},
                   {"dtype", "float16"},
                   {"dim", 80},
                   {"num_mel_bins", 80},
                   {"frame_length_ms", 25.0},
                   {"frame_shift_ms", spec.precomputed_shift_ms},
                   {"snip_edges", true}};
  }
  m.records = spec.records;
  m.tokens = tokens;
  m.shards = w.shards();
  EXPECT_OK(shards::SaveManifest(dir, m));
  return m;
}

shards::Manifest WriteTextDataset(const std::string& dir, int records, bool with_tokens) {
  shards::DatasetWriterOptions opt;
  opt.shard_size = 20000;
  opt.shard.block_size = 4000;
  shards::DatasetWriter w(dir, opt);
  for (int i = 0; i < records; ++i) {
    std::string text = RecordText(i) + std::string(i % 13, 'x');
    shards::RecordBuilder rb;
    rb.AddField(shards::FieldType::kText, text);
    uint32_t ntok = 0;
    if (with_tokens) {
      std::vector<uint32_t> ids(text.size() / 4 + 1);
      for (size_t k = 0; k < ids.size(); ++k) ids[k] = static_cast<uint32_t>(i + k);
      rb.AddField(shards::FieldType::kTokens, ids.data(), ids.size() * 4);
      ntok = static_cast<uint32_t>(ids.size());
    }
    const std::string key = RecordKey(i);
    EXPECT_OK(w.Add({key, 0, ntok}, rb.data()));
  }
  EXPECT_OK(w.Finish());
  shards::Manifest m;
  m.kind = "text";
  m.fields = {"text"};
  m.records = records;
  m.shards = w.shards();
  EXPECT_OK(shards::SaveManifest(dir, m));
  return m;
}

std::vector<int32_t> DocumentTokens(int i) {
  std::vector<int32_t> ids(1 + (i * 7) % 23);  // 1..23 tokens, then end-of-document
  for (size_t k = 0; k < ids.size(); ++k) ids[k] = 2 + i * 32 + static_cast<int32_t>(k);
  ids.push_back(1);
  return ids;
}

namespace {

// Text records i = 0.. holding texts[i] and, with store_ids, ids[i] (the index holds their count
// either way), as shardify text --tokenizer [--store text] writes them; manifest.json names
// `tokenizer` (null: none).
shards::Manifest WriteDocuments(const std::string& dir, size_t block_size, uint64_t shard_size,
                                const std::vector<std::string>& texts,
                                const std::vector<std::vector<int32_t>>& ids, bool store_ids,
                                const nlohmann::json& tokenizer) {
  shards::DatasetWriterOptions opt;
  opt.shard_size = shard_size;
  opt.shard.block_size = block_size;
  shards::DatasetWriter w(dir, opt);
  uint64_t tokens = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    shards::RecordBuilder rb;
    rb.AddField(shards::FieldType::kText, texts[i]);
    if (store_ids) rb.AddField(shards::FieldType::kTokens, ids[i].data(), ids[i].size() * 4);
    tokens += ids[i].size();
    EXPECT_OK(w.Add({RecordKey(static_cast<int>(i)), 0, static_cast<uint32_t>(ids[i].size())},
                    rb.data()));
  }
  EXPECT_OK(w.Finish());
  shards::Manifest m;
  m.kind = "text";
  m.fields = {"text"};
  if (store_ids) m.fields.push_back("tokens");
  *m.tokenizer = tokenizer;
  m.records = texts.size();
  m.tokens = tokens;
  m.shards = w.shards();
  EXPECT_OK(shards::SaveManifest(dir, m));
  return m;
}

}  // namespace

shards::Manifest WriteTokenDataset(const std::string& dir, int records, size_t block_size,
                                   bool store_ids) {
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> ids;
  for (int i = 0; i < records; ++i) {
    texts.push_back(RecordText(i));
    ids.push_back(DocumentTokens(i));
  }
  return WriteDocuments(dir, block_size, block_size * 4, texts, ids, store_ids, nullptr);
}

Status TextToDocumentTokens(std::string_view text, std::vector<int32_t>* ids) {
  const std::string_view prefix = "transcript number ";
  if (text.substr(0, prefix.size()) != prefix)
    return Status::InvalidArgument("not a test document: '" + std::string(text) + "'");
  *ids = DocumentTokens(std::stoi(std::string(text.substr(prefix.size()))));
  return Status::OK();
}

std::string CharText(int i) {
  static const char* const kWords[] = {"Alpha", "beta,", "gamma", "delta.", "epsilon", "zeta"};
  std::string text;
  for (int k = 0; k <= i % 7; ++k) {
    if (k) text += ' ';
    text += kWords[(i + 3 * k) % 6];
  }
  return text + " " + std::to_string(i);
}

shards::Manifest WriteCharTokenizedDataset(const std::string& dir, int records, bool store_ids) {
  std::vector<std::string> texts;
  for (int i = 0; i < records; ++i) texts.push_back(CharText(i));
  features::TextNormalizeOptions norm;
  std::vector<std::string> chars;
  EXPECT_OK(features::BuildCharVocabulary(texts, norm, &chars));
  std::unique_ptr<features::Tokenizer> tok;
  EXPECT_OK(features::MakeCharTokenizer(chars, norm, &tok));
  std::vector<std::vector<int32_t>> ids(texts.size());
  for (int i = 0; i < records; ++i) {
    EXPECT_OK(tok->Encode(texts[i], &ids[i]));
    ids[i].push_back(features::kEndOfDocumentId);
  }
  const nlohmann::json tokenizer = {{"type", "char"},
                                    {"normalize", TextNormalizeToJson(norm)},
                                    {"vocab", chars},
                                    {"vocab_size", tok->vocab_size()},
                                    {"blank_id", features::kBlankId},
                                    {"end_of_document_id", features::kEndOfDocumentId}};
  return WriteDocuments(dir, 1500, 6000, texts, ids, store_ids, tokenizer);
}

uint64_t FlipByteInBlock(const std::string& dir, const std::string& shard_file, size_t block) {
  const std::string path = dir + "/" + shard_file;
  std::unique_ptr<shards::ShardReader> reader;
  EXPECT_OK(shards::ShardReader::Open(path, {}, &reader));
  const shards::BlockInfo info = reader->block(block);
  reader.reset();
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  const uint64_t at = info.offset + info.compressed_size / 2;
  f.seekg(at);
  char c = 0;
  f.read(&c, 1);
  c ^= 0x5a;
  f.seekp(at);
  f.write(&c, 1);
  return info.offset;
}

}  // namespace sluice::loader::testing
