#include "loader/feature_extractor.h"

#include <cstring>
#include <string>

#include "base/random.h"
#include "features/augment.h"
#include "features/cmvn.h"
#include "features/half.h"
#include "features/pcm.h"
#include "loader/features_json.h"
#include "loader/record_audio.h"
#include "loader/speed_spelling.h"
#include "shards/fields.h"

namespace sluice::loader {
namespace {

// The computers of the precomputed features, from their manifest record; the sample rate is the
// dataset's (shardify resampled every record to it before computing). The record is data, not
// an option: a record the computers refuse is the dataset's Corruption.
Status PrecomputedConfig(const nlohmann::json& j, int rate, FeatureConfig* c) {
  // A field the record leaves out is the library's default (docs/formats/manifest.md), not
  // whatever the caller's options held for computing features itself.
  SLUICE_RETURN_IF_ERROR(FeaturesFromJson(j, &c->is_fbank, &c->fbank, &c->spectrogram));
  c->fbank.sample_frequency = static_cast<float>(rate);
  c->spectrogram.sample_rate = rate;
  const Status s = c->is_fbank ? features::FbankComputer::Validate(c->fbank)
                               : features::SpectrogramComputer::Validate(c->spectrogram);
  if (!s.ok()) return Status::Corruption("manifest.json \"features\": " + s.message());
  return Status::OK();
}

// The chain's clips when none were loaded: the chain then refuses noise and reverberation.
const features::WaveformSources kNoClips;

}  // namespace

FeatureExtractor::~FeatureExtractor() = default;

Status FeatureExtractor::Create(const shards::Manifest& m, const LoaderOptions& options,
                                std::unique_ptr<FeatureExtractor>* out) {
  std::unique_ptr<FeatureExtractor> fx(new FeatureExtractor());
  fx->options_ = options;
  // Callers other than Loader::Open (sluice-bench) may give the older spelling.
  SLUICE_RETURN_IF_ERROR(MoveSpeedPerturbIntoChain(&fx->options_));
  fx->audio_ = m.kind == "audio";
  fx->sample_rate_ = m.sample_rate;
  if (!fx->audio_) {
    // Conversations' rows are their rendered token ids (conversation_plan.h).
    if (m.kind != "text" && m.kind != "conversation")
      return Status::Unsupported("manifest.json: dataset kind '" + m.kind + "'");
    *out = std::move(fx);
    return Status::OK();
  }
  if (m.sample_rate <= 0)
    return Status::Corruption("manifest.json: audio dataset without a sample rate");
  if (m.codec != "pcm16" && m.codec != "flac" && m.features->is_null())
    return Status::Unsupported("manifest.json: audio codec '" + m.codec + "'");

  FeatureKind kind = options.kind;
  FeatureConfig config;  // the computer that gives the frame count, if any
  bool computes = kind == FeatureKind::kFbank || kind == FeatureKind::kSpectrogram;
  if (!m.features->is_null() && (options.use_precomputed || kind == FeatureKind::kPrecomputed)) {
    kind = FeatureKind::kPrecomputed;
    computes = true;
    SLUICE_RETURN_IF_ERROR(PrecomputedConfig(*m.features, m.sample_rate, &config));
  } else if (kind == FeatureKind::kPrecomputed) {
    return Status::InvalidArgument(
        "kind precomputed: the dataset has no precomputed features. HINT: kind fbank or "
        "spectrogram, or shardify audio --features fbank");
  } else if (m.codec == "none") {
    return Status::InvalidArgument(
        "the dataset holds precomputed features only (shardify --drop-audio): use them "
        "(kind precomputed) or shardify the audio again");
  } else if (computes) {
    // The options' one check: the feature arguments resolved at the dataset's rate (shardify
    // resampled every record to it).
    FeatureArgs a = options.features;
    a.kind = FeatureKindName(kind);
    SLUICE_RETURN_IF_ERROR(MakeFeatureConfig(a, m.sample_rate, &config, "features."));
  }
  fx->kind_ = kind;
  const features::WaveformAugmentOptions& w = fx->options_.waveform_augment;
  if (w.speed.probability > 0 && kind == FeatureKind::kPrecomputed)
    return Status::InvalidArgument(
        "speed_perturb: speed perturbation needs the audio, and the dataset's features are "
        "precomputed (set use_precomputed = false and kind fbank or spectrogram, or turn "
        "speed_perturb off)");
  if (w.tempo.probability > 0 && kind == FeatureKind::kPrecomputed)
    return Status::InvalidArgument(
        "waveform_augment.tempo: tempo perturbation needs the audio, and the dataset's features "
        "are precomputed (set use_precomputed = false and kind fbank or spectrogram, or set "
        "tempo_prob to 0)");
  if (w.speed.probability > 0 || w.tempo.probability > 0)
    SLUICE_RETURN_IF_ERROR(features::CheckWaveformAugmentOptions(w, "waveform_augment."));

  if (features::WaveformAugmentEnabled(options.waveform_augment)) {
    if (kind == FeatureKind::kPrecomputed)
      return Status::InvalidArgument(
          "waveform_augment: the augmentation chain needs the audio, and the dataset's features "
          "are precomputed (set use_precomputed = false and kind fbank or spectrogram, or set "
          "the chain's probabilities to 0)");
    SLUICE_RETURN_IF_ERROR(
        features::CheckWaveformAugmentOptions(options.waveform_augment, "waveform_augment."));
    SLUICE_RETURN_IF_ERROR(features::CheckWaveformAugmentAtRate(
        options.waveform_augment, m.sample_rate, "waveform_augment."));
  }

  if (!computes) {
    fx->dim_ = 1;  // raw waveform
  } else if (config.is_fbank) {
    fx->fbank_ = std::make_unique<features::FbankComputer>(config.fbank);
    fx->dim_ = fx->fbank_->Dim();
  } else {
    fx->spectrogram_ = std::make_unique<features::SpectrogramComputer>(config.spectrogram);
    fx->dim_ = fx->spectrogram_->Dim();
  }
  *out = std::move(fx);
  return Status::OK();
}

double FeatureExtractor::frame_shift_seconds() const {
  if (!audio_) return 0;
  const int hop = fbank_ ? fbank_->WindowShift() : spectrogram_ ? spectrogram_->Hop() : 1;
  return static_cast<double>(hop) / sample_rate_;
}

int64_t FeatureExtractor::FramesOf(uint64_t samples) const {
  int64_t frames = 0;
  if (fbank_) frames = fbank_->NumFrames(samples);
  else if (spectrogram_) frames = spectrogram_->NumFrames(samples);
  else frames = static_cast<int64_t>(samples);
  return frames > 0 ? frames : 0;
}

uint64_t FeatureExtractor::Length(const shards::RecordEntry& e) const {
  if (!audio_) return e.tokens > 0 ? e.tokens : e.size;
  return static_cast<uint64_t>(FramesOf(e.duration));
}

uint64_t FeatureExtractor::EpochLength(const shards::RecordEntry& e, uint64_t seed, uint64_t epoch,
                                       uint64_t record_id) const {
  if (!length_perturb()) return Length(e);
  const features::LengthChange c =
      features::DrawLengthChange(options_.waveform_augment, seed, epoch, record_id);
  return static_cast<uint64_t>(FramesOf(features::ChangedLength(e.duration, sample_rate_, c)));
}

Status FeatureExtractor::Samples(const shards::RecordView& rec, const shards::RecordEntry& e,
                                 std::string_view where, float scale, uint64_t seed,
                                 uint64_t epoch, uint64_t record_id, DecodeScratch* s,
                                 const float** out, size_t* out_n) const {
  const int16_t* pcm = nullptr;
  size_t n = 0;
  SLUICE_RETURN_IF_ERROR(RecordPcm(
      rec, sample_rate_, [&] { return std::string(where); }, &s->pcm, &pcm, &n));
  if (n != e.duration)
    return Status::Corruption(std::string(where) + ": " + std::to_string(n) +
                              " samples, the index says " + std::to_string(e.duration));
  if (s->samples.size() < n) s->samples.resize(n);
  features::Pcm16ToFloat(pcm, n, s->samples.data(), scale);
  *out = s->samples.data();
  *out_n = n;
  // The value of a full-scale sample in *out: the chain's thresholds and tempo's splice search
  // work at that scale, so the rows of every kind are the same waveform up to it.
  const float full_scale = scale == 1.0f ? 32768.0f : 1.0f;
  if (length_perturb()) {
    const features::LengthChange c =
        features::DrawLengthChange(options_.waveform_augment, seed, epoch, record_id);
    SLUICE_RETURN_IF_ERROR(Prefixed(features::ChangeLength(s->samples.data(), n, sample_rate_,
                                                           full_scale, c, &s->length, out, out_n),
                                    where));
  }
  if (waveform_augment()) {
    // In place: *out is this thread's scratch (samples or s->length's), never the block.
    SLUICE_RETURN_IF_ERROR(
        Prefixed(features::AugmentWaveform(options_.waveform_augment,
                                           waveform_sources_ ? *waveform_sources_ : kNoClips, seed,
                                           epoch, record_id, const_cast<float*>(*out), *out_n,
                                           sample_rate_, full_scale, &s->waveform),
                 where));
  }
  return Status::OK();
}

Status FeatureExtractor::Compute(const shards::RecordView& rec, const shards::RecordEntry& e,
                                 std::string_view where, uint64_t seed, uint64_t epoch,
                                 uint64_t record_id, DecodeScratch* s, float* out) const {
  if (!audio_) return Status::OK();
  const int64_t frames = static_cast<int64_t>(EpochLength(e, seed, epoch, record_id));
  const float* x = nullptr;
  size_t n = 0;
  if (kind_ == FeatureKind::kPrecomputed) {
    const shards::FieldView* f = rec.Find(shards::FieldType::kFeaturesF16);
    if (f == nullptr)
      return Status::Corruption(std::string(where) + ": no precomputed features field");
    shards::FeaturesF16View v;
    SLUICE_RETURN_IF_ERROR(shards::DecodeFeaturesF16(*f, where, &v));
    if (v.frames != frames || static_cast<int64_t>(v.bins) != dim_)
      return Status::Corruption(std::string(where) + ": precomputed features [" +
                                std::to_string(v.frames) + ", " + std::to_string(v.bins) +
                                "], expected [" + std::to_string(frames) + ", " +
                                std::to_string(dim_) + "]");
    features::HalfToFloat(v.values, size_t(frames) * dim_, out);
  } else if (kind_ == FeatureKind::kSpectrogram) {
    SLUICE_RETURN_IF_ERROR(Samples(rec, e, where, 1.0f / 32768, seed, epoch, record_id, s, &x, &n));
    if (frames > 0) spectrogram_->Compute(x, n, &s->workspace, out);
  } else if (kind_ == FeatureKind::kFbank) {
    SLUICE_RETURN_IF_ERROR(Samples(rec, e, where, 1.0f, seed, epoch, record_id, s, &x, &n));
    if (frames > 0) fbank_->Compute(x, n, &s->workspace, out, StreamKey(seed, epoch, record_id));
  } else {  // raw
    SLUICE_RETURN_IF_ERROR(Samples(rec, e, where, 1.0f, seed, epoch, record_id, s, &x, &n));
    std::memcpy(out, x, static_cast<size_t>(frames) * sizeof(float));
  }
  if (frames > 0 && options_.cmvn != Cmvn::kNone)
    features::UtteranceCmvn(out, frames, dim_, options_.cmvn == Cmvn::kMeanVar);
  if (frames > 0 && options_.spec_augment)
    features::SpecAugment(options_.spec_augment_options, seed, epoch, record_id, out, frames, dim_);
  return Status::OK();
}

}  // namespace sluice::loader
