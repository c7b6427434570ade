// The samples of a record's audio field, whichever codec stored them: every reader of audio
// records in loader/ (features, conversation turns, stored recordings' chunks, augmentation clips)
// takes them through this one function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "shards/record.h"

namespace sluice::loader {

// *pcm, *n: the PCM16 samples of `rv`'s audio field, a view into the block for audio_pcm16 or
// `*scratch` for audio_flac (decoded into it). Corruption naming where() (called on error paths
// only, so the hot path builds no string) for a record without an audio field, a FLAC stream
// that does not decode, or one at another rate than `sample_rate`.
template <class Where>
Status RecordPcm(const shards::RecordView& rv, int sample_rate, const Where& where,
                 std::vector<int16_t>* scratch, const int16_t** pcm, size_t* n);

// The FLAC half: Corruption naming the field, which RecordPcm prefixes with where().
Status DecodeFlacField(const shards::FieldView& f, int sample_rate, std::vector<int16_t>* scratch);

template <class Where>
Status RecordPcm(const shards::RecordView& rv, int sample_rate, const Where& where,
                 std::vector<int16_t>* scratch, const int16_t** pcm, size_t* n) {
  if (const shards::FieldView* f = rv.Find(shards::FieldType::kAudioPcm16)) {
    *pcm = reinterpret_cast<const int16_t*>(f->data);  // fields are 8-byte aligned in the block
    *n = f->size / 2;
    return Status::OK();
  }
  if (const shards::FieldView* f = rv.Find(shards::FieldType::kAudioFlac)) {
    Status st = DecodeFlacField(*f, sample_rate, scratch);
    if (!st.ok()) return Status::Corruption(where() + ": " + st.message());
    *pcm = scratch->data();
    *n = scratch->size();
    return Status::OK();
  }
  return Status::Corruption(where() + ": no audio field (a record of shardify --drop-audio?)");
}

}  // namespace sluice::loader
