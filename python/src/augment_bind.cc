// sluice._sluice.augment_*: the waveform augmentation kernels of features/ (gain_clip.h,
// additive_noise.h, reverb.h, band_limit.h, codec_degrade.h, the speed and tempo of
// length_change.h) and their chain (waveform_augment.h) on numpy arrays, for tests and notebooks:
// the same functions the loader runs, so sluice.augment.chain(...) with a record's key equals the
// loader's row.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <set>
#include <string>
#include <vector>

#include "errors.h"
#include "features/augment.h"
#include "features/length_change.h"
#include "features/waveform_augment.h"
#include "kwargs.h"

namespace sluice::python {
namespace {

namespace feat = sluice::features;
using Samples = py::array_t<float, py::array::c_style | py::array::forcecast>;

// A 1-D float32 copy of `x`: the kernels work in place, the caller's array stays as it was.
py::array_t<float> Copy(const Samples& x, const char* what) {
  if (x.ndim() != 1)
    throw py::value_error(std::string(what) + ": expected one channel of samples (1-D), got " +
                          std::to_string(x.ndim()) + " dimensions");
  py::array_t<float> out(x.size());
  std::copy(x.data(), x.data() + x.size(), out.mutable_data());
  return out;
}

feat::WaveformWorkspace& ThreadWorkspace() {
  thread_local feat::WaveformWorkspace ws;
  return ws;
}

// The loader's DecodeScratch keeps one per thread too.
feat::LengthWorkspace& ThreadLengthWorkspace() {
  thread_local feat::LengthWorkspace ws;
  return ws;
}

py::array_t<float> ToArray(const float* x, size_t n) {
  py::array_t<float> out(n);
  std::copy(x, x + n, out.mutable_data());
  return out;
}

// One stage of the length change: speed or tempo alone, on samples in [-1, 1] (full scale 1).
py::array_t<float> ChangeLength(const Samples& x, int sample_rate, feat::LengthChange c) {
  auto y = Copy(x, "waveform");
  const float* out = nullptr;
  size_t n = 0;
  Status st;
  {
    py::gil_scoped_release release;
    st = feat::ChangeLength(y.data(), y.size(), sample_rate, 1.0f, c, &ThreadLengthWorkspace(),
                            &out, &n);
  }
  Check(st);  // raises: needs the GIL
  return out == y.data() ? y : ToArray(out, n);
}

// The bounds of the loader's speed_factors (the options table): outside them a clip's length
// runs away (a factor of 1e-6 asks for a million samples per sample in).
void SpeedFactorRange(double* lo, double* hi) {
  feat::SpeedOptions o;
  VisitFields(o, [&](const FieldInfo& f, const auto&) {
    if (std::string(f.key) == "factors") *lo = f.min, *hi = f.max;
  });
}

py::array_t<float> Speed(const Samples& x, int sample_rate, double factor) {
  if (sample_rate <= 0)
    throw py::value_error("speed: sample_rate " + std::to_string(sample_rate) +
                          " Hz: a rate must be above 0 (the waveform's rate in Hz)");
  double lo = 0, hi = 0;
  SpeedFactorRange(&lo, &hi);
  if (!(factor >= lo && factor <= hi))
    throw py::value_error("speed: factor " + py::str(py::float_(factor)).cast<std::string>() +
                          " is outside [" + py::str(py::float_(lo)).cast<std::string>() + ", " +
                          py::str(py::float_(hi)).cast<std::string>() +
                          "], the loader's speed_factors range (1.1 is 10 % faster)");
  return ChangeLength(x, sample_rate, feat::LengthChange{factor, 1.0});
}

py::array_t<float> Tempo(const Samples& x, int sample_rate, double factor) {
  return ChangeLength(x, sample_rate, feat::LengthChange{1.0, factor});
}

py::array_t<float> Gain(const Samples& x, double db) {
  auto y = Copy(x, "waveform");
  feat::ApplyGain(y.mutable_data(), y.size(), db);
  return y;
}

py::array_t<float> Clipping(const Samples& x, double level) {
  auto y = Copy(x, "waveform");
  feat::ApplyClipping(y.mutable_data(), y.size(), level);
  return y;
}

py::array_t<float> AddNoise(const Samples& x, const Samples& noise, double snr_db, double offset) {
  auto y = Copy(x, "waveform");
  auto n = Copy(noise, "noise");
  if (!feat::AddNoise(y.mutable_data(), y.size(), n.data(), n.size(), snr_db, offset))
    throw py::value_error(
        "add_noise: the waveform or the noise excerpt is silent: no SNR can be "
        "met");
  return y;
}

py::array_t<float> Reverberate(const Samples& x, const Samples& rir, bool keep_level) {
  auto y = Copy(x, "waveform");
  auto h = Copy(rir, "rir");
  feat::ImpulseResponse ir;
  Check(feat::PrepareImpulseResponse(h.data(), h.size(), &ir));
  {
    py::gil_scoped_release release;
    feat::Reverberate(y.mutable_data(), y.size(), ir, keep_level, &ThreadWorkspace().reverb);
  }
  return y;
}

py::array_t<float> BandLimit(const Samples& x, int sample_rate, double rate) {
  auto y = Copy(x, "waveform");
  feat::WaveformWorkspace& ws = ThreadWorkspace();
  Check(feat::BandLimit(y.mutable_data(), y.size(), sample_rate, rate, &ws.resampler, &ws.down,
                        &ws.up));
  return y;
}

py::array_t<float> Codec(const Samples& x, int sample_rate, const std::string& name,
                         double compression) {
  auto y = Copy(x, "waveform");
  feat::Codec c;
  Check(feat::ParseCodec(name, &c));
  Check(feat::CodecRoundTrip(y.mutable_data(), y.size(), sample_rate, c, compression,
                             &ThreadWorkspace().bytes));
  return y;
}

// The chain with the keywords of sluice.Loader (gain_prob, noise_min_snr, codecs, ...).
py::array_t<float> Chain(const Samples& x, int sample_rate, uint64_t seed, uint64_t epoch,
                         uint64_t record, const std::vector<Samples>& noise,
                         const std::vector<Samples>& rirs, const std::vector<Samples>& babble,
                         const std::vector<uint64_t>& babble_records, float full_scale,
                         const py::dict& kwargs) {
  feat::WaveformAugmentOptions o;
  std::set<std::string> unused = KeysOf(kwargs);
  const auto all = [](const FieldInfo&) { return true; };
  ApplyKwargs(kwargs, &o, all, &unused);
  if (!unused.empty()) ThrowIfUnused(unused, "chain", KeywordsOf(&o, all));
  Check(feat::CheckWaveformAugmentOptions(o, ""));
  feat::WaveformSources sources;
  for (const Samples& n : noise) {
    auto c = Copy(n, "noise");
    sources.noise.emplace_back(c.data(), c.data() + c.size());
  }
  for (const Samples& r : rirs) {
    auto c = Copy(r, "rirs");
    sources.rirs.emplace_back();
    Check(feat::PrepareImpulseResponse(c.data(), c.size(), &sources.rirs.back()));
  }
  for (const Samples& b : babble) {
    auto c = Copy(b, "babble");
    sources.babble.emplace_back(c.data(), c.data() + c.size());
  }
  sources.babble_ids = babble_records;
  if (babble_records.empty()) sources.babble_ids.assign(babble.size(), feat::kNotATrainingRecord);
  // The length-changing stage first, as the loader runs it (loader/feature_extractor.cc).
  auto clean = Copy(x, "waveform");
  const float* changed = nullptr;
  size_t n = 0;
  Check(feat::ChangeLength(clean.data(), clean.size(), sample_rate, full_scale,
                           feat::DrawLengthChange(o, seed, epoch, record), &ThreadLengthWorkspace(),
                           &changed, &n));
  auto y = changed == clean.data() ? clean : ToArray(changed, n);
  Check(feat::AugmentWaveform(o, sources, seed, epoch, record, y.mutable_data(), y.size(),
                              sample_rate, full_scale, &ThreadWorkspace()));
  return y;
}

// The codec and compression level the chain draws for a record (None when it draws none): what
// the loader hands libsndfile, so its codec degradation can be redone outside sluice (with
// soundfile, say) at exactly those settings.
py::object CodecDraw(uint64_t seed, uint64_t epoch, uint64_t record, const py::dict& kwargs) {
  feat::WaveformAugmentOptions o;
  std::set<std::string> unused = KeysOf(kwargs);
  const auto all = [](const FieldInfo&) { return true; };
  ApplyKwargs(kwargs, &o, all, &unused);
  if (!unused.empty()) ThrowIfUnused(unused, "codec_draw", KeywordsOf(&o, all));
  Check(feat::CheckWaveformAugmentOptions(o, ""));
  if (o.codec.probability <= 0) return py::none();
  const feat::CodecDraw d = feat::DrawCodec(
      o.codec, feat::WaveformTransformKey(seed, epoch, record, feat::WaveformTransform::kCodec));
  if (!d.apply) return py::none();
  return py::make_tuple(o.codec.codecs[d.codec], d.compression);
}

}  // namespace

void RegisterAugment(py::module_& m) {
  m.def("augment_gain", &Gain, py::arg("waveform"), py::arg("db"));
  m.def("augment_clipping", &Clipping, py::arg("waveform"), py::arg("level"));
  m.def("augment_add_noise", &AddNoise, py::arg("waveform"), py::arg("noise"), py::arg("snr_db"),
        py::arg("offset"));
  m.def("augment_reverberate", &Reverberate, py::arg("waveform"), py::arg("rir"),
        py::arg("keep_level"));
  m.def("augment_band_limit", &BandLimit, py::arg("waveform"), py::arg("sample_rate"),
        py::arg("rate"));
  m.def("augment_codec", &Codec, py::arg("waveform"), py::arg("sample_rate"), py::arg("codec"),
        py::arg("compression"));
  m.def("augment_speed", &Speed, py::arg("waveform"), py::arg("sample_rate"), py::arg("factor"));
  m.def("augment_tempo", &Tempo, py::arg("waveform"), py::arg("sample_rate"), py::arg("factor"));
  m.def("augment_chain", &Chain, py::arg("waveform"), py::arg("sample_rate"), py::arg("seed"),
        py::arg("epoch"), py::arg("record"), py::arg("noise"), py::arg("rirs"), py::arg("babble"),
        py::arg("babble_records"), py::arg("full_scale"), py::arg("options"),
        "The loader's waveform augmentation chain; see sluice.augment.chain.");
  m.def("augment_codec_draw", &CodecDraw, py::arg("seed"), py::arg("epoch"), py::arg("record"),
        py::arg("options"), "The chain's codec draw; see sluice.augment.codec_draw.");
}

}  // namespace sluice::python
