#include "features/tempo.h"

#include <SoundTouch.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace sluice::features {
namespace {

// WSOLA's windows, fixed rather than SoundTouch's automatic ones (which follow the tempo): the
// values SoundTouch's documentation suggests for speech. Quick seek off: its shortcut search
// finds other splice points than the full one.
constexpr int kSequenceMs = 40;
constexpr int kSeekWindowMs = 15;
constexpr int kOverlapMs = 8;

// SoundTouch processes what it is given at once and holds it: the clip goes in in pieces of this
// many samples, so that its buffers stay small whatever the clip's length.
constexpr size_t kChunk = 16384;

}  // namespace

size_t TempoLength(size_t n, double factor) {
  if (factor == 1.0) return n;
  return static_cast<size_t>(std::llround(static_cast<double>(n) / factor));
}

struct TempoStretcher::Impl {
  soundtouch::SoundTouch st;
  int sample_rate = 0;
};

TempoStretcher::TempoStretcher() : impl_(std::make_unique<Impl>()) {
  soundtouch::SoundTouch& st = impl_->st;
  st.setChannels(1);
  st.setSetting(SETTING_USE_QUICKSEEK, 0);
  st.setSetting(SETTING_SEQUENCE_MS, kSequenceMs);
  st.setSetting(SETTING_SEEKWINDOW_MS, kSeekWindowMs);
  st.setSetting(SETTING_OVERLAP_MS, kOverlapMs);
}

TempoStretcher::~TempoStretcher() = default;

Status TempoStretcher::Process(const float* in, size_t n, int sample_rate, double factor,
                               std::vector<float>* out) {
  if (sample_rate <= 0)
    return Status::InvalidArgument("tempo: sample rate " + std::to_string(sample_rate) +
                                   " Hz is not a rate");
  if (!(factor >= 0.1 && factor <= 10))
    return Status::InvalidArgument("tempo: factor " + std::to_string(factor) +
                                   " is outside SoundTouch's [0.1, 10]");
  const size_t want = TempoLength(n, factor);
  if (factor == 1.0) {
    out->assign(in, in + n);
    return Status::OK();
  }
  soundtouch::SoundTouch& st = impl_->st;
  if (impl_->sample_rate != sample_rate) {
    st.setSampleRate(static_cast<unsigned>(sample_rate));
    impl_->sample_rate = sample_rate;
  }
  // clear() empties every buffer and restarts the stream (its first sequence is taken as is),
  // so the previous clip leaves nothing behind.
  st.clear();
  st.setTempo(factor);
  out->clear();
  auto drain = [&] {
    const size_t ready = st.numSamples();
    if (ready == 0) return;
    const size_t at = out->size();
    out->resize(at + ready);
    out->resize(at + st.receiveSamples(out->data() + at, static_cast<unsigned>(ready)));
  };
  for (size_t at = 0; at < n; at += kChunk) {
    st.putSamples(in + at, static_cast<unsigned>(std::min(kChunk, n - at)));
    drain();
  }
  st.flush();
  drain();
  // Cut or pad to the planned length (SoundTouch 2.3.2 gives it already; a later one may not).
  out->resize(want, 0.0f);
  return Status::OK();
}

}  // namespace sluice::features
