// sluice._sluice.load_file / load_bytes: one audio file decoded (and resampled) by sluice's own
// libsndfile + soxr path (features/audio.h, features/resample.h), the samples shardify stores,
// as a [channels, frames] float32 array. sluice.load (python/sluice/audio.py) is the API.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "errors.h"
#include "features/audio.h"
#include "features/resample.h"

namespace sluice::python {
namespace {

namespace py = pybind11;
namespace feat = sluice::features;

// `channel` values besides a channel's index.
constexpr int kAllChannels = -1;
constexpr int kMeanOfChannels = -2;

struct Request {
  double offset = 0;     // seconds
  double duration = -1;  // seconds; < 0: to the end
  int channel = kAllChannels;
  int sample_rate = 0;  // 0: the file's own
};

// Planar [channels, frames] samples and their rate: what the array is made from.
struct Planar {
  std::vector<float> samples;
  size_t channels = 0;
  int sample_rate = 0;
};

feat::DecodeOptions DecodeOptionsOf(const Request& r) {
  feat::DecodeOptions o;
  o.offset_seconds = r.offset;
  o.duration_seconds = r.duration;
  // The downmix is the decoder's (what shards store); one channel is picked from all of them.
  o.keep_channels = r.channel != kMeanOfChannels;
  return o;
}

// Picks the channel(s), deinterleaves and resamples `d` into *out. Runs without the GIL.
Status Arrange(const std::string& name, const Request& r, feat::DecodedAudio* d, Planar* out) {
  const size_t in_ch = r.channel == kMeanOfChannels ? 1 : static_cast<size_t>(d->channels_in);
  const size_t frames = d->samples.size() / in_ch;
  if (r.channel >= 0 && static_cast<size_t>(r.channel) >= in_ch)
    return Status::InvalidArgument(name + ": channel=" + std::to_string(r.channel) +
                                   ", but the audio has " + std::to_string(in_ch) + " channel" +
                                   (in_ch == 1 ? "" : "s") + " (0 to " + std::to_string(in_ch - 1) +
                                   ")");
  std::vector<std::vector<float>> planes;
  if (in_ch == 1) {
    planes.push_back(std::move(d->samples));
  } else {
    const size_t first = r.channel >= 0 ? static_cast<size_t>(r.channel) : 0;
    const size_t last = r.channel >= 0 ? first + 1 : in_ch;
    for (size_t c = first; c < last; ++c) {
      std::vector<float> p(frames);
      const float* src = d->samples.data() + c;
      for (size_t i = 0; i < frames; ++i) p[i] = src[i * in_ch];
      planes.push_back(std::move(p));
    }
  }
  out->sample_rate = d->sample_rate;
  if (r.sample_rate > 0 && r.sample_rate != d->sample_rate) {
    // One engine cache per thread: loading clip after clip at one rate pair builds soxr's
    // filters once (features/resample.h).
    thread_local feat::Resampler resampler;
    std::vector<float> resampled;
    for (auto& p : planes) {
      Status st = resampler.Process(p.data(), p.size(), d->sample_rate, r.sample_rate, &resampled);
      if (!st.ok())
        return Prefixed(st, name + ": resampling to " + std::to_string(r.sample_rate) + " Hz");
      p.swap(resampled);
    }
    out->sample_rate = r.sample_rate;
  }
  out->channels = planes.size();
  if (planes.size() == 1) {
    out->samples = std::move(planes[0]);
  } else {
    const size_t n = planes[0].size();
    out->samples.resize(n * planes.size());
    for (size_t c = 0; c < planes.size(); ++c)
      std::memcpy(out->samples.data() + c * n, planes[c].data(), n * sizeof(float));
  }
  return Status::OK();
}

// (array [channels, frames] float32 owning the samples, sample_rate).
py::tuple ToPython(Planar&& p) {
  auto* owned = new std::vector<float>(std::move(p.samples));
  py::capsule free_when_done(owned, [](void* v) { delete static_cast<std::vector<float>*>(v); });
  const auto channels = static_cast<py::ssize_t>(p.channels);
  const auto frames = static_cast<py::ssize_t>(owned->size() / p.channels);
  py::array_t<float> a({channels, frames}, owned->data(), free_when_done);
  return py::make_tuple(std::move(a), p.sample_rate);
}

Request MakeRequest(double offset, double duration, int channel, int sample_rate) {
  if (channel < kMeanOfChannels) throw py::value_error("channel: must be >= 0");
  if (sample_rate < 0) throw py::value_error("sample_rate: must be positive");
  return Request{offset, duration, channel, sample_rate};
}

py::tuple LoadFile(const std::string& path, double offset, double duration, int channel,
                   int sample_rate) {
  const Request r = MakeRequest(offset, duration, channel, sample_rate);
  Planar p;
  Status st;
  {
    py::gil_scoped_release unlocked;
    feat::DecodedAudio d;
    st = feat::DecodeFile(path, DecodeOptionsOf(r), &d);
    if (st.ok()) st = Arrange(path, r, &d, &p);
  }
  Check(st);
  return ToPython(std::move(p));
}

py::tuple LoadBytes(const py::buffer& data, const std::string& name, double offset, double duration,
                    int channel, int sample_rate) {
  const Request r = MakeRequest(offset, duration, channel, sample_rate);
  // Held until the call returns: the bytes stay valid while the GIL is released.
  const py::buffer_info view = data.request();
  if (view.ndim > 1 && view.strides.back() != view.itemsize)
    throw py::value_error(name + ": the buffer must be contiguous");
  const auto size = static_cast<size_t>(view.size * view.itemsize);
  Planar p;
  Status st;
  {
    py::gil_scoped_release unlocked;
    feat::DecodedAudio d;
    st = feat::DecodeMemory(view.ptr, size, name, DecodeOptionsOf(r), &d);
    if (st.ok()) st = Arrange(name, r, &d, &p);
  }
  Check(st);
  return ToPython(std::move(p));
}

}  // namespace

void RegisterLoad(py::module_& m) {
  m.attr("LOAD_ALL_CHANNELS") = kAllChannels;
  m.attr("LOAD_MEAN_OF_CHANNELS") = kMeanOfChannels;
  m.def("load_file", &LoadFile, py::arg("path"), py::arg("offset"), py::arg("duration"),
        py::arg("channel"), py::arg("sample_rate"),
        "(float32 [channels, frames], rate) of an audio file; sluice.load is the API.");
  m.def("load_bytes", &LoadBytes, py::arg("data"), py::arg("name"), py::arg("offset"),
        py::arg("duration"), py::arg("channel"), py::arg("sample_rate"),
        "(float32 [channels, frames], rate) of an encoded file in memory; sluice.load is the "
        "API.");
}

}  // namespace sluice::python
