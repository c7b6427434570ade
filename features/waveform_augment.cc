#include "features/waveform_augment.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "base/random.h"
#include "features/augment.h"

namespace sluice::features {
namespace {

constexpr uint64_t kWaveformSalt = 0x57415645464f524dull;  // "WAVEFORM"

Status CheckRange(double lo, double hi, const std::string& name) {
  if (!(lo <= hi)) {
    return Status::InvalidArgument(name + ": the minimum " + std::to_string(lo) +
                                   " is above the maximum " + std::to_string(hi));
  }
  return Status::OK();
}

Status CheckProbability(double p, const std::string& name) {
  if (!(p >= 0.0 && p <= 1.0)) {
    return Status::InvalidArgument(name + ".probability: " + std::to_string(p) +
                                   " is outside [0, 1]");
  }
  return Status::OK();
}

}  // namespace

uint64_t WaveformTransformKey(uint64_t seed, uint64_t epoch, uint64_t record_id,
                              WaveformTransform t) {
  return Mix64(StreamKey(seed ^ kWaveformSalt, epoch, record_id) ^
               (static_cast<uint64_t>(t) + 1) * 0x9e3779b97f4a7c15ull);
}

double DrawSpeedFactor(const WaveformAugmentOptions& o, uint64_t seed, uint64_t epoch,
                       uint64_t record_id) {
  const SpeedOptions& s = o.speed;
  if (!(s.probability > 0) || s.factors.empty()) return 1.0;
  if (s.probability < 1) {
    Rng rng(WaveformTransformKey(seed, epoch, record_id, WaveformTransform::kSpeed));
    if (!(rng.Uniform() < s.probability)) return 1.0;
  }
  // The factor by the older speed perturbation's own key and rule (augment.cc), without copying
  // the factors per record.
  Rng rng(SpeedFactorKey(seed, epoch, record_id));
  return s
      .factors[static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(s.factors.size()) - 1))];
}

double DrawTempoFactor(const WaveformAugmentOptions& o, uint64_t seed, uint64_t epoch,
                       uint64_t record_id) {
  const TempoOptions& t = o.tempo;
  if (!(t.probability > 0) || t.factors.empty()) return 1.0;
  Rng rng(WaveformTransformKey(seed, epoch, record_id, WaveformTransform::kTempo));
  const bool apply = rng.Uniform() < t.probability;
  const double factor =
      t.factors[static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(t.factors.size()) - 1))];
  return apply ? factor : 1.0;
}

bool WaveformAugmentEnabled(const WaveformAugmentOptions& o) {
  return o.reverb.probability > 0 || o.noise.probability > 0 || o.babble.probability > 0 ||
         o.gain.probability > 0 || o.clipping.probability > 0 || o.band_limit.probability > 0 ||
         o.codec.probability > 0;
}

Status CheckWaveformAugmentOptions(const WaveformAugmentOptions& o, const std::string& prefix) {
  SLUICE_RETURN_IF_ERROR(CheckProbability(o.speed.probability, prefix + "speed"));
  for (double f : o.speed.factors) {
    if (!(f > 0) || !std::isfinite(f))
      return Status::InvalidArgument(prefix + "speed.factors: " + std::to_string(f) +
                                     " is not a speed factor (above 0)");
  }
  if (o.speed.probability > 0 && o.speed.factors.empty())
    return Status::InvalidArgument(prefix +
                                   "speed.factors: empty while speed.probability is above 0 "
                                   "(give factors, or set the probability to 0)");
  SLUICE_RETURN_IF_ERROR(CheckProbability(o.tempo.probability, prefix + "tempo"));
  for (double f : o.tempo.factors) {
    if (!(f >= 0.1 && f <= 10))
      return Status::InvalidArgument(prefix + "tempo.factors: " + std::to_string(f) +
                                     " is outside [0.1, 10] (SoundTouch's tempo range)");
  }
  if (o.tempo.probability > 0 && o.tempo.factors.empty())
    return Status::InvalidArgument(prefix +
                                   "tempo.factors: empty while tempo.probability is above 0 "
                                   "(give factors, or set the probability to 0)");
  SLUICE_RETURN_IF_ERROR(CheckProbability(o.reverb.probability, prefix + "reverb"));
  SLUICE_RETURN_IF_ERROR(CheckProbability(o.noise.probability, prefix + "noise"));
  SLUICE_RETURN_IF_ERROR(CheckProbability(o.babble.probability, prefix + "babble"));
  SLUICE_RETURN_IF_ERROR(CheckProbability(o.gain.probability, prefix + "gain"));
  SLUICE_RETURN_IF_ERROR(CheckProbability(o.clipping.probability, prefix + "clipping"));
  SLUICE_RETURN_IF_ERROR(CheckProbability(o.band_limit.probability, prefix + "band_limit"));
  SLUICE_RETURN_IF_ERROR(CheckProbability(o.codec.probability, prefix + "codec"));
  SLUICE_RETURN_IF_ERROR(
      CheckRange(o.noise.min_snr_db, o.noise.max_snr_db, prefix + "noise.min_snr_db/max_snr_db"));
  SLUICE_RETURN_IF_ERROR(CheckRange(o.babble.min_snr_db, o.babble.max_snr_db,
                                    prefix + "babble.min_snr_db/max_snr_db"));
  SLUICE_RETURN_IF_ERROR(CheckRange(o.babble.min_speakers, o.babble.max_speakers,
                                    prefix + "babble.min_speakers/max_speakers"));
  if (o.babble.min_speakers < 1 || o.babble.max_speakers > kMaxBabbleSpeakers)
    return Status::InvalidArgument(prefix + "babble.min_speakers/max_speakers: outside [1, " +
                                   std::to_string(kMaxBabbleSpeakers) + "]");
  if (o.babble.pool_size < 1)
    return Status::InvalidArgument(prefix +
                                   "babble.pool_size: " + std::to_string(o.babble.pool_size) +
                                   " utterances; at least 1 to draw from");
  SLUICE_RETURN_IF_ERROR(CheckRange(o.gain.min_db, o.gain.max_db, prefix + "gain.min_db/max_db"));
  SLUICE_RETURN_IF_ERROR(CheckRange(o.clipping.min_level, o.clipping.max_level,
                                    prefix + "clipping.min_level/max_level"));
  if (o.clipping.min_level <= 0) {
    return Status::InvalidArgument(prefix +
                                   "clipping.min_level: must be above 0 (0 silences "
                                   "the clip)");
  }
  SLUICE_RETURN_IF_ERROR(CheckRange(o.codec.min_compression, o.codec.max_compression,
                                    prefix + "codec.min_compression/max_compression"));
  for (double r : o.band_limit.rates) {
    if (!(r > 0)) {
      return Status::InvalidArgument(prefix + "band_limit.rates: " + std::to_string(r) +
                                     " Hz is not a rate");
    }
  }
  for (const std::string& name : o.codec.codecs) {
    Codec c;
    SLUICE_RETURN_IF_ERROR(Prefixed(ParseCodec(name, &c), prefix + "codec.codecs"));
  }
  // With nothing to draw from, the transform would be on and never happen.
  if (o.band_limit.probability > 0 && o.band_limit.rates.empty())
    return Status::InvalidArgument(prefix +
                                   "band_limit.rates: empty while band_limit.probability is "
                                   "above 0 (give rates, or set the probability to 0)");
  if (o.codec.probability > 0 && o.codec.codecs.empty())
    return Status::InvalidArgument(prefix +
                                   "codec.codecs: empty while codec.probability is above 0 "
                                   "(give codecs, or set the probability to 0)");
  return Status::OK();
}

Status CheckWaveformAugmentAtRate(const WaveformAugmentOptions& o, int sample_rate,
                                  const std::string& prefix) {
  if (!(o.codec.probability > 0)) return Status::OK();
  // A codec libsndfile cannot encode at this rate (Opus: 8, 12, 16, 24, 48 kHz) would stop the
  // epoch at the first record that draws it; one round trip of silence finds it now.
  std::vector<float> silence(1024, 0.0f);
  std::vector<uint8_t> bytes;
  for (const std::string& name : o.codec.codecs) {
    Codec c;
    SLUICE_RETURN_IF_ERROR(ParseCodec(name, &c));
    Status st = CodecRoundTrip(silence.data(), silence.size(), sample_rate, c,
                               o.codec.min_compression, &bytes);
    if (!st.ok())
      return Status::InvalidArgument(prefix + "codec.codecs: " + name + " at " +
                                     std::to_string(sample_rate) + " Hz: " + st.message() +
                                     " (drop it from the list for this dataset)");
  }
  return Status::OK();
}

Status AugmentWaveform(const WaveformAugmentOptions& o, const WaveformSources& sources,
                       uint64_t seed, uint64_t epoch, uint64_t record_id, float* x, size_t n,
                       int sample_rate, float full_scale, WaveformWorkspace* ws) {
  // A transform that is on draws from clips: none would silently switch it off.
  if (o.reverb.probability > 0 && sources.rirs.empty())
    return Status::InvalidArgument(
        "waveform augmentation: reverberation is on, with no impulse "
        "responses to draw from");
  if (o.noise.probability > 0 && sources.noise.empty())
    return Status::InvalidArgument(
        "waveform augmentation: additive noise is on, with no noise "
        "clips to draw from");
  if (o.babble.probability > 0 && sources.babble.size() != sources.babble_ids.size())
    return Status::InvalidArgument("waveform augmentation: the babble pool has " +
                                   std::to_string(sources.babble.size()) + " clips and " +
                                   std::to_string(sources.babble_ids.size()) + " record ids");
  if (o.babble.probability > 0 && sources.babble.empty())
    return Status::InvalidArgument(
        "waveform augmentation: babble is on, with no utterances to draw from");
  if (n == 0) return Status::OK();
  auto key = [&](WaveformTransform t) { return WaveformTransformKey(seed, epoch, record_id, t); };
  if (o.reverb.probability > 0) {
    const ReverbDraw d = DrawReverb(o.reverb, key(WaveformTransform::kReverb), sources.rirs.size());
    if (d.apply) Reverberate(x, n, sources.rirs[d.clip], o.reverb.keep_level, &ws->reverb);
  }
  if (o.noise.probability > 0) {
    const NoiseDraw d = DrawNoise(o.noise, key(WaveformTransform::kNoise), sources.noise.size());
    if (d.apply) {
      const std::vector<float>& clip = sources.noise[d.clip];
      AddNoise(x, n, clip.data(), clip.size(), d.snr_db, d.offset);
    }
  }
  if (o.babble.probability > 0) {
    const BabbleDraw d =
        DrawBabble(o.babble, key(WaveformTransform::kBabble), sources.babble_ids, record_id);
    if (d.apply) AddBabble(x, n, sources.babble, d, &ws->babble);
  }
  if (o.gain.probability > 0) {
    const GainDraw d = DrawGain(o.gain, key(WaveformTransform::kGain));
    if (d.apply) ApplyGain(x, n, d.db);
  }
  if (o.clipping.probability > 0) {
    const ClippingDraw d = DrawClipping(o.clipping, key(WaveformTransform::kClipping));
    if (d.apply) ApplyClipping(x, n, d.level);
  }
  if (o.band_limit.probability > 0) {
    const BandLimitDraw d = DrawBandLimit(o.band_limit, key(WaveformTransform::kBandLimit));
    if (d.apply) {
      SLUICE_RETURN_IF_ERROR(
          BandLimit(x, n, sample_rate, d.rate, &ws->resampler, &ws->down, &ws->up));
    }
  }
  if (o.codec.probability > 0) {
    const CodecDraw d = DrawCodec(o.codec, key(WaveformTransform::kCodec));
    if (d.apply) {
      Codec c;
      SLUICE_RETURN_IF_ERROR(ParseCodec(o.codec.codecs[d.codec], &c));
      // The codecs take [-1, 1] and clip beyond it: int16-scaled audio goes there and back.
      const float to_unit = 1.0f / full_scale;
      for (size_t i = 0; i < n; ++i) x[i] *= to_unit;
      SLUICE_RETURN_IF_ERROR(CodecRoundTrip(x, n, sample_rate, c, d.compression, &ws->bytes));
      for (size_t i = 0; i < n; ++i) x[i] *= full_scale;
    }
  }
  return Status::OK();
}

}  // namespace sluice::features
