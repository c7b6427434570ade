// Small synthetic datasets for the loader tests, written with shards::DatasetWriter: uneven
// shards, several blocks per shard, records of varied durations. No audio tools needed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "shards/manifest.h"

namespace sluice::loader::testing {

struct AudioDatasetSpec {
  int records = 120;
  int sample_rate = 16000;
  uint64_t min_samples = 1600;    // 0.1 s
  uint64_t max_samples = 24000;   // 1.5 s
  uint64_t shard_size = 400000;   // bytes: several uneven shards
  size_t block_size = 100000;     // raw bytes per block: a few records per block
  bool with_tokens = false;       // add a kTokens field per record
  int long_transcript = -1;       // with_tokens: this record's text and ids are long_tokens long
  uint32_t long_tokens = 0;
  bool flac = false;              // audio as FLAC (codec "flac") instead of pcm16
  bool precomputed = false;       // also a kFeaturesF16 field: 80-bin fbank, as shardify --features
  float precomputed_shift_ms = 10;  // the precomputed fbank's frame shift
  uint64_t seed = 1;
};

// Writes the dataset into dir (manifest.json + shards). Returns its manifest.
shards::Manifest WriteAudioDataset(const std::string& dir, const AudioDatasetSpec& spec);

// Samples of record i as written (int16), for comparing with the loader's output.
std::vector<int16_t> RecordSamples(const AudioDatasetSpec& spec, int i);
std::string RecordKey(int i);
// The float16 fbank a precomputed record stores (frames x 80).
std::vector<uint16_t> RecordFeaturesF16(const AudioDatasetSpec& spec, int i, uint32_t* frames);
std::string RecordText(int i);

// A text dataset of `records` lines, each with a kText field and, when with_tokens, kTokens.
shards::Manifest WriteTextDataset(const std::string& dir, int records, bool with_tokens);

// A text dataset as `shardify text --tokenizer` makes it: record i holds DocumentTokens(i) in a
// kTokens field (and its count in the index's tokens column). Ids name their place, so a test
// can tell where a packed token came from: DocumentRecord / DocumentPosition; the last id of
// every document is the end-of-document id 1.
// With store_ids false the records hold the text only (RecordText(i)) and the index the count of
// DocumentTokens(i), as shardify text --store text makes it; TextToDocumentTokens is then the
// tokenizer that gives those ids (the manifest names none: tests pass it as an option).
shards::Manifest WriteTokenDataset(const std::string& dir, int records, size_t block_size = 3000,
                                   bool store_ids = true);
Status TextToDocumentTokens(std::string_view text, std::vector<int32_t>* ids);
std::vector<int32_t> DocumentTokens(int i);
inline int DocumentRecord(int32_t id) { return (id - 2) / 32; }    // id >= 2
inline int DocumentPosition(int32_t id) { return (id - 2) % 32; }  // id >= 2

// A text dataset tokenized by a real tokenizer that manifest.json describes (a character
// vocabulary of the texts): record i holds CharText(i) and, with store_ids, its ids followed by
// the end-of-document id; without, only their count in the index (shardify text --tokenizer char
// [--store text]). The block size is the same, so the two layouts differ.
shards::Manifest WriteCharTokenizedDataset(const std::string& dir, int records, bool store_ids);
std::string CharText(int i);

// Flips one byte in the middle of block `block` of shard file `shard_file`; returns the block's
// file offset.
uint64_t FlipByteInBlock(const std::string& dir, const std::string& shard_file, size_t block);

}  // namespace sluice::loader::testing
