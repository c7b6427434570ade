// Feature options on the command line, with Kaldi's names and units
// (compute-fbank-feats), and their record in manifest.json. Shared by the
// tools so that one flag means the same thing everywhere.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "features/fbank.h"
#include "features/spectrogram.h"

namespace sluice::tools {

struct FeatureArgs {
  std::string kind;               // "fbank" or "spectrogram" ("" = none, where allowed)
  float frame_length_ms = 0;      // 0: the kind's default (fbank 25, spectrogram 20)
  float frame_shift_ms = 10;
  int num_mel_bins = 80;
  float dither = 0;
  float preemphasis_coefficient = 0.97f;
  bool remove_dc_offset = true;
  std::string window_type;        // "": the kind's default (fbank povey, spectrogram hamming)
  bool snip_edges = true;         // fbank: Kaldi's; spectrogram: false means torch's center=True.
                                  // Applies to the spectrogram only when given (snip_edges_set):
                                  // its default is the library's, centred frames
  bool snip_edges_set = false;    // --snip-edges was given (AddFeatureOptions sets it)
  float low_freq = 20;
  float high_freq = 0;
  bool use_energy = false;
  int n_fft = 0;                  // spectrogram: 0 = the window length
  bool normalize = true;          // spectrogram: per-utterance mean/std
  // fbank, rarely changed: features::FbankOptions' defaults (Kaldi's).
  float blackman_coeff = features::FbankOptions().blackman_coeff;
  bool round_to_power_of_two = features::FbankOptions().round_to_power_of_two;
  bool raw_energy = features::FbankOptions().raw_energy;
  float energy_floor = features::FbankOptions().energy_floor;
  bool htk_compat = features::FbankOptions().htk_compat;
  bool use_power = features::FbankOptions().use_power;
  bool use_log_fbank = features::FbankOptions().use_log_fbank;
};

// Adds --frame-length, --frame-shift, --num-mel-bins, --dither, ... to `app`
// (the kind itself, and the sample rate where a tool chooses it, are the caller's).
// Defaults are the library's: Kaldi's for fbank (whole frames, --snip-edges=true) and the
// DeepSpeech2 / torch.stft(center=True) convention for the spectrogram (centred frames), so a
// flag left out means the same in shardify, sluice-bench, sluice-features and sluice-train.
void AddFeatureOptions(CLI::App* app, FeatureArgs* a);

struct FeatureConfig {
  features::FbankOptions fbank;
  features::SpectrogramOptions spectrogram;
  bool is_fbank = true;
};

// Validates `a` for input at `sample_rate` Hz; InvalidArgument names the flag.
Status MakeFeatureConfig(const FeatureArgs& a, int sample_rate, FeatureConfig* out);

// manifest.json "features" for precomputed features (docs/formats/manifest.md); the loader's
// writer (loader/features_json.h), beside its reader.
nlohmann::json FeatureConfigToJson(const FeatureConfig& c);

}  // namespace sluice::tools
