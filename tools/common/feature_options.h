// Feature options on the command line, with Kaldi's names and units (compute-fbank-feats), from
// the tables of loader/feature_args.h (FeatureArgs: the flags shared by both kinds, then the
// fbank and spectrogram tables). Shared by the tools so that one flag means the same thing
// everywhere.
#pragma once

#include <CLI/CLI.hpp>

#include "loader/feature_args.h"

namespace sluice::tools {

// The struct and its resolution live in loader/feature_args.h (CLI-free, for the trainer
// library); the tools know them by these names.
using loader::FeatureArgs;
using loader::FeatureConfig;
using loader::FeatureConfigToJson;
using loader::MakeFeatureConfig;

// Adds --frame-length, --frame-shift, --window-type, --snip-edges and every flag of the fbank and
// spectrogram tables (--num-mel-bins, --dither, ..., --n-fft, --normalize) to `app` (the kind
// itself, and the sample rate where a tool chooses it, are the caller's). Defaults are the
// library's: Kaldi's for fbank (whole frames) and the DeepSpeech2 / torch.stft(center=True)
// convention for the spectrogram (centred frames), so a flag left out means the same in
// shardify, sluice-bench, sluice-features and sluice-train.
void AddFeatureOptions(CLI::App* app, FeatureArgs* a);

}  // namespace sluice::tools
