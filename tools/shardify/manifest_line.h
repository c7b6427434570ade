// One line of `shardify audio`'s NeMo-style JSONL manifest, parsed and checked: the part of an
// item's processing that reads only the line (no audio file). In its own file so the fuzzer
// (tests/fuzz/input_manifest_fuzzer.cc) and the tests can drive exactly what shardify runs.
//
// Each line: {"audio_filepath": "a.wav", "text": "...", "duration": 3.2, "offset": 0.0,
// "id": "utt1"}; duration, offset and id are optional, and so are the metadata columns
// "speaker", "lang"/"language".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "features/audio.h"
#include "features/tokenizer.h"

namespace sluice::shardify {

// The largest "offset" or "duration" accepted, in seconds (about 116 days): far beyond any
// recording, far below what overflows a sample count at any rate (2^63 samples at 384 kHz last
// 760,000 years). A larger one is a broken line, rejected naming the field.
inline constexpr double kMaxManifestSeconds = 1e7;

struct ManifestLine {
  std::string audio_filepath;      // as written; relative paths resolve against the manifest
  std::string text;                // the transcript
  features::DecodeOptions decode;  // "offset" and "duration"
  std::string key;                 // "id", else the path (with @offset+duration when given)
  std::string speaker;             // "speaker" ("" if absent)
  std::string language;            // "language" or "lang" ("" if absent)
};

// Parses `line`; with a tokenizer also encodes the transcript into *ids (cleared first). False,
// with the reason rejects.jsonl gives, for an empty line, invalid UTF-8 or JSON, a missing or
// mistyped field, a transcript the tokenizer cannot encode, or a key over shards::kMaxKeySize.
// The checks run in that order, so a line with several faults is rejected for the first one.
bool ParseManifestLine(const std::string& line, const features::Tokenizer* tokenizer,
                       ManifestLine* out, std::vector<int32_t>* ids, std::string* reason);

// Seconds with millisecond precision and no trailing zeros: "12.5", "0.25", "3600" (keys and
// reject reasons).
std::string FormatSeconds(double v);

}  // namespace sluice::shardify
