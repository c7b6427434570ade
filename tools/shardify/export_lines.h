// The manifest lines `shardify export` writes (docs/shardify.md, "shardify export"): one NeMo
// JSONL line or one Lhotse MonoCut per record, and the audio file's name. Pure functions of the
// record, so the export is the same for any thread count.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "features/encode.h"

namespace sluice::shardify {

struct ExportRecord {
  std::string_view key;   // the record's id in the dataset
  std::string_view text;  // its transcript
  uint64_t samples = 0;   // at the dataset's rate
  int sample_rate = 0;
};

// "audio/00000042-utt_1.wav": the record's number in the dataset (unique, so keys that clean
// to the same name stay apart), then its key with every byte outside [A-Za-z0-9._-] as '_'
// (a key may hold '/', spaces or UTF-8), cut to 100 bytes.
std::string ExportAudioName(uint64_t index, std::string_view key,
                            features::AudioContainer container);

// {"audio_filepath", "duration", "text", "id"}: what NeMo's ASR datasets and `shardify audio`
// read. `audio_path` is relative to the manifest's folder, where both resolve it.
std::string NemoLine(const ExportRecord& r, const std::string& audio_path);

// A Lhotse MonoCut (lhotse.cut.MonoCut.to_dict) whose recording is the one file at
// `audio_path` (absolute: lhotse opens a source as written, from the reader's working folder)
// and whose one supervision spans the cut and holds the text. Ids are the record's key.
std::string LhotseCutLine(const ExportRecord& r, const std::string& audio_path);

}  // namespace sluice::shardify
