#include "loader/conversation_audio.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/random.h"
#include "features/cmvn.h"
#include "features/half.h"
#include "features/pcm.h"
#include "features/waveform_augment.h"
#include "loader/feature_args.h"
#include "loader/record_audio.h"

namespace sluice::loader {

ConversationAudio::~ConversationAudio() = default;

Status ConversationAudio::Create(const shards::Manifest& m, const LoaderOptions& options,
                                 const std::vector<const shards::ShardReader*>& shards,
                                 std::unique_ptr<ConversationAudio>* out,
                                 std::span<const uint8_t> asr_shards) {
  // Each refusal keeps a span's length equal to its audio's encoder frames, which the plan
  // counted from the stored samples.
  if (options.kind == FeatureKind::kPrecomputed)
    return Status::InvalidArgument(
        "kind precomputed: conversation records hold audio, no precomputed features. HINT: kind "
        "fbank, spectrogram or raw");
  if (options.speed_perturb || options.waveform_augment.speed.probability > 0)
    return Status::InvalidArgument(
        "speed_perturb: a perturbed audio turn would no longer have the encoder frames its "
        "placeholder span was counted for. HINT: turn speed_perturb off for conversation datasets");
  if (options.waveform_augment.tempo.probability > 0)
    return Status::InvalidArgument(
        "waveform_augment.tempo: a tempo-perturbed audio turn would no longer have the encoder "
        "frames its placeholder span was counted for. HINT: set tempo_prob to 0 for conversation "
        "datasets");
  if (options.spec_augment)
    return Status::InvalidArgument(
        "spec_augment: not implemented for conversation audio turns. HINT: turn spec_augment off "
        "(or mask in the model)");
  if (features::WaveformAugmentEnabled(options.waveform_augment))
    return Status::InvalidArgument(
        "waveform_augment: not implemented for conversation audio turns. HINT: set the chain's "
        "probabilities to 0");
  if (m.codec != "pcm16" && m.codec != "flac")
    return Status::Corruption("manifest.json: conversation audio codec '" + m.codec +
                              "' (pcm16 or flac expected)");
  std::unique_ptr<ConversationAudio> a(new ConversationAudio());
  a->sample_rate_ = m.sample_rate;
  a->kind_ = options.kind;
  a->cmvn_ = options.cmvn;
  if (options.kind == FeatureKind::kFbank || options.kind == FeatureKind::kSpectrogram) {
    FeatureArgs args = options.features;
    args.kind = FeatureKindName(options.kind);
    FeatureConfig config;
    SLUICE_RETURN_IF_ERROR(MakeFeatureConfig(args, m.sample_rate, &config, "features."));
    if (config.is_fbank) {
      a->fbank_ = std::make_unique<features::FbankComputer>(config.fbank);
      a->dim_ = a->fbank_->Dim();
    } else {
      a->spectrogram_ = std::make_unique<features::SpectrogramComputer>(config.spectrogram);
      a->dim_ = a->spectrogram_->Dim();
    }
  }
  // Per record, from the index's turn tables: what sizes a batch's audio at plan time.
  std::vector<shards::TurnEntry> turns;
  std::string where;
  for (size_t g = 0; g < shards.size(); ++g) {
    const shards::ShardReader* s = shards[g];
    // A plain ASR record is one audio turn of all its samples (AsrTaskTurns).
    if (g < asr_shards.size() && asr_shards[g]) {
      for (size_t i = 0; i < s->num_records(); ++i) {
        a->turns_.push_back(1);
        a->max_samples_.push_back(static_cast<uint32_t>(s->record(i).duration));
      }
      continue;
    }
    for (size_t i = 0; i < s->num_records(); ++i) {
      where = s->name() + ": record " + std::to_string(i) + " ('" + std::string(s->key(i)) + "')";
      SLUICE_RETURN_IF_ERROR(shards::DecodeTurnTable(s->aux(i), where, &turns));
      uint32_t n = 0, longest = 0;
      for (const shards::TurnEntry& t : turns)
        if (t.has_audio) {
          ++n;
          longest = std::max(longest, t.samples);
        }
      a->turns_.push_back(n);
      a->max_samples_.push_back(longest);
    }
  }
  *out = std::move(a);
  return Status::OK();
}

uint64_t ConversationAudio::Frames(uint64_t samples) const {
  int64_t frames = static_cast<int64_t>(samples);
  if (fbank_) frames = fbank_->NumFrames(samples);
  else if (spectrogram_) frames = spectrogram_->NumFrames(samples);
  return frames > 0 ? static_cast<uint64_t>(frames) : 0;
}

AudioShape ConversationAudio::Shape(std::span<const uint64_t> records) const {
  AudioShape shape;
  uint32_t longest = 0;
  for (uint64_t r : records) {
    shape.count += turns_[r];
    longest = std::max(longest, max_samples_[r]);
  }
  // Frames grow with samples: the longest turn has the most frames.
  shape.max_frames = shape.count > 0 ? Frames(longest) : 0;
  return shape;
}

Status ConversationAudio::Write(const shards::RecordView& rv,
                                std::span<const shards::ConversationTurn> turns,
                                const RenderedConversation& rendered, size_t row, uint64_t column,
                                uint64_t first_slot, uint64_t seed, uint64_t epoch,
                                uint64_t record_id, std::string_view where, DecodeScratch* s,
                                BatchFields* f) const {
  if (rendered.spans.empty()) return Status::OK();
  const int16_t* pcm = nullptr;
  size_t n = 0;
  SLUICE_RETURN_IF_ERROR(RecordPcm(
      rv, sample_rate_, [&] { return std::string(where); }, &s->pcm, &pcm, &n));
  uint64_t total = 0;
  for (const shards::ConversationTurn& t : turns) total += t.entry.samples;
  if (n != total)
    return Status::Corruption(std::string(where) + ": " + std::to_string(n) +
                              " samples of audio, its turn table " + std::to_string(total));
  const uint64_t L = f->seq_len > 0 ? static_cast<uint64_t>(f->seq_len)
                                    : column + static_cast<uint64_t>(rendered.ids.size());
  const size_t dsize = DTypeSize(f->dtype);
  const size_t slot_values = static_cast<size_t>(f->audio_frames) * static_cast<size_t>(dim_);
  const float scale = kind_ == FeatureKind::kSpectrogram ? 1.0f / 32768 : 1.0f;
  int32_t* lengths = static_cast<int32_t*>(f->audio_lengths.data());
  int32_t* spans = static_cast<int32_t*>(f->audio_spans.data());
  for (size_t k = 0; k < rendered.spans.size(); ++k) {
    const PlaceholderSpan& span = rendered.spans[k];
    const uint64_t slot = first_slot + k;
    if (slot >= f->num_audio || column + span.start + span.length > L)
      return Status::InvalidArgument(
          std::string(where) + ": audio turn " + std::to_string(span.turn) + " at column " +
          std::to_string(column + span.start) + " of a row of " + std::to_string(L) + " (slot " +
          std::to_string(slot) + " of " + std::to_string(f->num_audio) +
          "): conversations are never cut, so the plan and the rendering disagree");
    const shards::ConversationTurn& t = turns[span.turn];
    const uint64_t frames = Frames(t.entry.samples);
    if (frames > static_cast<uint64_t>(f->audio_frames))
      return Status::Corruption(std::string(where) + ": audio turn " + std::to_string(span.turn) +
                                " has " + std::to_string(frames) +
                                " frames, its index entry at most " +
                                std::to_string(f->audio_frames));
    const size_t values = static_cast<size_t>(frames) * dim_;
    char* base = static_cast<char*>(f->audio_features.data()) + slot * slot_values * dsize;
    float* dst = reinterpret_cast<float*>(base);
    if (f->dtype != DType::kFloat32 || kind_ != FeatureKind::kRaw) {
      if (s->samples.size() < t.entry.samples) s->samples.resize(t.entry.samples);
      features::Pcm16ToFloat(pcm + t.first_sample, t.entry.samples, s->samples.data(), scale);
    }
    if (f->dtype != DType::kFloat32) {
      if (s->feats.size() < values) s->feats.resize(values);
      dst = s->feats.data();
    }
    const uint64_t key = Mix64(StreamKey(seed, epoch, record_id) + span.turn);
    if (fbank_ && frames > 0) {
      fbank_->Compute(s->samples.data(), t.entry.samples, &s->workspace, dst, key);
    } else if (spectrogram_ && frames > 0) {
      spectrogram_->Compute(s->samples.data(), t.entry.samples, &s->workspace, dst);
    } else if (!fbank_ && !spectrogram_) {
      if (f->dtype == DType::kFloat32)
        features::Pcm16ToFloat(pcm + t.first_sample, t.entry.samples, dst, scale);
      else std::memcpy(dst, s->samples.data(), values * sizeof(float));
    }
    if (frames > 0 && cmvn_ != Cmvn::kNone)
      features::UtteranceCmvn(dst, static_cast<int64_t>(frames), dim_, cmvn_ == Cmvn::kMeanVar);
    if (f->dtype == DType::kFloat16)
      features::FloatToHalf(dst, values, reinterpret_cast<uint16_t*>(base));
    else if (f->dtype == DType::kBFloat16)
      features::FloatToBFloat16(dst, values, reinterpret_cast<uint16_t*>(base));
    std::memset(base + values * dsize, 0, (slot_values - values) * dsize);
    lengths[slot] = static_cast<int32_t>(frames);
    spans[3 * slot] = static_cast<int32_t>(row);
    spans[3 * slot + 1] = static_cast<int32_t>(column + span.start);
    spans[3 * slot + 2] = static_cast<int32_t>(span.length);
  }
  return Status::OK();
}

Status ConversationAudio::ReserveBatch(const AudioShape& shape, const char* what, uint32_t j,
                                       BatchFields* f, uint64_t* allocations) const {
  f->num_audio = shape.count;
  f->audio_frames = static_cast<int64_t>(shape.max_frames);
  f->audio_dim = dim_;
  const size_t feature_bytes =
      shape.count * shape.max_frames * static_cast<size_t>(dim_) * DTypeSize(f->dtype);
  const std::pair<AlignedArray*, size_t> arrays[] = {
      {&f->audio_features, std::max<size_t>(feature_bytes, 1)},
      {&f->audio_lengths, std::max<size_t>(shape.count, 1) * sizeof(int32_t)},
      {&f->audio_spans, std::max<size_t>(shape.count, 1) * 3 * sizeof(int32_t)}};
  for (const auto& [a, bytes] : arrays) {
    bool grew = false;
    if (!a->Reserve(bytes, &grew))
      return Status::IOError(std::string("batch allocator: out of memory for the audio of ") +
                             what + " " + std::to_string(j));
    *allocations += grew;
  }
  return Status::OK();
}

Status ConversationAudio::RefillRows(std::span<const uint32_t> row_first,
                                     std::span<const int32_t> source, BatchFields* f,
                                     uint64_t* allocations) {
  const size_t slot_bytes = static_cast<size_t>(f->audio_frames) *
                            static_cast<size_t>(f->audio_dim) * DTypeSize(f->dtype);
  const std::string features(static_cast<const char*>(f->audio_features.data()),
                             f->num_audio * slot_bytes);
  const std::vector<int32_t> lengths(
      static_cast<const int32_t*>(f->audio_lengths.data()),
      static_cast<const int32_t*>(f->audio_lengths.data()) + f->num_audio);
  const std::vector<int32_t> spans(
      static_cast<const int32_t*>(f->audio_spans.data()),
      static_cast<const int32_t*>(f->audio_spans.data()) + 3 * f->num_audio);
  size_t count = 0;
  for (size_t row = 0; row < f->size; ++row) {
    const int32_t src = source[row];
    if (src >= 0) count += row_first[src + 1] - row_first[src];
  }
  const std::pair<AlignedArray*, size_t> arrays[] = {
      {&f->audio_features, std::max<size_t>(count * slot_bytes, 1)},
      {&f->audio_lengths, std::max<size_t>(count, 1) * sizeof(int32_t)},
      {&f->audio_spans, std::max<size_t>(count, 1) * 3 * sizeof(int32_t)}};
  for (const auto& [a, bytes] : arrays) {
    bool grew = false;
    if (!a->Reserve(bytes, &grew))
      return Status::IOError("batch allocator: out of memory for the audio of batch " +
                             std::to_string(f->index));
    *allocations += grew;
  }
  size_t slot = 0;
  for (size_t row = 0; row < f->size; ++row) {
    const int32_t src = source[row];
    if (src < 0) continue;
    for (uint32_t k = row_first[src]; k < row_first[src + 1]; ++k, ++slot) {
      std::memcpy(static_cast<char*>(f->audio_features.data()) + slot * slot_bytes,
                  features.data() + k * slot_bytes, slot_bytes);
      static_cast<int32_t*>(f->audio_lengths.data())[slot] = lengths[k];
      int32_t* span = static_cast<int32_t*>(f->audio_spans.data()) + 3 * slot;
      span[0] = static_cast<int32_t>(row);
      span[1] = spans[3 * k + 1];
      span[2] = spans[3 * k + 2];
    }
  }
  f->num_audio = count;
  return Status::OK();
}

}  // namespace sluice::loader
