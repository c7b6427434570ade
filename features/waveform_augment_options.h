// The options of the waveform augmentation chain (waveform_augment.h): one struct per transform,
// each with the probability that a record gets it and the ranges its parameters are drawn from,
// and their tables (base/fields.h). Apart from the kernels so that the loader's options reach the
// options alone, not FFTW, soxr or libsndfile.
#pragma once

#include <string>
#include <vector>

#include "../base/fields.h"

namespace sluice::features {

// Speed perturbation as Kaldi/ESPnet recipes do it (sox "speed"): the clip resampled from
// rate * factor to rate, so tempo and pitch change together and the length changes; factor drawn
// with equal probability from `factors` with the key of features/augment.h's PickSpeedFactor.
// The chain's first transform: the loader runs it before the others and plans each epoch with
// the perturbed lengths. At probability 1 it is LoaderOptions' older speed_perturb =
// true with speed_perturb_options.factors, batch for batch.
struct SpeedOptions {
  double probability = 0.0;                       // 0 = off
  std::vector<double> factors = {0.9, 1.0, 1.1};  // speed factors, drawn with equal probability
};

// Tempo perturbation: the clip played `factor` times faster at the same pitch (WSOLA through
// libsoundtouch, tempo.h), so the length changes as speed's does: round(n / factor) samples.
// Factor drawn with equal probability from `factors` with the chain's tempo key. Speed and tempo
// are the chain's one length-changing stage (length_change.h): drawn independently, a record may
// get both, speed first; the plan counts the length after both.
struct TempoOptions {
  double probability = 0.0;                       // 0 = off
  std::vector<double> factors = {0.9, 1.0, 1.1};  // tempo factors, drawn with equal probability
};

// Gain: the clip times 10^(dB / 20), dB uniform in [min_db, max_db].
struct GainOptions {
  double probability = 0.0;  // of applying it to a record; 0 = off
  double min_db = -6.0;      // dB
  double max_db = 6.0;       // dB
};

// Hard clipping at +-level * (the clip's peak |sample|), level uniform in [min_level, max_level]:
// relative to the peak, so a quiet recording is clipped as much as a loud one.
struct ClippingOptions {
  double probability = 0.0;
  double min_level = 0.3;  // fraction of the peak
  double max_level = 0.9;
};

// Bandwidth limit: resample (soxr) down to a rate drawn with equal probability from `rates`, and
// back up to the clip's rate, which removes what lies above half the drawn rate (telephone and
// old-recording bandwidths). Rates at or above the clip's rate leave it unchanged.
struct BandLimitOptions {
  double probability = 0.0;
  std::vector<double> rates = {8000, 11025, 12000};  // Hz
};

// Additive noise from a noise dataset at a signal-to-noise ratio uniform in [min_snr_db,
// max_snr_db]: a random excerpt of one clip, looped when shorter than the utterance.
struct NoiseOptions {
  double probability = 0.0;
  double min_snr_db = 5.0;   // dB
  double max_snr_db = 20.0;  // dB
};

// The most speakers one babble mixes (babble.h keeps the picks in a fixed array).
inline constexpr int kMaxBabbleSpeakers = 32;

// Babble: K other utterances of the training data (K uniform in [min_speakers, max_speakers]),
// each a random excerpt looped or cut to the utterance's length and brought to the same energy,
// summed and added at an SNR uniform in [min_snr_db, max_snr_db]. They come from a pool of
// pool_size utterances held in memory: evenly spaced over the training data (or over
// babble_data when given), the same for every seed, epoch and rank; never the record itself.
struct BabbleOptions {
  double probability = 0.0;
  double min_snr_db = 10.0;  // dB
  double max_snr_db = 20.0;  // dB
  int min_speakers = 3;
  int max_speakers = 7;
  int pool_size = 100;  // utterances read into memory at Open (their bytes join memory_budget)
};

// Reverberation: convolution with an impulse response from an RIR dataset, shifted by the
// response's direct path (its largest |sample|) so that words keep their time stamps.
struct ReverbOptions {
  double probability = 0.0;
  bool keep_level = true;  // scale the result to the input's energy
};

// Codec degradation: an encode and decode in memory through libsndfile, with a codec drawn with
// equal probability from `codecs` and libsndfile's compression level (0 = best quality, 1 = most
// compressed; it sets Vorbis' quality and Opus' and MP3's bitrate) uniform in [min_compression,
// max_compression].
struct CodecOptions {
  double probability = 0.0;
  std::vector<std::string> codecs = {"ulaw", "alaw", "gsm", "vorbis", "opus", "mp3"};
  double min_compression = 0.0;
  double max_compression = 1.0;
};

template <OptionsOf<SpeedOptions> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"probability", "--speed-prob",
              "speed perturbation: probability per record (--speed-perturb: 1)", Affects::kWhat, 0,
              1},
    o.probability);
  v(FieldInfo{"factors", "--speed-factors",
              "speed perturbation: factors drawn with equal probability", Affects::kWhat, 0.01,
              100},
    o.factors);
}

template <OptionsOf<TempoOptions> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"probability", "--tempo-prob",
              "tempo perturbation (speed at the same pitch): probability per record",
              Affects::kWhat, 0, 1},
    o.probability);
  v(FieldInfo{"factors", "--tempo-factors",
              "tempo perturbation: factors drawn with equal probability", Affects::kWhat, 0.1, 10},
    o.factors);
}

template <OptionsOf<GainOptions> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"probability", "--gain-prob", "gain: probability per record", Affects::kWhat, 0, 1},
    o.probability);
  v(FieldInfo{"min_db", "--gain-min-db", "gain: lowest gain, dB", Affects::kWhat, -100, 100},
    o.min_db);
  v(FieldInfo{"max_db", "--gain-max-db", "gain: highest gain, dB", Affects::kWhat, -100, 100},
    o.max_db);
}

template <OptionsOf<ClippingOptions> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"probability", "--clip-prob", "clipping: probability per record", Affects::kWhat, 0,
              1},
    o.probability);
  v(FieldInfo{"min_level", "--clip-min-level", "clipping: lowest level, fraction of the peak",
              Affects::kWhat, 0.001, 1},
    o.min_level);
  v(FieldInfo{"max_level", "--clip-max-level", "clipping: highest level, fraction of the peak",
              Affects::kWhat, 0.001, 1},
    o.max_level);
}

template <OptionsOf<BandLimitOptions> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"probability", "--band-limit-prob", "bandwidth limit: probability per record",
              Affects::kWhat, 0, 1},
    o.probability);
  v(FieldInfo{"rates", "--band-limit-rates",
              "bandwidth limit: rates (Hz) resampled through, drawn with equal probability",
              Affects::kWhat, 100, 1e6},
    o.rates);
}

template <OptionsOf<NoiseOptions> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"probability", "--noise-prob", "additive noise: probability per record",
              Affects::kWhat, 0, 1},
    o.probability);
  v(FieldInfo{"min_snr_db", "--noise-min-snr", "additive noise: lowest SNR, dB", Affects::kWhat,
              -50, 100},
    o.min_snr_db);
  v(FieldInfo{"max_snr_db", "--noise-max-snr", "additive noise: highest SNR, dB", Affects::kWhat,
              -50, 100},
    o.max_snr_db);
}

template <OptionsOf<BabbleOptions> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"probability", "--babble-prob", "babble: probability per record", Affects::kWhat, 0,
              1},
    o.probability);
  v(FieldInfo{"min_snr_db", "--babble-min-snr", "babble: lowest SNR, dB", Affects::kWhat, -50, 100},
    o.min_snr_db);
  v(FieldInfo{"max_snr_db", "--babble-max-snr", "babble: highest SNR, dB", Affects::kWhat, -50,
              100},
    o.max_snr_db);
  v(FieldInfo{"min_speakers", "--babble-min-speakers", "babble: fewest other utterances mixed",
              Affects::kWhat, 1, kMaxBabbleSpeakers},
    o.min_speakers);
  v(FieldInfo{"max_speakers", "--babble-max-speakers", "babble: most other utterances mixed",
              Affects::kWhat, 1, kMaxBabbleSpeakers},
    o.max_speakers);
  v(FieldInfo{"pool_size", "--babble-pool", "babble: utterances held in memory to draw from",
              Affects::kWhat, 1, 1000000},
    o.pool_size);
}

template <OptionsOf<ReverbOptions> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"probability", "--reverb-prob", "reverberation: probability per record",
              Affects::kWhat, 0, 1},
    o.probability);
  v(FieldInfo{"keep_level", "--reverb-keep-level",
              "reverberation: scale the result to the input's energy"},
    o.keep_level);
}

template <OptionsOf<CodecOptions> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"probability", "--codec-prob", "codec degradation: probability per record",
              Affects::kWhat, 0, 1},
    o.probability);
  v(FieldInfo{"codecs", "--codecs",
              "codec degradation: codecs drawn with equal probability (ulaw, alaw, gsm, vorbis, "
              "opus, mp3)"},
    o.codecs);
  v(FieldInfo{"min_compression", "--codec-min-compression",
              "codec degradation: lowest libsndfile compression level (0 = best quality)",
              Affects::kWhat, 0, 1},
    o.min_compression);
  v(FieldInfo{"max_compression", "--codec-max-compression",
              "codec degradation: highest libsndfile compression level (1 = most compressed)",
              Affects::kWhat, 0, 1},
    o.max_compression);
}

// The whole chain, in the order it runs (waveform_augment.h): speed and tempo perturbation (the
// length-changing stage, length_change.h), reverberation,
// additive noise, babble, gain, clipping, bandwidth limit, codec. The room comes before the noise
// and voices of the place, the level and the channel after them. A transform is off while its
// probability is 0 (the default: no augmentation).
struct WaveformAugmentOptions {
  SpeedOptions speed;
  TempoOptions tempo;
  ReverbOptions reverb;
  NoiseOptions noise;
  BabbleOptions babble;
  GainOptions gain;
  ClippingOptions clipping;
  BandLimitOptions band_limit;
  CodecOptions codec;
};

template <OptionsOf<WaveformAugmentOptions> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"speed", nullptr, "speed perturbation (resampling)"}, o.speed);
  v(FieldInfo{"tempo", nullptr, "tempo perturbation (WSOLA, same pitch)"}, o.tempo);
  v(FieldInfo{"reverb", nullptr, "reverberation with the RIR dataset's responses"}, o.reverb);
  v(FieldInfo{"noise", nullptr, "additive noise from the noise dataset"}, o.noise);
  v(FieldInfo{"babble", nullptr, "babble of other utterances"}, o.babble);
  v(FieldInfo{"gain", nullptr, "gain in dB"}, o.gain);
  v(FieldInfo{"clipping", nullptr, "hard clipping"}, o.clipping);
  v(FieldInfo{"band_limit", nullptr, "bandwidth limit through a lower rate"}, o.band_limit);
  v(FieldInfo{"codec", nullptr, "codec degradation"}, o.codec);
}

}  // namespace sluice::features
