#include "features/tempo.h"

#include <SoundTouch.h>

#include <algorithm>
#include <array>
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

// SoundTouch 2.3.2's flush() pushes the clip's tail out with zeros in pieces of this many
// samples, at most kFlushPieces of them.
constexpr unsigned kFlushPiece = 128;
constexpr int kFlushPieces = 200;

// The full scale SoundTouch is fed at. Its full seek ranks splice candidates by
// (correlation + 0.1) * weight, the correlation growing with the amplitude and 0.1 fixed, so
// the splice points depend on the input's scale: one reference scale (int16's, the loader's
// fbank and raw rows, which kept their bytes) makes them depend on the clip alone.
constexpr float kReferenceScale = 32768.0f;

}  // namespace

size_t TempoLength(size_t n, double factor) {
  if (factor == 1.0) return n;
  return static_cast<size_t>(std::llround(static_cast<double>(n) / factor));
}

struct TempoStretcher::Impl {
  soundtouch::SoundTouch st;
  int sample_rate = 0;
  std::vector<float> scaled;  // one chunk at kReferenceScale, when the input is at another
  std::array<float, kFlushPiece> zeros{};  // the flush's silence, allocated once
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
                               float full_scale, std::vector<float>* out) {
  if (sample_rate <= 0)
    return Status::InvalidArgument("tempo: sample rate " + std::to_string(sample_rate) +
                                   " Hz is not a rate");
  if (!(factor >= 0.1 && factor <= 10))
    return Status::InvalidArgument("tempo: factor " + std::to_string(factor) +
                                   " is outside SoundTouch's [0.1, 10]");
  if (!(full_scale > 0 && std::isfinite(full_scale)))
    return Status::InvalidArgument("tempo: full scale " + std::to_string(full_scale) +
                                   " is not above 0 (1 for [-1, 1] samples, 32768 for int16's)");
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
  const float to_reference = kReferenceScale / full_scale;
  double expected = 0;  // the samples SoundTouch expects out: its samplesExpectedOut
  for (size_t at = 0; at < n; at += kChunk) {
    const size_t k = std::min(kChunk, n - at);
    const float* piece = in + at;
    if (to_reference != 1.0f) {
      impl_->scaled.resize(k);
      for (size_t i = 0; i < k; ++i) impl_->scaled[i] = piece[i] * to_reference;
      piece = impl_->scaled.data();
    }
    st.putSamples(piece, static_cast<unsigned>(k));
    expected += static_cast<double>(k) / factor;
    drain();
  }
  // SoundTouch 2.3.2's flush(), step for step, without its new[]/delete[] of the zeros per
  // call: the samples still expected (its own count, the sum of each piece's n / tempo, rounded
  // as it rounds), zero pieces until the output holds them, the output cut to them. Its last
  // step, clearing the input, is the next clip's clear().
  const long received = static_cast<long>(out->size());
  const size_t still =
      static_cast<size_t>(std::max(0L, static_cast<long>(expected + 0.5) - received));
  for (int i = 0; still > st.numSamples() && i < kFlushPieces; ++i)
    st.putSamples(impl_->zeros.data(), kFlushPiece);
  drain();
  out->resize(std::min(out->size(), static_cast<size_t>(received) + still));
  if (to_reference != 1.0f) {
    const float from_reference = full_scale / kReferenceScale;
    for (float& v : *out) v *= from_reference;
  }
  // Cut or pad to the planned length (SoundTouch 2.3.2 gives it already; a later one may not).
  out->resize(want, 0.0f);
  return Status::OK();
}

}  // namespace sluice::features
