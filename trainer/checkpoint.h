// The sluice-train checkpoint: everything an exact resume needs (parameters, AdamW moments and
// step, the loader's resume state, the step counters) plus what a resume must agree with (model
// configuration, run options, tokenizer fingerprint). One file, written atomically, ending in an
// XXH3 checksum of all its bytes; docs/formats/checkpoint.md is the spec.
//
// Nothing wall-clock is stored, so two runs that trained the same steps write identical files:
// the resume test compares them byte for byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "loader/resume.h"

namespace sluice::train {

// Counters that are not the optimizer's or the loader's but must survive a resume.
struct TrainCounters {
  uint64_t step = 0;              // optimizer steps taken (the next step's dropout key)
  uint64_t seed = 0;              // the run's seed (dropout masks, initialisation, shuffles)
  uint64_t utterances = 0;        // training rows consumed, all epochs
  double audio_seconds = 0;       // their audio
  double epoch_loss_sum = 0;      // this epoch so far: sum of step losses ...
  uint64_t epoch_steps = 0;       // ... over this many steps, so a resumed epoch's mean is exact
};

struct Checkpoint {
  nlohmann::json config;  // {"model": ..., "run": ..., "tokenizer": manifest's description}
  uint64_t tokenizer_fingerprint =
      0;              // XXH3 of the dataset's tokenizer description (TokenizerFingerprint)
  int32_t vocab = 0;  // model classes, blank included (= the tokenizer's vocab_size)
  std::vector<float> params;           // the model's flat buffer (reference/ ParameterLayout order)
  int64_t adam_step = 0;
  std::vector<float> adam_m, adam_v;   // one per parameter
  loader::ResumeState loader;
  TrainCounters counters;
};

// XXH3-64 of the canonical JSON (sorted keys, no spaces) of a manifest's "tokenizer" object.
uint64_t TokenizerFingerprint(const nlohmann::json& description);

// The file's bytes. InvalidArgument when m or v do not match params in size.
Status EncodeCheckpoint(const Checkpoint& c, std::string* bytes);
// Parses and verifies `bytes`, naming `name` (the file) in every error: Corruption for a bad
// magic, a truncated or extended file, a checksum mismatch or a malformed section; Unsupported
// for a newer version.
Status DecodeCheckpoint(std::string_view bytes, const std::string& name, Checkpoint* out);

// File forms: the write goes to a temporary file renamed over `path` (a crash leaves the old
// checkpoint whole); the I/O error, prefixed with the file.
Status WriteCheckpoint(const std::string& path, const Checkpoint& c);
Status ReadCheckpoint(const std::string& path, Checkpoint* out);

}  // namespace sluice::train
