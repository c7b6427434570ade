// sluice-bench augment: the cost of each waveform augmentation transform, and of the whole chain,
// in milliseconds of one core per hour of audio (docs/augment.md, "Cost"). The clips are generated
// and the noise and impulse response prepared before the clock starts, so the figures are the
// transforms alone: what a loader decode thread spends on them per record.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench_augment_epoch.h"
#include "command_line.h"
#include "commands.h"
#include "features/length_change.h"
#include "features/waveform_augment.h"
#include "speech_like.h"

namespace sluice::bench {
namespace {

struct AugmentArgs {
  int rate = 16000;
  double seconds = 10;
  int clips = 32;
  int passes = 3;
  double rir_seconds = 0.5;
  bool json = false;
};

// An exponentially decaying room response with a direct path 5 ms in (RT60 0.4 s).
std::vector<float> RoomResponse(int rate, double seconds) {
  std::vector<float> h(static_cast<size_t>(rate * seconds));
  Rng rng(StreamKey(7, 0, 0));
  const size_t direct = static_cast<size_t>(0.005 * rate);
  for (size_t i = direct; i < h.size(); ++i) {
    const double t = static_cast<double>(i - direct) / rate;
    h[i] = static_cast<float>((2 * rng.Uniform() - 1) * 0.2 * std::exp(-6.9 * t / 0.4));
  }
  h[direct] = 1.0f;
  return h;
}

}  // namespace

int RunAugment(int argc, char** argv) {
  AugmentArgs a;
  CLI::App app{"Waveform augmentation cost: ms of one core per hour of audio, per transform.",
               argv[0]};
  app.add_option("--rate", a.rate, "sample rate (Hz)")->check(CLI::Range(8000, 48000));
  app.add_option("--seconds", a.seconds, "length of each generated clip (s)")
      ->check(CLI::Range(0.1, 600.0));
  app.add_option("--clips", a.clips, "number of generated clips")->check(CLI::Range(1, 100000));
  app.add_option("--passes", a.passes, "timed passes; the fastest is reported")
      ->check(CLI::Range(1, 100));
  app.add_option("--rir-seconds", a.rir_seconds, "length of the impulse response (s)")
      ->check(CLI::Range(0.01, 10.0));
  app.add_flag("--json", a.json, "print one JSON object");
  AugmentEpochArgs e;
  app.add_option("--dataset", e.dataset,
                 "instead: loader epochs over this audio dataset with the chain off and with "
                 "every transform on, side by side");
  app.add_option("--noise-data", e.noise_data, "with --dataset: noise clips (else no noise)");
  app.add_option("--rir-data", e.rir_data, "with --dataset: impulse responses (else no reverb)");
  app.add_option("--threads", e.threads, "with --dataset: loader threads (0 = the usable cores)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--prob", e.probability, "with --dataset: every transform's probability")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--features", e.features, "with --dataset: fbank, spectrogram or raw");
  app.add_option("--consume-hours-per-second", e.consume_hours_per_second,
                 "with --dataset: hours of audio per second the trainer takes (default: "
                 "docs/gpu.md's small-preset step, 32 x 1600 frames in 24.62 ms)")
      ->check(CLI::PositiveNumber);
  int exit_code = 0;
  if (!ParseCommandLine(app, argc, argv, &exit_code)) return exit_code;
  if (!e.dataset.empty()) {
    e.json = a.json;
    return RunAugmentEpoch(e);
  }

  const size_t n = static_cast<size_t>(a.seconds * a.rate);
  std::vector<std::vector<float>> clips;
  for (int i = 0; i < a.clips; ++i) clips.push_back(SpeechLikeClip(i, a.rate, n));
  features::WaveformSources sources;
  sources.noise.push_back(SpeechLikeClip(1000, a.rate, static_cast<size_t>(a.rate) * 30));
  for (int i = 0; i < 8; ++i) {  // a babble pool of other "utterances"
    sources.babble.push_back(SpeechLikeClip(2000 + i, a.rate, n));
    sources.babble_ids.push_back(features::kNotATrainingRecord);
  }
  const std::vector<float> h = RoomResponse(a.rate, a.rir_seconds);
  sources.rirs.emplace_back();
  if (Status s = features::PrepareImpulseResponse(h.data(), h.size(), &sources.rirs.back());
      !s.ok()) {
    std::fprintf(stderr, "sluice-bench augment: %s\n", s.ToString().c_str());
    return 1;
  }

  // Each case: the chain with one transform at probability 1 (and the whole chain last).
  using Opt = features::WaveformAugmentOptions;
  std::vector<std::pair<std::string, Opt>> cases;
  auto add = [&](const std::string& name, const std::function<void(Opt*)>& set) {
    Opt o;
    set(&o);
    cases.emplace_back(name, o);
  };
  // The length-changing stage: speed (soxr) and tempo (SoundTouch's WSOLA), one factor each.
  for (double f : {0.9, 1.1}) {
    char suffix[16];
    std::snprintf(suffix, sizeof suffix, "_%.1f", f);
    add(std::string("speed") + suffix, [f](Opt* o) {
      o->speed.probability = 1;
      o->speed.factors = {f};
    });
    add(std::string("tempo") + suffix, [f](Opt* o) {
      o->tempo.probability = 1;
      o->tempo.factors = {f};
    });
  }
  add("gain", [](Opt* o) { o->gain.probability = 1; });
  add("clipping", [](Opt* o) { o->clipping.probability = 1; });
  add("noise", [](Opt* o) { o->noise.probability = 1; });
  add("babble", [](Opt* o) { o->babble.probability = 1; });
  add("reverb", [](Opt* o) { o->reverb.probability = 1; });
  add("band_limit_8k", [](Opt* o) {
    o->band_limit.probability = 1;
    o->band_limit.rates = {8000};
  });
  for (const char* codec : {"ulaw", "alaw", "gsm", "vorbis", "opus", "mp3"}) {
    add(std::string("codec_") + codec, [codec](Opt* o) {
      o->codec.probability = 1;
      o->codec.codecs = {codec};
    });
  }
  add("chain_all", [](Opt* o) {
    o->reverb.probability = o->noise.probability = o->gain.probability = 1;
    o->babble.probability = 1;
    o->clipping.probability = o->band_limit.probability = o->codec.probability = 1;
  });

  const double hours = a.clips * a.seconds / 3600.0;
  features::WaveformWorkspace ws;
  features::LengthWorkspace length_ws;
  std::vector<float> x;
  nlohmann::json out = nlohmann::json::object();
  out["rate"] = a.rate;
  out["audio_hours"] = hours;
  if (!a.json) std::printf("%-16s %14s %10s\n", "transform", "ms/hour/core", "x realtime");
  for (const auto& [name, o] : cases) {
    double best = 1e300;
    for (int p = 0; p < a.passes; ++p) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < a.clips; ++i) {
        x = clips[i];
        // As the loader runs it: the length-changing stage, then the chain in place.
        const float* y = nullptr;
        size_t m = 0;
        Status s = features::ChangeLength(
            x.data(), x.size(), a.rate, features::DrawLengthChange(o, 1, p, i), &length_ws, &y, &m);
        if (s.ok())
          s = features::AugmentWaveform(o, sources, 1, p, i, const_cast<float*>(y), m, a.rate, 1.0f,
                                        &ws);
        if (!s.ok()) {
          std::fprintf(stderr, "sluice-bench augment: %s: %s\n", name.c_str(),
                       s.ToString().c_str());
          return 1;
        }
      }
      best = std::min(best,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const double ms_per_hour = best * 1000 / hours;
    out["ms_per_hour_per_core"][name] = ms_per_hour;
    if (!a.json)
      std::printf("%-16s %14.0f %10.0f\n", name.c_str(), ms_per_hour, 3.6e6 / ms_per_hour);
  }
  if (a.json) std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace sluice::bench
