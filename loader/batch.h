// Batch: one padded mini-batch, as Loader::Next hands it out. A view over pooled memory: valid
// until the consumer has called Next() LoaderOptions::consumer_batches more times (or the epoch is
// restarted or the Loader destroyed); its memory then goes back to the pool for a later batch.
//
// Layout (row-major, rows in plan order):
//   features  [size, frames, dim] in dtype; row i holds lengths[i] frames, the rest zeros
//   lengths   [size] int32 frames per row (audio; 0 for text datasets)
//   tokens    [size, max_tokens] int32, padded with zeros; token_lengths [size]
//   keys, texts, record_ids: one per row
//
// Packed batches (PackingOptions::seq_len = L): tokens [size, L + 1], every row full (token_lengths
// all L + 1, max_tokens L + 1), inputs row[0..L), targets row[1..L]; sequences() gives each row's
// sequence k (stream tokens [k*L, k*L + L + 1)); keys and record_ids name the document holding
// the row's first token; no features, lengths 0, texts empty. Beside the ids, per input column
// i in [0, L) of each row (docs/loader.md, "Packed batch layout"):
//   positions  [size, L] int32: i minus the column where its document's part in this row starts
//              (0 at every document start; padding counts from 0 as one more segment)
//   doc_ids    [size, L] int64: the record id of the document of column i, -1 for padding
//   loss_mask  [size, L] uint8: 1 when target row[i + 1] is the next id of input row[i]'s own
//              document: 0 on padding and on a document's last input in the row when its next
//              column holds another document or padding (the end-of-document id predicts no
//              next document); kept across the row's end when the document goes on there
//   cu_seqlens [segments + 1] int32: starts of the batch's segments (each document part, and each
//              row's padding) over the flattened [size * L] inputs, then size * L, as
//              variable-length attention takes them; row_cu_seqlens [size, L + 1] int32: each
//              row's own, from 0, padded with L
// Padded batches of a conversation dataset (seq_len 0, a conversation per row) also carry
//   loss_mask  [size, max_tokens] uint8: as packed, per row: 1 on input i of the conversation
//              when its target i + 1 carries loss (the template's); 0 on its last id and padding
// Conversation batches with audio turns, packed or padded, also carry the audio
// (loader/conversation_audio.h): per audio turn of the rows, in row order then span order,
//   audio_features [num_audio, audio_frames, audio_dim] in dtype: the turn's features (fbank,
//                  spectrogram, or raw samples with dim 1), zeros past its length
//   audio_lengths  [num_audio] int32 frames of each audio
//   audio_spans    [num_audio, 3] int32: (row, start column, length) of the audio's placeholder
//                  span in the row's inputs; length is the encoder frames of its samples
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../loader/allocator.h"
#include "../loader/options.h"

namespace sluice::loader {

// A batch's contents. The loader fills them (loader/batch_buffer.h); a consumer reads them through
// Batch's accessors, which state each field's meaning.
struct BatchFields {
  uint64_t epoch = 0;
  uint64_t index = 0;
  size_t size = 0;
  int64_t frames = 0;
  int dim = 0;
  DType dtype = DType::kFloat32;
  int64_t max_tokens = 0;
  int64_t seq_len = 0;
  size_t repeated = 0;
  size_t skipped = 0;
  AlignedArray features;
  AlignedArray lengths;
  AlignedArray tokens;
  AlignedArray token_lengths;
  std::vector<std::string_view> keys;
  std::vector<std::string> texts;
  std::vector<uint64_t> record_ids;
  std::vector<uint64_t> sequences;
  // Packed batches (see above); their memory is the pool's, reserved by Loader::Start.
  AlignedArray positions;
  AlignedArray doc_ids;
  AlignedArray loss_mask;
  AlignedArray cu_seqlens;
  AlignedArray row_cu_seqlens;
  size_t segments = 0;  // entries of cu_seqlens less one
  bool row_loss_mask = false;  // padded conversation rows: loss_mask is [size, max_tokens]
  // Conversation audio (see above; num_audio 0 without); pooled like the arrays above.
  AlignedArray audio_features;
  AlignedArray audio_lengths;
  AlignedArray audio_spans;
  size_t num_audio = 0;
  int64_t audio_frames = 0;  // the longest audio's frames
  int audio_dim = 0;
};

class Batch {
 public:
  Batch() = default;
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  uint64_t epoch() const { return f_.epoch; }
  uint64_t index() const { return f_.index; }  // position in this rank's epoch, from 0
  size_t size() const { return f_.size; }      // rows
  int64_t frames() const { return f_.frames; }  // T: the longest row's frames
  int dim() const { return f_.dim; }            // F: feature bins (1 for raw audio, 0 for text)
  DType dtype() const { return f_.dtype; }

  const void* features() const { return f_.features.data(); }
  size_t features_bytes() const {
    return f_.size * static_cast<size_t>(f_.frames) * static_cast<size_t>(f_.dim) *
           DTypeSize(f_.dtype);
  }
  // features() as float; nullptr unless dtype() is kFloat32.
  const float* features_f32() const {
    return f_.dtype == DType::kFloat32 ? static_cast<const float*>(f_.features.data()) : nullptr;
  }
  std::span<const int32_t> lengths() const {
    return {static_cast<const int32_t*>(f_.lengths.data()), f_.size};
  }
  int64_t max_tokens() const { return f_.max_tokens; }  // L; 0 when no row has tokens
  const int32_t* tokens() const { return static_cast<const int32_t*>(f_.tokens.data()); }
  std::span<const int32_t> token_lengths() const {
    return {static_cast<const int32_t*>(f_.token_lengths.data()), f_.size};
  }
  // Record keys (views into the dataset's index: valid while the Loader lives).
  std::span<const std::string_view> keys() const { return {f_.keys.data(), f_.size}; }
  std::span<const std::string> texts() const { return {f_.texts.data(), f_.size}; }  // transcripts
  std::span<const uint64_t> record_ids() const { return {f_.record_ids.data(), f_.size}; }
  // Packing: L (0 for batches of records), and each row's sequence number in the epoch.
  int64_t seq_len() const { return f_.seq_len; }
  std::span<const uint64_t> sequences() const {
    return {f_.sequences.data(), f_.seq_len > 0 ? f_.size : 0};
  }
  // Packed batches only (nullptr / empty otherwise): the per-column arrays described above.
  const int32_t* positions() const { return Packed<int32_t>(f_.positions); }
  const int64_t* doc_ids() const { return Packed<int64_t>(f_.doc_ids); }
  // Packed batches, and padded batches of a conversation dataset ([size, max_tokens]).
  const uint8_t* loss_mask() const {
    return f_.row_loss_mask ? static_cast<const uint8_t*>(f_.loss_mask.data())
                            : Packed<uint8_t>(f_.loss_mask);
  }
  std::span<const int32_t> cu_seqlens() const {
    if (f_.seq_len == 0) return {};
    return {static_cast<const int32_t*>(f_.cu_seqlens.data()), f_.segments + 1};
  }
  const int32_t* row_cu_seqlens() const { return Packed<int32_t>(f_.row_cu_seqlens); }
  // Conversation audio (described above); num_audio() 0 and nullptr without audio turns.
  size_t num_audio() const { return f_.num_audio; }
  int64_t audio_frames() const { return f_.num_audio > 0 ? f_.audio_frames : 0; }
  int audio_dim() const { return f_.num_audio > 0 ? f_.audio_dim : 0; }
  const void* audio_features() const {
    return f_.num_audio > 0 ? f_.audio_features.data() : nullptr;
  }
  size_t audio_features_bytes() const {
    return f_.num_audio * static_cast<size_t>(audio_frames()) * static_cast<size_t>(audio_dim()) *
           DTypeSize(f_.dtype);
  }
  std::span<const int32_t> audio_lengths() const {
    return {static_cast<const int32_t*>(f_.audio_lengths.data()), f_.num_audio};
  }
  // [num_audio, 3]: row, start column, length.
  std::span<const int32_t> audio_spans() const {
    return {static_cast<const int32_t*>(f_.audio_spans.data()), f_.num_audio * 3};
  }
  // Rows that repeat a record so that every rank has the same batch count (plan.h).
  size_t repeated() const { return f_.repeated; }
  // Rows refilled because their block was corrupt (CorruptPolicy::kSkip).
  size_t skipped() const { return f_.skipped; }

 protected:
  template <class T>
  const T* Packed(const AlignedArray& a) const {
    return f_.seq_len > 0 ? static_cast<const T*>(a.data()) : nullptr;
  }
  BatchFields f_;
};

}  // namespace sluice::loader
