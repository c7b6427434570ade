// sluice-bench features: feature extraction throughput per core (docs/features.md, "Measured").
//
// Input is decoded before the clock starts (generated speech-like clips, or --input files), so
// the figure is the feature computation alone: what a loader thread spends per clip.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/random.h"
#include "command_line.h"
#include "commands.h"
#include "feature_options.h"
#include "features/audio.h"
#include "features/fbank.h"
#include "features/resample.h"
#include "features/spectrogram.h"
#include "speech_like.h"

namespace sluice::bench {
namespace {

using features::FbankComputer;
using features::FbankOptions;
using features::SpectrogramComputer;
using features::SpectrogramOptions;
using features::Workspace;

Status LoadList(const std::string& list, int rate, std::vector<std::vector<float>>* clips) {
  std::ifstream in(list);
  if (!in) return Status::NotFound(list + ": cannot open the input list");
  std::string path;
  features::DecodedAudio audio;
  std::vector<float> resampled;
  while (std::getline(in, path)) {
    if (path.empty() || path[0] == '#') continue;
    SLUICE_RETURN_IF_ERROR(features::DecodeFile(path, {}, &audio));
    SLUICE_RETURN_IF_ERROR(
        features::Resample(audio.samples.data(), audio.samples.size(), audio.sample_rate, rate,
                           &resampled));
    clips->push_back(resampled);
  }
  if (clips->empty()) return Status::InvalidArgument(list + ": no audio files listed");
  return Status::OK();
}

// The command line of sluice-bench features.
struct FeaturesArgs {
  std::string kind = "fbank";
  double seconds = 16;
  int clips = 64;
  int threads = 1;
  int passes = 3;
  std::string input;
  bool json = false;
  tools::FeatureArgs fa;  // the flags every tool shares (tools/common/feature_options.h)
};

// Parses the command line into *a; false when the program ends here, with *exit_code (--help: 0).
bool ParseFeaturesArgs(int argc, char** argv, FeaturesArgs* a, int* exit_code) {
  CLI::App app{
      "Feature extraction throughput: clips/s and real-time factor, input already decoded.",
      argv[0]};
  app.add_option("--features", a->kind,
                 "fbank (16 kHz, 80 bins) or spectrogram (DeepSpeech2, 8 kHz)")
      ->check(CLI::IsMember({"fbank", "spectrogram"}));
  app.add_option("--seconds", a->seconds, "length of each generated clip (s)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--clips", a->clips, "number of generated clips")->check(CLI::Range(1, 1000000));
  app.add_option("--threads", a->threads, "worker threads, each with its own workspace")
      ->check(CLI::Range(1, 1024));
  app.add_option("--passes", a->passes, "timed passes over the clips; the fastest is reported")
      ->check(CLI::Range(1, 1000));
  app.add_option("--input", a->input,
                 "file listing audio paths (one per line) instead of generated clips");
  tools::AddFeatureOptions(&app, &a->fa);
  app.add_flag("--json", a->json, "print one JSON object");
  return ParseCommandLine(app, argc, argv, exit_code);
}

// The clips, decoded before the clock starts: --input's files or generated ones, at `rate`, on
// the scale the computer takes (Kaldi's filterbank the int16 range; the spectrogram [-1, 1]).
Status LoadClips(const FeaturesArgs& a, int rate, std::vector<std::vector<float>>* data) {
  if (!a.input.empty()) {
    SLUICE_RETURN_IF_ERROR(LoadList(a.input, rate, data));
  } else {
    const auto n = static_cast<size_t>(std::llround(a.seconds * rate));
    for (int i = 0; i < a.clips; ++i)
      data->push_back(SpeechLikeClip(static_cast<uint64_t>(i), rate, n));
  }
  if (a.kind == "fbank") {
    for (auto& clip : *data) {
      for (float& x : clip) x *= 32768.0f;
    }
  }
  return Status::OK();
}

// The computer the flags describe: a filterbank or a spectrogram, one of the two set.
struct Computer {
  std::unique_ptr<FbankComputer> fbank;
  std::unique_ptr<SpectrogramComputer> spectrogram;
  float dither = 0;

  int64_t Compute(const std::vector<float>& clip, size_t i, Workspace* ws,
                  std::vector<float>* out) const {
    if (fbank) return fbank->Compute(clip.data(), clip.size(), ws, out, i);
    return spectrogram->Compute(clip.data(), clip.size(), ws, out);
  }
  int64_t NumFrames(size_t samples) const {
    return fbank ? fbank->NumFrames(samples) : spectrogram->NumFrames(samples);
  }
  int Dim() const { return fbank ? fbank->Dim() : spectrogram->Dim(); }
};

Status MakeComputer(FeaturesArgs* a, int rate, Computer* c) {
  a->fa.kind = a->kind;
  tools::FeatureConfig config;
  SLUICE_RETURN_IF_ERROR(tools::MakeFeatureConfig(a->fa, rate, &config));
  if (a->kind == "fbank") {
    c->fbank = std::make_unique<FbankComputer>(config.fbank);
    c->dither = config.fbank.dither;
  } else {
    c->spectrogram = std::make_unique<SpectrogramComputer>(config.spectrogram);
  }
  return Status::OK();
}

// The fastest of `passes` timed passes over every clip, in seconds. Workers take clips from a
// shared counter; each keeps its workspace and output across passes, as a loader thread does, so
// the timed loop allocates nothing after the first pass.
double TimePasses(const Computer& c, const std::vector<std::vector<float>>& data, int threads,
                  int passes) {
  std::vector<Workspace> workspaces(threads);
  std::vector<std::vector<float>> outputs(threads);
  double best = 1e300;
  for (int pass = 0; pass <= passes; ++pass) {  // pass 0 warms caches and buffers, untimed
    std::atomic<size_t> next{0};
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        for (size_t i = next++; i < data.size(); i = next++)
          c.Compute(data[i], i, &workspaces[t], &outputs[t]);
      });
    }
    for (auto& th : pool) th.join();
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (pass > 0) best = std::min(best, wall);
  }
  return best;
}

void PrintFeatures(const FeaturesArgs& a, const Computer& c, size_t clips, double audio_seconds,
                   int64_t frames, double best) {
  const double clips_per_second = static_cast<double>(clips) / best;
  const double realtime_factor = audio_seconds / best;
  const double us_per_frame = best * a.threads * 1e6 / static_cast<double>(frames);  // core time
  if (a.json) {
    nlohmann::json j = {
        {"kind", a.kind},
        {"threads", a.threads},
        {"clips", clips},
        {"audio_seconds", audio_seconds},
        {"frames", frames},
        {"dim", c.Dim()},
        {"dither", c.dither},
        {"wall_seconds", best},
        {"clips_per_second", clips_per_second},
        {"realtime_factor", realtime_factor},
        {"us_per_frame_per_core", us_per_frame},
    };
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%s: %zu clips, %.1f s of audio, %lld frames, %d thread%s\n", a.kind.c_str(), clips,
                audio_seconds, static_cast<long long>(frames), a.threads,
                a.threads == 1 ? "" : "s");
    std::printf("  %.1f clips/s, real-time factor %.0fx, %.3f us per frame per core (best of %d)\n",
                clips_per_second, realtime_factor, us_per_frame, a.passes);
  }
}

}  // namespace

int RunFeatures(int argc, char** argv) {
  FeaturesArgs a;
  int code = 0;
  if (!ParseFeaturesArgs(argc, argv, &a, &code)) return code;
  const int rate = a.kind == "fbank" ? 16000 : 8000;
  std::vector<std::vector<float>> data;
  if (Status s = LoadClips(a, rate, &data); !s.ok()) {
    std::fprintf(stderr, "sluice-bench features: %s\n", s.ToString().c_str());
    return 1;
  }
  Computer computer;
  if (Status s = MakeComputer(&a, rate, &computer); !s.ok()) {
    std::fprintf(stderr, "sluice-bench features: %s\n", s.ToString().c_str());
    return 2;
  }
  int64_t frames = 0;
  double audio_seconds = 0;
  for (const auto& clip : data) {
    frames += computer.NumFrames(clip.size());
    audio_seconds += static_cast<double>(clip.size()) / rate;
  }
  const double best = TimePasses(computer, data, a.threads, a.passes);
  PrintFeatures(a, computer, data.size(), audio_seconds, frames, best);
  return 0;
}

}  // namespace sluice::bench
