// sluice._sluice.fbank / spectrogram: the feature computers of features/ on one waveform, with
// the option names and resolution of sluice-features (tools/common/feature_options.h), so the
// numbers equal the CLI's for the same samples.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstring>
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

// The shared keywords (frame_length, frame_shift, window_type, snip_edges) and one kind's table.
loader::FeatureConfig ParseFeatureOptions(const char* kind, const char* function, int sample_rate,
                                          const py::dict& kwargs) {
  loader::FeatureArgs a;
  a.kind = kind;
  std::set<std::string> unused = KeysOf(kwargs);
  const char* other = std::strcmp(kind, "fbank") == 0 ? "spectrogram" : "fbank";
  ApplyKwargs(
      kwargs, &a, [&](const FieldInfo& f) { return std::strcmp(f.key, other) != 0; }, &unused);
  ThrowIfUnused(unused, function);
  if (sample_rate <= 0)
    throw py::value_error("sample_rate=" + std::to_string(sample_rate) + ": must be positive");
  loader::FeatureConfig c;
  const Status s = loader::MakeFeatureConfig(a, sample_rate, &c);
  if (!s.ok()) throw py::value_error(s.message());
  return c;
}

std::vector<float> TakeSamples(const Samples& wav, float scale) {
  if (wav.ndim() != 1)
    throw py::value_error("waveform: expected one channel of samples (1-D), got " +
                          std::to_string(wav.ndim()) + " dimensions");
  std::vector<float> x(wav.data(), wav.data() + wav.size());
  if (scale != 1.0f)
    for (float& v : x) v *= scale;
  return x;
}

template <class Computer>
py::array_t<float> Run(const Computer& c, const std::vector<float>& x, int sample_rate,
                       uint64_t dither_key) {
  const int64_t frames = c.NumFrames(x.size());
  if (frames <= 0)
    throw py::value_error("waveform: too short for one frame (" + std::to_string(x.size()) +
                          " samples at " + std::to_string(sample_rate) + " Hz)");
  py::array_t<float> out({static_cast<py::ssize_t>(frames), static_cast<py::ssize_t>(c.Dim())});
  float* dst = out.mutable_data();
  {
    py::gil_scoped_release release;
    feat::Workspace ws;
    if constexpr (std::is_same_v<Computer, feat::FbankComputer>) {
      c.Compute(x.data(), x.size(), &ws, dst, dither_key);
    } else {
      c.Compute(x.data(), x.size(), &ws, dst);
    }
  }
  return out;
}

py::array_t<float> Fbank(const Samples& wav, int sample_rate, uint64_t seed,
                         const py::dict& kwargs) {
  const loader::FeatureConfig c = ParseFeatureOptions("fbank", "fbank", sample_rate, kwargs);
  // Kaldi's int16 scale, as sluice-features and the loader feed it (features/fbank.h).
  const std::vector<float> x = TakeSamples(wav, 32768.0f);
  const feat::FbankComputer computer(c.fbank);
  // sluice-features' dither key for its one file: StreamKey(seed, 0, 0).
  return Run(computer, x, sample_rate, StreamKey(seed, 0, 0));
}

py::array_t<float> Spectrogram(const Samples& wav, int sample_rate, const py::dict& kwargs) {
  const loader::FeatureConfig c =
      ParseFeatureOptions("spectrogram", "spectrogram", sample_rate, kwargs);
  const std::vector<float> x = TakeSamples(wav, 1.0f);
  const feat::SpectrogramComputer computer(c.spectrogram);
  return Run(computer, x, sample_rate, 0);
}

}  // namespace

void RegisterFeatures(py::module_& m) {
  m.def("fbank", &Fbank, py::arg("waveform"), py::arg("sample_rate"), py::arg("seed"),
        py::arg("options"), "Kaldi fbank of samples in [-1, 1]; see sluice.features.fbank.");
  m.def("spectrogram", &Spectrogram, py::arg("waveform"), py::arg("sample_rate"),
        py::arg("options"), "DeepSpeech2 spectrogram; see sluice.features.spectrogram.");
}

}  // namespace sluice::python
