// Writes the fuzzers' seed corpora (corpus/<target>/) with sluice's own writers, so the seeds
// are what the real programs produce: ManifestToJson, RecordBuilder, ShardWriter, EncodeFlac,
// EncodeCheckpoint, PrepareTokenizer's description layout, TrainSentencePiece; the audio seeds
// through libsndfile's encoders (the formats DecodeMemory reads). Small (a few KiB a file) and
// deterministic but for the Ogg files' stream serial numbers and the float WAV's PEAK time stamp
// (libsndfile's choices).
// SentencePiece models are stored without their 230 KiB NFKC table.
// Usage: make_seeds OUT_DIR (tests/fuzz/corpus); docs/testing.md "Fuzzing".
#include <sndfile.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "features/flac.h"
#include "features/half.h"
#include "features/sndfile_io.h"
#include "features/tokenizer.h"
#include "loader/dataset_tokenizer.h"
#include "shards/checksum.h"
#include "shards/fields.h"
#include "shards/manifest.h"
#include "shards/record.h"
#include "shards/shard_writer.h"
#include "trainer/checkpoint.h"

namespace fs = std::filesystem;
using namespace sluice;

namespace {

std::string g_out;

std::vector<std::string> g_records;  // every record seed, for the shard seeds

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
  if (target == "record") g_records.push_back(bytes);
  fs::create_directories(g_out + "/" + target);
  std::ofstream f(g_out + "/" + target + "/" + name, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) {
    std::fprintf(stderr, "make_seeds: cannot write %s/%s\n", target.c_str(), name.c_str());
    std::exit(1);
  }
}

void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "make_seeds: %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

// n samples of a 440 Hz tone at `rate`, `channels` interleaved.
std::vector<float> Tone(int rate, int channels, int n) {
  std::vector<float> x(size_t(n) * channels);
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < channels; ++c)
      x[size_t(i) * channels + c] = 0.5f * std::sin(6.2831853f * 440.0f * i / rate + c);
  return x;
}

// An audio file in `format`, encoded in memory by libsndfile; empty if this libsndfile cannot
// write the format (the seed is then skipped with a note).
std::string Encode(int format, int rate, int channels, int n) {
  std::vector<uint8_t> bytes;
  features::internal::VectorWriter writer{&bytes, 0};
  SF_INFO info{};
  info.samplerate = rate;
  info.channels = channels;
  info.format = format;
  SNDFILE* sf = sf_open_virtual(features::internal::VectorWriterIo(), SFM_WRITE, &info, &writer);
  if (sf == nullptr) return "";
  const std::vector<float> x = Tone(rate, channels, n);
  sf_writef_float(sf, x.data(), n);
  sf_close(sf);
  return std::string(bytes.begin(), bytes.end());
}

void AudioSeeds() {
  struct Seed {
    const char* name;
    int format, rate, channels, n;
  };
  const Seed seeds[] = {
      {"pcm16.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 8000, 1, 400},
      {"stereo_pcm24.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_24, 16000, 2, 200},
      {"float.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 8000, 1, 200},
      {"ulaw.wav", SF_FORMAT_WAV | SF_FORMAT_ULAW, 8000, 1, 200},
      {"pcm16.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1, 800},
      {"stereo.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_24, 22050, 2, 400},
      {"vorbis.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 16000, 1, 1600},
      {"opus.ogg", SF_FORMAT_OGG | SF_FORMAT_OPUS, 16000, 1, 1600},
      {"layer3.mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 16000, 1, 1600},
      {"pcm16.aiff", SF_FORMAT_AIFF | SF_FORMAT_PCM_16, 8000, 1, 200},
  };
  for (const Seed& s : seeds) {
    const std::string bytes = Encode(s.format, s.rate, s.channels, s.n);
    if (bytes.empty()) {
      std::fprintf(stderr, "make_seeds: this libsndfile cannot write %s; skipped\n", s.name);
      continue;
    }
    Write("audio", s.name, bytes);
    Write("features_input", s.name, bytes);
  }
}

std::vector<int16_t> Pcm(int n) {
  std::vector<int16_t> pcm(n);
  for (int i = 0; i < n; ++i) pcm[i] = static_cast<int16_t>(8000 * std::sin(0.05 * i));
  return pcm;
}

void RecordSeeds() {
  const std::vector<int16_t> pcm = Pcm(300);
  const std::vector<uint32_t> ids = {5, 12, 2, 9, 2, 30};
  shards::RecordBuilder r;
  r.AddField(shards::FieldType::kAudioPcm16, pcm.data(), pcm.size() * 2);
  r.AddField(shards::FieldType::kText, "hello world");
  r.AddField(shards::FieldType::kTokens, ids.data(), ids.size() * 4);
  Write("record", "pcm16_text_tokens", r.data());

  std::vector<uint8_t> flac;
  Check(features::EncodeFlac(pcm.data(), pcm.size(), 16000, &flac), "EncodeFlac");
  r.Clear();
  r.AddField(shards::FieldType::kAudioFlac, flac.data(), flac.size());
  r.AddField(shards::FieldType::kText, "a flac record");
  Write("record", "flac_text", r.data());
  Write("audio", "record.flac", std::string(flac.begin(), flac.end()));

  std::vector<uint16_t> field;
  uint16_t* values = shards::EncodeFeaturesF16(4, 3, &field);
  const float f[12] = {0, 1, -1, 0.5f, 2, 3, 4, -5, 6.25f, 7, 8, 1e-3f};
  features::FloatToHalf(f, 12, values);
  r.Clear();
  r.AddField(shards::FieldType::kFeaturesF16, field.data(), field.size() * 2);
  r.AddField(shards::FieldType::kText, "features");
  r.AddField(shards::FieldType::kTokens, ids.data(), 3 * 4);
  Write("record", "features_text_tokens", r.data());

  r.Clear();
  r.AddField(shards::FieldType::kText, "a text document\nof two lines");
  Write("record", "text", r.data());
}

// Shards of the record seeds: small blocks, so the index and several blocks are exercised.
void ShardSeeds() {
  fs::create_directories(g_out + "/shard_reader");
  for (size_t block_size : {size_t{256}, size_t{1} << 20}) {
    shards::ShardWriterOptions o;
    o.block_size = block_size;
    o.zstd_level = 1;
    std::unique_ptr<shards::ShardWriter> w;
    const std::string name = "block" + std::to_string(block_size) + ".sluice";
    Check(shards::ShardWriter::Create(g_out + "/shard_reader/" + name, o, &w), "ShardWriter");
    for (size_t i = 0; i < g_records.size(); ++i) {
      const std::string key = "utt-" + std::to_string(i);
      Check(w->Add({key, 100 * i, static_cast<uint32_t>(i)}, g_records[i]), "ShardWriter::Add");
    }
    shards::ShardStats stats;
    Check(w->Finish(&stats), "ShardWriter::Finish");
  }
}

void ManifestSeeds(const nlohmann::json& char_tokenizer) {
  shards::Manifest m;
  m.kind = "audio";
  m.sample_rate = 16000;
  m.codec = "pcm16";
  m.fields = {"audio", "text", "tokens"};
  *m.tokenizer = char_tokenizer;
  m.created_by = "shardify 0.1.0";
  *m.source = {{"manifest", "corpus/manifest.jsonl"}};
  for (int i = 0; i < 2; ++i) {
    shards::ShardEntry e;
    e.file = "shard-0000" + std::to_string(i) + ".sluice";
    e.records = 3 + i;
    e.bytes = 4096 + i;
    e.raw_bytes = 8000;
    e.duration = 48000;
    e.tokens = 40;
    e.xxh3 = 0x0123456789abcdefULL + i;
    m.shards.push_back(e);
    m.records += e.records;
    m.tokens += e.tokens;
  }
  m.rejected = 1;
  Write("manifest", "audio_char.json", shards::ManifestToJson(m).dump(2) + "\n");

  m.kind = "text";
  m.sample_rate = 0;
  m.codec = "";
  m.fields = {"text"};
  *m.tokenizer = nullptr;
  m.rejected = 0;
  Write("manifest", "text.json", shards::ManifestToJson(m).dump(2) + "\n");

  m.kind = "audio";
  m.sample_rate = 8000;
  m.codec = "flac";
  m.fields = {"audio", "text", "features"};
  *m.features = {{"kind", "fbank"}, {"num_mel_bins", 80}, {"frame_shift_ms", 10}};
  Write("manifest", "flac_features.json", shards::ManifestToJson(m).dump(2) + "\n");
}

void InputManifestSeeds() {
  Write("input_manifest", "nemo.jsonl",
        "{\"audio_filepath\": \"a.wav\", \"text\": \"hello world\", \"duration\": 3.2}\n"
        "{\"audio_filepath\": \"/data/b.flac\", \"text\": \"it's fine\", \"offset\": 1.5, "
        "\"duration\": 2, \"id\": \"utt-2\"}\r\n"
        "{\"audio_filepath\": \"c.ogg\", \"text\": \"\\u00e9t\\u00e9\", \"offset\": 0.25}\n");
  Write("input_manifest", "rejects.jsonl",
        "\n{\"text\": \"no path\"}\n{\"audio_filepath\": \"x.wav\", \"text\": 3}\n"
        "{\"audio_filepath\": \"y.wav\", \"text\": \"ok\", \"duration\": -1}\n"
        "[1, 2]\n{\"audio_filepath\": \"z.wav\", \"text\": \"Zebra!\", \"id\": null}\n");
}

// Protocol-buffer varint at bytes[*pos], advancing *pos; false past the end.
bool Varint(const std::string& bytes, size_t* pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; *pos < bytes.size() && shift < 64; shift += 7) {
    const uint8_t b = static_cast<uint8_t>(bytes[(*pos)++]);
    *v |= uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

void PutVarint(uint64_t v, std::string* out) {
  for (; v >= 0x80; v >>= 7) out->push_back(static_cast<char>(v | 0x80));
  out->push_back(static_cast<char>(v));
}

// A message's fields with the length-delimited field `drop` left out and field `nested` (also
// length-delimited) passed through `edit`: enough protobuf to shrink a model.
template <class Edit>
std::string RewriteMessage(const std::string& in, uint64_t drop, uint64_t nested, Edit edit) {
  std::string out;
  size_t pos = 0;
  while (pos < in.size()) {
    const size_t start = pos;
    uint64_t key, v;
    if (!Varint(in, &pos, &key)) break;
    const uint64_t field = key >> 3, wire = key & 7;
    if (wire == 0) {
      Varint(in, &pos, &v);
    } else if (wire == 1) {
      pos += 8;
    } else if (wire == 5) {
      pos += 4;
    } else if (wire == 2) {
      Varint(in, &pos, &v);
      const std::string body = in.substr(pos, v);
      pos += v;
      if (field == drop) continue;
      if (field == nested) {
        const std::string edited = edit(body);
        PutVarint(key, &out);
        PutVarint(edited.size(), &out);
        out += edited;
        continue;
      }
    } else {
      break;  // groups: not in a SentencePiece model
    }
    out += in.substr(start, pos - start);
  }
  return out;
}

// The model without NormalizerSpec.precompiled_charsmap (ModelProto field 3, its field 2): the
// NFKC table is 230 KiB of the 240 KiB, and the fuzzer mutates what is left many times faster.
// The model still loads (an empty map normalises nothing).
std::string WithoutCharsmap(const std::string& model) {
  return RewriteMessage(model, 0, 3, [](const std::string& normalizer) {
    return RewriteMessage(normalizer, 2, 0, [](const std::string& s) { return s; });
  });
}

nlohmann::json CharDescription(const std::vector<std::string>& texts) {
  features::TextNormalizeOptions norm;  // shardify's defaults: lowercase, no punctuation
  std::vector<std::string> chars;
  Check(features::BuildCharVocabulary(texts, norm, &chars), "BuildCharVocabulary");
  return {{"normalize", loader::TextNormalizeToJson(norm)},
          {"type", "char"},
          {"vocab", chars},
          {"vocab_size", static_cast<int>(chars.size()) + features::kFirstTokenId},
          {"blank_id", features::kBlankId},
          {"end_of_document_id", features::kEndOfDocumentId}};
}

void TokenizerSeeds(const std::vector<std::string>& texts, const nlohmann::json& chars) {
  Write("tokenizer", "char.json", chars.dump(2));
  Write("tokenizer", "char_with_text", chars.dump() + std::string(1, '\0') + "Hello, World!");
  features::TextNormalizeOptions keep;
  keep.lowercase = false;
  keep.strip_punctuation = false;
  std::vector<std::string> cs;
  Check(features::BuildCharVocabulary(texts, keep, &cs), "BuildCharVocabulary");
  nlohmann::json d = chars;
  d["normalize"] = loader::TextNormalizeToJson(keep);
  d["vocab"] = cs;
  d["vocab_size"] = static_cast<int>(cs.size()) + features::kFirstTokenId;
  Write("tokenizer", "char_keep_case.json", d.dump());
  for (const char* type : {"bpe", "unigram"}) {
    features::SentencePieceTrainOptions o;
    o.model_type = type;
    o.vocab_size = 40;
    std::string model;
    Check(features::TrainSentencePiece(texts, {}, o, &model), "TrainSentencePiece");
    const std::string small = WithoutCharsmap(model);
    std::unique_ptr<features::Tokenizer> t;
    Check(features::MakeSentencePieceTokenizer(small, "seed", {}, false, &t), "the shrunk model");
    std::vector<int32_t> ids;
    Check(t->Encode(texts[1], &ids), "the shrunk model encodes");
    Write("sentencepiece", std::string(type) + "40.model", small);
    if (o.model_type == "bpe") {
      Write("tokenizer", "sentencepiece.json",
            nlohmann::json{
                {"normalize", loader::TextNormalizeToJson({})},
                {"type", "sentencepiece"},
                {"file", "tokenizer.model"},
                {"xxh3", shards::ChecksumHex(shards::Checksum(model.data(), model.size()))},
                {"vocab_size", 41},
                {"trained", {{"model_type", "bpe"}, {"pieces", 40}, {"seed", 1}}}}
                .dump());
    }
  }
}

void CheckpointSeeds(const nlohmann::json& chars) {
  train::Checkpoint c;
  c.config = {{"model", {{"preset", "tiny"}, {"hidden", 8}}},
              {"run", {{"lr", 0.001}, {"batch", 4}}},
              {"tokenizer", chars}};
  c.tokenizer_fingerprint = train::TokenizerFingerprint(chars);
  c.vocab = chars["vocab_size"].get<int>();
  for (int i = 0; i < 12; ++i) {
    c.params.push_back(0.01f * i);
    c.adam_m.push_back(-0.001f * i);
    c.adam_v.push_back(1e-6f * i);
  }
  c.adam_step = 7;
  c.loader.epoch = 1;
  c.loader.batches = 3;
  c.counters = {7, 42, 28, 12.5, 3.25, 3};
  std::string bytes;
  Check(train::EncodeCheckpoint(c, &bytes), "EncodeCheckpoint");
  Write("checkpoint", "tiny.ckpt", bytes);
  c.loader.world = 2;
  c.loader.earlier.push_back({4, 2});
  c.params.clear();
  c.adam_m.clear();
  c.adam_v.clear();
  Check(train::EncodeCheckpoint(c, &bytes), "EncodeCheckpoint");
  Write("checkpoint", "elastic_empty.ckpt", bytes);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds OUT_DIR (tests/fuzz/corpus)\n");
    return 2;
  }
  g_out = argv[1];
  const std::vector<std::string> texts = {"Hello world",
                                          "the quick brown fox jumps over the lazy dog",
                                          "It's a test, isn't it?",
                                          "sluice loads speech and text",
                                          "\xc3\xa9t\xc3\xa9 \xc3\xa0 Paris",
                                          "zero one two three"};
  const nlohmann::json chars = CharDescription(texts);
  AudioSeeds();
  RecordSeeds();
  ShardSeeds();
  ManifestSeeds(chars);
  InputManifestSeeds();
  TokenizerSeeds(texts, chars);
  CheckpointSeeds(chars);
  return 0;
}
