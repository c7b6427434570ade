// The waveform augmentation chain: the transforms of gain_clip.h, reverb.h, additive_noise.h,
// babble.h, band_limit.h and codec_degrade.h in the order of WaveformAugmentOptions, each with a
// key of its own derived from (seed, epoch, record id, its index in the chain), so that an epoch's
// audio replays bit-identically on any thread count and after a resume, and changing one
// transform's options never moves another's draws. The noise, impulse-response and babble picks are
// draws of their transforms' keys, hence part of the same replay.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "features/additive_noise.h"
#include "features/babble.h"
#include "features/band_limit.h"
#include "features/codec_degrade.h"
#include "features/gain_clip.h"
#include "features/resample.h"
#include "features/reverb.h"
#include "features/waveform_augment_options.h"

namespace sluice::features {

// The clips the chain draws from: noise clips (float, any scale), prepared impulse responses and
// the babble pool with each clip's record id in the training data (kNotATrainingRecord for a
// separate dataset's), at the rate of the audio they are applied to. Immutable while a chain
// runs: shared by threads.
struct WaveformSources {
  std::vector<std::vector<float>> noise;
  std::vector<ImpulseResponse> rirs;
  std::vector<std::vector<float>> babble;
  std::vector<uint64_t> babble_ids;  // babble_ids[i]: babble[i]'s record id
};

// Per-thread scratch, reused from record to record.
struct WaveformWorkspace {
  ReverbWorkspace reverb;
  Resampler resampler;
  std::vector<float> down, up;
  std::vector<float> babble;  // the sum of the picked utterances
  std::vector<uint8_t> bytes;
};

// The transforms' keys are derived from these values: a new transform takes a new value at the
// end, so that the others' draws stay as they were.
enum class WaveformTransform {
  kReverb = 0,
  kNoise,
  kGain,
  kClipping,
  kBandLimit,
  kCodec,
  kBabble,
  kSpeed,
  kTempo
};

// The key of one transform for one record in one epoch.
uint64_t WaveformTransformKey(uint64_t seed, uint64_t epoch, uint64_t record_id,
                              WaveformTransform t);

// The speed factor of one record in one epoch: 1 when the speed transform is off or not drawn,
// else a factor drawn from opt.speed.factors with features/augment.h's PickSpeedFactor key (so
// that probability 1 is the older speed_perturb, batch for batch). "Applied?" is drawn from the
// transform's own key only below probability 1. The caller resamples (SpeedPerturb): the length
// changes, so the loader runs it before the chain, with the plan's lengths.
double DrawSpeedFactor(const WaveformAugmentOptions& opt, uint64_t seed, uint64_t epoch,
                       uint64_t record_id);

// The tempo factor of one record in one epoch: 1 when the tempo transform is off or not drawn,
// else a factor drawn from opt.tempo.factors. "Applied?" and the factor are both drawn from the
// transform's key, always in that order, so that the probability never moves the factors. Like
// speed, the caller applies it (length_change.h).
double DrawTempoFactor(const WaveformAugmentOptions& opt, uint64_t seed, uint64_t epoch,
                       uint64_t record_id);

// True when any transform after speed and tempo has a probability above 0: those AugmentWaveform
// runs (speed and tempo, which change the length, are the caller's: length_change.h).
bool WaveformAugmentEnabled(const WaveformAugmentOptions& opt);

// InvalidArgument naming the field (as `prefix` + its JSON path) for a range whose minimum is
// above its maximum, an unknown codec name, or a probability outside [0, 1].
Status CheckWaveformAugmentOptions(const WaveformAugmentOptions& opt, const std::string& prefix);

// InvalidArgument naming the codec when libsndfile cannot round-trip one of `codecs` at
// sample_rate (checked once at Open instead of failing the epoch at the first record drawing it).
Status CheckWaveformAugmentAtRate(const WaveformAugmentOptions& opt, int sample_rate,
                                  const std::string& prefix);

// Runs the chain on x (n samples at sample_rate Hz) in place; the length never changes.
// full_scale: the value of a full-scale sample in x (32768 for int16-scaled audio, 1 for [-1, 1]):
// the codecs encode x / full_scale.
// InvalidArgument when reverberation, noise or babble is on and `sources` holds no clip for it;
// other errors come from the codec (Unsupported at a rate it lacks) and the resampler.
Status AugmentWaveform(const WaveformAugmentOptions& opt, const WaveformSources& sources,
                       uint64_t seed, uint64_t epoch, uint64_t record_id, float* x, size_t n,
                       int sample_rate, float full_scale, WaveformWorkspace* ws);

}  // namespace sluice::features
