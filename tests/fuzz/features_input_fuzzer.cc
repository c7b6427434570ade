// libFuzzer target for `sluice-features` input (tools/features/sluice_features.cc): an audio file
// through the tool's whole chain, in memory: decode (DecodeMemory, the in-memory twin of the
// tool's DecodeFile), the NaN/Inf check, resampling to the feature rate and both feature kinds
// with the tool's default options. Any bytes give a Status or features, never a crash.
// Seeds: corpus/features_input (tests/fuzz/make_seeds.cc: the audio seeds).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "features/audio.h"
#include "features/fbank.h"
#include "features/resample.h"
#include "features/spectrogram.h"
#include "features/workspace.h"
#include "loader/feature_args.h"

namespace {

struct Tool {
  sluice::features::FbankComputer fbank;
  sluice::features::SpectrogramComputer spectrogram;
};

// The tool's default options for each kind, built once (FFT plans are not cheap).
sluice::loader::FeatureConfig Defaults(const char* kind, int rate) {
  sluice::loader::FeatureArgs fa;
  fa.kind = kind;
  sluice::loader::FeatureConfig config;
  if (!sluice::loader::MakeFeatureConfig(fa, rate, &config).ok()) std::abort();
  return config;
}

const Tool& GetTool() {
  static const Tool tool{
      sluice::features::FbankComputer(Defaults("fbank", 16000).fbank),
      sluice::features::SpectrogramComputer(Defaults("spectrogram", 8000).spectrogram)};
  return tool;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  const Tool& tool = GetTool();
  features::DecodedAudio audio;
  if (!features::DecodeMemory(data, size, "fuzz.audio", {}, &audio).ok()) return 0;
  if (!features::AllFinite(audio.samples.data(), audio.samples.size())) return 0;
  features::Workspace ws;
  std::vector<float> samples, out;
  // fbank at 16 kHz, the spectrogram at 8 kHz: the tool's default rates.
  if (features::Resample(audio.samples.data(), audio.samples.size(), audio.sample_rate, 16000,
                         &samples)
          .ok()) {
    for (float& x : samples) x *= 32768.0f;  // Kaldi's int16 scale, as the tool does
    const int64_t frames = tool.fbank.Compute(samples.data(), samples.size(), &ws, &out);
    if (out.size() != static_cast<size_t>(frames) * tool.fbank.Dim()) std::abort();
  }
  if (features::Resample(audio.samples.data(), audio.samples.size(), audio.sample_rate, 8000,
                         &samples)
          .ok()) {
    const int64_t frames = tool.spectrogram.Compute(samples.data(), samples.size(), &ws, &out);
    if (out.size() != static_cast<size_t>(frames) * tool.spectrogram.Dim()) std::abort();
  }
  return 0;
}
