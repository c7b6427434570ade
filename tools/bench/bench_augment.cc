// sluice-bench augment: the cost of each waveform augmentation transform, and of the whole chain,
// in milliseconds of one core per hour of audio (docs/augment.md, "Cost"). The clips are generated
// and the noise and impulse response prepared before the clock starts, so the figures are the
// transforms alone: what a loader decode thread spends on them per record. The clock is the
// thread's CPU time: wall time on a shared machine counts the waits for a core as well (at a load
// of 9 on 2 cores it read 4.6 times the CPU time), and a row is meant as ms of one core.
#include <time.h>

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
  std::string only;  // comma-separated case-name prefixes; "" = every case
  bool json = false;
};

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Whether `name` starts with one of the comma-separated prefixes in `only` ("" takes all).
bool Wanted(const std::string& only, const std::string& name) {
  if (only.empty()) return true;
  size_t start = 0;
  while (start <= only.size()) {
    const size_t comma = std::min(only.find(',', start), only.size());
    const std::string prefix = only.substr(start, comma - start);
    if (!prefix.empty() && name.compare(0, prefix.size(), prefix) == 0) return true;
    start = comma + 1;
  }
  return false;
}

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

// Each mode reads its own flags: one given to the other mode would be ignored, so it is refused.
// 0, or the exit code after saying why.
int RefuseTheOtherModesFlags(const CLI::App& app, bool epochs) {
  const std::vector<const char*> clip_flags = {"--rate",   "--seconds",     "--clips",
                                               "--passes", "--rir-seconds", "--only"};
  const std::vector<const char*> epoch_flags = {"--noise-data",
                                                "--rir-data",
                                                "--threads",
                                                "--prob",
                                                "--codec-prob",
                                                "--features",
                                                "--consume-hours-per-second"};
  for (const char* flag : epochs ? clip_flags : epoch_flags) {
    if (app.count(flag) == 0) continue;
    if (epochs)
      std::fprintf(stderr,
                   "sluice-bench augment: %s is a flag of the generated clips' mode; --dataset "
                   "runs loader epochs over the dataset's records at its rate and would ignore "
                   "it (drop %s, or drop --dataset)\n",
                   flag, flag);
    else
      std::fprintf(stderr,
                   "sluice-bench augment: %s applies only with --dataset (loader epochs); the "
                   "generated clips' mode times each transform alone and would ignore it (add "
                   "--dataset DIR, or drop %s)\n",
                   flag, flag);
    return 2;
  }
  return 0;
}

// The noise, babble pool and impulse response every case draws from, generated at a.rate.
Status MakeSources(const AugmentArgs& a, size_t clip_samples, features::WaveformSources* out) {
  out->noise.push_back(SpeechLikeClip(1000, a.rate, static_cast<size_t>(a.rate) * 30));
  for (int i = 0; i < 8; ++i) {  // a babble pool of other "utterances"
    out->babble.push_back(SpeechLikeClip(2000 + i, a.rate, clip_samples));
    out->babble_ids.push_back(features::kNotATrainingRecord);
  }
  const std::vector<float> h = RoomResponse(a.rate, a.rir_seconds);
  out->rirs.emplace_back();
  return features::PrepareImpulseResponse(h.data(), h.size(), &out->rirs.back());
}

using Case = std::pair<std::string, features::WaveformAugmentOptions>;

// Each case: the chain with one transform at probability 1 (and the whole chain last).
std::vector<Case> AugmentCases() {
  using Opt = features::WaveformAugmentOptions;
  std::vector<Case> cases;
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
  return cases;
}

// Times each case over the clips (the fastest of a.passes) and prints its row; the JSON object
// when a.json. 0, or 1 naming the case whose transform failed.
int TimeCases(const AugmentArgs& a, const std::vector<Case>& cases,
              const std::vector<std::vector<float>>& clips,
              const features::WaveformSources& sources) {
  const double hours = a.clips * a.seconds / 3600.0;
  features::WaveformWorkspace ws;
  features::LengthWorkspace length_ws;
  std::vector<float> x;
  nlohmann::json out = nlohmann::json::object();
  out["rate"] = a.rate;
  out["audio_hours"] = hours;
  if (!a.json)
    std::printf("%-16s %14s %10s %14s\n", "transform", "ms/hour/core", "x realtime",
                "wall ms/hour");
  for (const auto& [name, o] : cases) {
    double best = 1e300, best_wall = 1e300;
    for (int p = 0; p < a.passes; ++p) {
      const double cpu0 = ThreadCpuSeconds();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < a.clips; ++i) {
        x = clips[i];
        // As the loader runs it: the length-changing stage, then the chain in place.
        const float* y = nullptr;
        size_t m = 0;
        Status s =
            features::ChangeLength(x.data(), x.size(), a.rate, 1.0f,
                                   features::DrawLengthChange(o, 1, p, i), &length_ws, &y, &m);
        if (s.ok())
          s = features::AugmentWaveform(o, sources, 1, p, i, const_cast<float*>(y), m, a.rate, 1.0f,
                                        &ws);
        if (!s.ok()) {
          std::fprintf(stderr, "sluice-bench augment: %s: %s\n", name.c_str(),
                       s.ToString().c_str());
          return 1;
        }
      }
      best_wall = std::min(
          best_wall, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      best = std::min(best, ThreadCpuSeconds() - cpu0);
    }
    const double ms_per_hour = best * 1000 / hours;
    out["ms_per_hour_per_core"][name] = ms_per_hour;
    out["wall_ms_per_hour"][name] = best_wall * 1000 / hours;
    if (!a.json)
      std::printf("%-16s %14.0f %10.0f %14.0f\n", name.c_str(), ms_per_hour, 3.6e6 / ms_per_hour,
                  best_wall * 1000 / hours);
  }
  if (a.json) std::printf("%s\n", out.dump().c_str());
  return 0;
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
  app.add_option("--only", a.only,
                 "only the cases whose names start with one of these comma-separated prefixes "
                 "(codec_ for the six codecs)");
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
  app.add_option("--codec-prob", e.codec_probability,
                 "with --dataset: the codecs' probability (default: --prob)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--features", e.features, "with --dataset: fbank, spectrogram or raw");
  app.add_option("--consume-hours-per-second", e.consume_hours_per_second,
                 "with --dataset: hours of audio per second the trainer takes (default: "
                 "docs/gpu.md's small-preset step, 32 x 1600 frames in 24.62 ms)")
      ->check(CLI::PositiveNumber);
  int exit_code = 0;
  if (!ParseCommandLine(app, argc, argv, &exit_code)) return exit_code;
  const bool epochs = !e.dataset.empty();
  if (const int refused = RefuseTheOtherModesFlags(app, epochs); refused != 0) return refused;
  if (epochs) {
    e.json = a.json;
    return RunAugmentEpoch(e);
  }

  std::vector<Case> cases = AugmentCases();
  std::string names;
  std::erase_if(cases, [&](const Case& c) {
    names += (names.empty() ? "" : ", ") + c.first;
    return !Wanted(a.only, c.first);
  });
  if (cases.empty()) {
    std::fprintf(stderr, "sluice-bench augment: --only %s matches no case (the cases: %s)\n",
                 a.only.c_str(), names.c_str());
    return 2;
  }
  const size_t n = static_cast<size_t>(a.seconds * a.rate);
  std::vector<std::vector<float>> clips;
  for (int i = 0; i < a.clips; ++i) clips.push_back(SpeechLikeClip(i, a.rate, n));
  features::WaveformSources sources;
  if (Status s = MakeSources(a, n, &sources); !s.ok()) {
    std::fprintf(stderr, "sluice-bench augment: %s\n", s.ToString().c_str());
    return 1;
  }
  return TimeCases(a, cases, clips, sources);
}

}  // namespace sluice::bench
