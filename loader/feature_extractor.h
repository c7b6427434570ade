// FeatureExtractor: one record's payload -> its rows of the batch (the pipeline's CPU work), and
// each record's length in frames from its index entry alone (the plan's unit).
//
// Audio: pcm16 or FLAC samples -> float (int16 scale for fbank/raw, [-1, 1] for the spectrogram)
// -> fbank / spectrogram / raw, or the record's precomputed float16 features; then optional
// per-utterance CMVN and SpecAugment; between decode (and speed perturbation) and the features,
// the waveform augmentation chain (features/waveform_augment.h). Every random choice is keyed by
// (seed, epoch, record id). Text datasets have no feature rows (dim 0): the pipeline passes text
// and tokens through.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "features/fbank.h"
#include "features/length_change.h"
#include "features/resample.h"
#include "features/spectrogram.h"
#include "features/waveform_augment.h"
#include "features/workspace.h"
#include "loader/options.h"
#include "shards/buffer.h"
#include "shards/manifest.h"
#include "shards/record.h"
#include "shards/shard_reader.h"

namespace sluice::loader {

// Per-thread scratch of the decode stage; reused from record to record.
struct DecodeScratch {
  // Packed plans tokenize online (records without ids) once per (document, row), and a long
  // document feeds several rows, mostly served by the same read and thread: a few recently
  // tokenized records, direct-mapped by record id, spare most repeats. Vectors keep capacity.
  static constexpr size_t kTokenSlots = 8;
  std::array<uint64_t, kTokenSlots> ids_record = MakeEmptySlots();
  std::array<std::vector<int32_t>, kTokenSlots> ids;
  // The record whose stored ids this thread last checked against 2^31: a long document's later
  // rows skip the scan (without it, a document of n ids feeding n / L rows costs n^2 / L).
  uint64_t ids_checked = ~uint64_t{0};

  features::Workspace workspace;
  shards::Buffer raw;           // the decompressed block
  std::vector<float> samples;   // audio as float
  std::vector<int16_t> pcm;     // FLAC decode output
  std::vector<float> feats;     // features before conversion to f16/bf16
  features::LengthWorkspace length;      // speed and tempo: soxr engines, SoundTouch, their output
  features::WaveformWorkspace waveform;  // the augmentation chain's buffers and soxr engines
  // Stored recordings (stored_segments.h): the chunk block decoded last (kept within one read
  // step: neighbouring segments of a recording share it) and the segment's samples.
  const void* chunk_shard = nullptr;  // the ShardReader of chunk_block; null: none
  uint32_t chunk_block = 0;
  shards::Buffer chunk_compressed;
  shards::Buffer chunk_raw;
  std::vector<int16_t> chunk_pcm;    // a FLAC chunk decoded
  std::vector<int16_t> segment_pcm;  // the segment's samples, cut from its chunks
  const void* text_shard = nullptr;  // windows: the block of segment records decoded last
  uint32_t text_block = 0;
  shards::Buffer text_raw;
  std::string window_text;  // windows: the text and ids of the segments they hold
  std::string window_ids;

 private:
  static std::array<uint64_t, kTokenSlots> MakeEmptySlots() {
    std::array<uint64_t, kTokenSlots> a;
    a.fill(~uint64_t{0});
    return a;
  }
};

class FeatureExtractor {
 public:
  // InvalidArgument/Unsupported naming the option that does not fit the dataset.
  static Status Create(const shards::Manifest& manifest, const LoaderOptions& options,
                       std::unique_ptr<FeatureExtractor>* out);
  ~FeatureExtractor();

  bool audio() const { return audio_; }
  FeatureKind kind() const { return kind_; }
  int dim() const { return dim_; }
  int sample_rate() const { return sample_rate_; }
  // Seconds of audio per feature frame: the computer's hop in samples over the rate (the stored
  // features' computer when precomputed), one sample for raw audio; 0 for text.
  double frame_shift_seconds() const;
  // The record's length in the plan's units: frames (audio), token ids or text bytes (text).
  uint64_t Length(const shards::RecordEntry& e) const;
  // The same in one epoch: with speed or tempo perturbation, the frames of the perturbed samples
  // (exactly those Compute gives).
  uint64_t EpochLength(const shards::RecordEntry& e, uint64_t seed, uint64_t epoch,
                       uint64_t record_id) const;
  // The chain's length-changing stage is on: speed (waveform_augment.speed; Loader::Open moved
  // the older speed_perturb spelling into it, speed_spelling.h) or tempo.
  bool length_perturb() const {
    return audio_ && (options_.waveform_augment.speed.probability > 0 ||
                      options_.waveform_augment.tempo.probability > 0);
  }
  bool waveform_augment() const {
    return audio_ && features::WaveformAugmentEnabled(options_.waveform_augment);
  }
  // The clips the chain draws from (loader/augment_sources.h); set once, before the first
  // Compute, when waveform_augment().
  void set_waveform_sources(std::shared_ptr<const features::WaveformSources> s) {
    waveform_sources_ = std::move(s);
  }

  // Writes EpochLength(e, ...) x dim() floats for the record into `out`. Corruption naming `where`
  // when the payload disagrees with its index entry (sample count, feature shape).
  Status Compute(const shards::RecordView& record, const shards::RecordEntry& e,
                 std::string_view where, uint64_t seed, uint64_t epoch, uint64_t record_id,
                 DecodeScratch* scratch, float* out) const;

 private:
  FeatureExtractor() = default;
  // The record's samples as float into s->samples (or s->length's); *out and *n say where.
  Status Samples(const shards::RecordView& record, const shards::RecordEntry& e,
                 std::string_view where, float scale, uint64_t seed, uint64_t epoch,
                 uint64_t record_id, DecodeScratch* s, const float** out, size_t* n) const;
  int64_t FramesOf(uint64_t samples) const;

  bool audio_ = false;
  FeatureKind kind_ = FeatureKind::kFbank;
  int dim_ = 0;
  int sample_rate_ = 0;
  LoaderOptions options_;
  std::unique_ptr<features::FbankComputer> fbank_;
  std::unique_ptr<features::SpectrogramComputer> spectrogram_;
  std::shared_ptr<const features::WaveformSources> waveform_sources_;
};

}  // namespace sluice::loader
