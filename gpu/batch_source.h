// BatchSource: where the feeder takes host batches from. The loader is one (loader_source.h);
// tests and sluice-bench feed use synthetic ones. The contract mirrors Loader::Next: a batch
// stays valid until Next() has been called holds() more times, then the source may reuse its
// memory. The feeder relies on exactly that to return a pinned buffer only after its copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "base/status.h"
#include "loader/options.h"

namespace sluice::gpu {

// The sizes of one batch's arrays (loader/batch.h describes the layout).
struct BatchDims {
  uint64_t epoch = 0;
  uint64_t index = 0;          // position in the rank's epoch
  size_t rows = 0;
  int64_t frames = 0;          // T
  int dim = 0;                 // F
  loader::DType dtype = loader::DType::kFloat32;
  int64_t max_tokens = 0;      // L of the token rows
  size_t features_bytes = 0;   // rows * frames * dim * DTypeSize(dtype)
  int64_t seq_len = 0;         // packed batches: input columns per row; 0 for padded ones
  size_t segments = 0;         // packed batches: cu_seqlens entries less one
  size_t num_audio = 0;        // conversation batches: audio turns of the rows
  int64_t audio_frames = 0;    // the longest audio's frames
  int audio_dim = 0;
  size_t audio_features_bytes = 0;  // num_audio * audio_frames * audio_dim * DTypeSize(dtype)
};

// The arrays of one batch, on the host (HostBatch) or on the device (DeviceBatch, feeder.h): the
// same fields in the same layout. A pointer is null for an array the batch does not have (tokens
// of an audio-only dataset, the packed arrays of a padded batch, the audio of a batch without
// audio turns). gpu/batch_arrays.h walks them with their sizes.
template <bool kDevice>
struct BatchArrays : BatchDims {
  template <class T>
  using Ptr = std::conditional_t<kDevice, T*, const T*>;
  Ptr<void> features = nullptr;           // [rows, frames, dim] in dtype
  Ptr<int32_t> lengths = nullptr;         // [rows]
  Ptr<int32_t> tokens = nullptr;          // [rows, max_tokens]
  Ptr<int32_t> token_lengths = nullptr;   // [rows]
  Ptr<int32_t> positions = nullptr;       // packed: [rows, seq_len]
  Ptr<int64_t> doc_ids = nullptr;         // packed: [rows, seq_len]
  Ptr<uint8_t> loss_mask = nullptr;       // packed: [rows, seq_len]; padded conversation rows:
                                          // [rows, max_tokens]
  Ptr<int32_t> cu_seqlens = nullptr;      // packed: [segments + 1]
  Ptr<int32_t> row_cu_seqlens = nullptr;  // packed: [rows, seq_len + 1]
  Ptr<void> audio_features = nullptr;     // [num_audio, audio_frames, audio_dim] in dtype
  Ptr<int32_t> audio_lengths = nullptr;   // [num_audio]
  Ptr<int32_t> audio_spans = nullptr;     // [num_audio, 3]: row, start column, length
};
using HostBatch = BatchArrays<false>;

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // The next batch into *out, or *end = true after the last one. A batch returned by call n is
  // invalid once call n + holds() starts.
  virtual Status Next(HostBatch* out, bool* end) = 0;
  // >= 1. The loader's LoaderOptions::consumer_batches.
  virtual int holds() const = 0;
};

}  // namespace sluice::gpu
