// sluice._sluice.fbank / spectrogram: the feature computers of features/ on one waveform, with
// the option names and resolution of sluice-features (tools/common/feature_options.h), so the
// numbers equal the CLI's for the same samples.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "base/random.h"
#include "errors.h"
#include "features/fbank.h"
#include "features/spectrogram.h"
#include "features/workspace.h"
#include "kwargs.h"
#include "loader/feature_args.h"

namespace sluice::python {

namespace {

namespace feat = sluice::features;
using Samples = py::array_t<float, py::array::c_style | py::array::forcecast>;

// The shared keywords (frame_length, frame_shift, window_type, snip_edges) and one kind's table,
// as arguments checked for type and range; MakeFeatureConfig checks them at the rate.
loader::FeatureArgs ParseFeatureArgs(const char* kind, const char* function, int sample_rate,
                                     const py::dict& kwargs) {
  loader::FeatureArgs a;
  a.kind = kind;
  std::set<std::string> unused = KeysOf(kwargs);
  const char* other = std::strcmp(kind, "fbank") == 0 ? "spectrogram" : "fbank";
  const auto keep = [&](const FieldInfo& f) { return std::strcmp(f.key, other) != 0; };
  ApplyKwargs(kwargs, &a, keep, &unused);
  if (!unused.empty()) {
    std::vector<std::string> accepted = KeywordsOf(&a, keep);
    if (std::strcmp(kind, "fbank") == 0) accepted.emplace_back("seed");  // features.fbank's own
    ThrowIfUnused(unused, function, accepted);
  }
  if (sample_rate <= 0)
    throw py::value_error("sample_rate=" + std::to_string(sample_rate) + ": must be positive");
  return a;
}

// The computer of each set of options is built once and kept: building one, and checking its
// options (FbankComputer::Validate builds the mel banks too), is most of a short clip's cost
// (milliseconds for fbank's mel banks, the fbank of a few seconds of audio), and a caller computes
// clip after clip with the same options. The computers are immutable and thread-safe;
// kMaxComputers bounds the cache for a caller who sweeps options.
constexpr size_t kMaxComputers = 16;

// The options' bytes, field by field through their table (base/fields.h): equal keys, equal
// computers.
template <class Options>
std::string KeyOf(const Options& o) {
  std::string key;
  VisitFields(o, [&](const FieldInfo&, const auto& m) {
    using T = std::remove_cvref_t<decltype(m)>;
    static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T>, "a field the key cannot hold");
    key.append(reinterpret_cast<const char*>(&m), sizeof(m));
  });
  return key;
}

// The computer of `a` at `sample_rate`: the cached one for the same resolved options, else one
// made after MakeFeatureConfig's checks (ValueError naming the option).
template <class Computer>
std::shared_ptr<const Computer> CachedComputer(const loader::FeatureArgs& a, int sample_rate) {
  constexpr bool kFbank = std::is_same_v<Computer, feat::FbankComputer>;
  loader::FeatureConfig c;
  Status s = loader::ResolveFeatureArgs(a, &c);  // what MakeFeatureConfig does before its checks
  if (!s.ok()) throw py::value_error(s.message());
  c.fbank.sample_frequency = static_cast<float>(sample_rate);
  c.spectrogram.sample_rate = sample_rate;
  const std::string key = kFbank ? KeyOf(c.fbank) : KeyOf(c.spectrogram);
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const Computer>> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  s = loader::MakeFeatureConfig(a, sample_rate, &c);
  if (!s.ok()) throw py::value_error(s.message());
  std::shared_ptr<const Computer> computer;
  if constexpr (kFbank) {
    computer = std::make_shared<const Computer>(c.fbank);
  } else {
    computer = std::make_shared<const Computer>(c.spectrogram);
  }
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= kMaxComputers) cache.clear();
  cache[key] = computer;
  return computer;
}

// Per Python thread that computes (the GIL is released while it does): the scaled copy of the
// samples and the computer's scratch, reused from call to call rather than allocated (a 16 s
// clip is 1 MiB of samples, fresh pages on every call otherwise).
struct Scratch {
  std::vector<float> samples;
  feat::Workspace ws;
};
Scratch& ThreadScratch() {
  thread_local Scratch s;
  return s;
}

template <class Computer>
py::array_t<float> Run(const Computer& c, const Samples& wav, float scale, int sample_rate,
                       uint64_t dither_key) {
  if (wav.ndim() != 1)
    throw py::value_error("waveform: expected one channel of samples (1-D), got " +
                          std::to_string(wav.ndim()) + " dimensions");
  const size_t n = static_cast<size_t>(wav.size());
  const int64_t frames = c.NumFrames(n);
  if (frames <= 0)
    throw py::value_error("waveform: too short for one frame (" + std::to_string(n) +
                          " samples at " + std::to_string(sample_rate) + " Hz)");
  py::array_t<float> out({static_cast<py::ssize_t>(frames), static_cast<py::ssize_t>(c.Dim())});
  float* dst = out.mutable_data();
  const float* src = wav.data();
  {
    // `wav` and `out` are held by this frame: their memory stays valid without the GIL.
    py::gil_scoped_release release;
    Scratch& s = ThreadScratch();
    const float* x = src;
    if (scale != 1.0f) {
      s.samples.resize(n);
      for (size_t i = 0; i < n; ++i) s.samples[i] = src[i] * scale;
      x = s.samples.data();
    }
    if constexpr (std::is_same_v<Computer, feat::FbankComputer>) {
      c.Compute(x, n, &s.ws, dst, dither_key);
    } else {
      c.Compute(x, n, &s.ws, dst);
    }
  }
  return out;
}

py::array_t<float> Fbank(const Samples& wav, int sample_rate, uint64_t seed,
                         const py::dict& kwargs) {
  const auto computer = CachedComputer<feat::FbankComputer>(
      ParseFeatureArgs("fbank", "fbank", sample_rate, kwargs), sample_rate);
  // Kaldi's int16 scale, as sluice-features and the loader feed it (features/fbank.h).
  // sluice-features' dither key for its one file: StreamKey(seed, 0, 0).
  return Run(*computer, wav, 32768.0f, sample_rate, StreamKey(seed, 0, 0));
}

py::array_t<float> Spectrogram(const Samples& wav, int sample_rate, const py::dict& kwargs) {
  const auto computer = CachedComputer<feat::SpectrogramComputer>(
      ParseFeatureArgs("spectrogram", "spectrogram", sample_rate, kwargs), sample_rate);
  return Run(*computer, wav, 1.0f, sample_rate, 0);
}

}  // namespace

void RegisterFeatures(py::module_& m) {
  m.def("fbank", &Fbank, py::arg("waveform"), py::arg("sample_rate"), py::arg("seed"),
        py::arg("options"), "Kaldi fbank of samples in [-1, 1]; see sluice.features.fbank.");
  m.def("spectrogram", &Spectrogram, py::arg("waveform"), py::arg("sample_rate"),
        py::arg("options"), "DeepSpeech2 spectrogram; see sluice.features.spectrogram.");
}

}  // namespace sluice::python
