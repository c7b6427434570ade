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
// the row's first token; no features, lengths 0, texts empty.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loader/allocator.h"
#include "loader/options.h"

namespace sluice::loader {

class Batch {
 public:
  Batch() = default;
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  uint64_t epoch() const { return epoch_; }
  uint64_t index() const { return index_; }  // position in this rank's epoch, from 0
  size_t size() const { return size_; }      // rows
  int64_t frames() const { return frames_; } // T: the longest row's frames
  int dim() const { return dim_; }           // F: feature bins (1 for raw audio, 0 for text)
  DType dtype() const { return dtype_; }

  const void* features() const { return features_.data(); }
  size_t features_bytes() const { return size_ * frames_ * dim_ * DTypeSize(dtype_); }
  // features() as float; nullptr unless dtype() is kFloat32.
  const float* features_f32() const {
    return dtype_ == DType::kFloat32 ? static_cast<const float*>(features_.data()) : nullptr;
  }
  std::span<const int32_t> lengths() const {
    return {static_cast<const int32_t*>(lengths_.data()), size_};
  }
  int64_t max_tokens() const { return max_tokens_; }  // L; 0 when no row has tokens
  const int32_t* tokens() const { return static_cast<const int32_t*>(tokens_.data()); }
  std::span<const int32_t> token_lengths() const {
    return {static_cast<const int32_t*>(token_lengths_.data()), size_};
  }
  // Record keys (views into the dataset's index: valid while the Loader lives).
  std::span<const std::string_view> keys() const { return {keys_.data(), size_}; }
  std::span<const std::string> texts() const { return {texts_.data(), size_}; }  // transcripts
  std::span<const uint64_t> record_ids() const { return {record_ids_.data(), size_}; }
  // Packing: L (0 for batches of records), and each row's sequence number in the epoch.
  int64_t seq_len() const { return seq_len_; }
  std::span<const uint64_t> sequences() const {
    return {sequences_.data(), seq_len_ > 0 ? size_ : 0};
  }
  // Rows that repeat a record so that every rank has the same batch count (plan.h).
  size_t repeated() const { return repeated_; }
  // Rows refilled because their block was corrupt (CorruptPolicy::kSkip).
  size_t skipped() const { return skipped_; }

 private:
  friend class EpochPipeline;
  friend class BatchPool;

  uint64_t epoch_ = 0;
  uint64_t index_ = 0;
  size_t size_ = 0;
  int64_t frames_ = 0;
  int dim_ = 0;
  DType dtype_ = DType::kFloat32;
  int64_t max_tokens_ = 0;
  int64_t seq_len_ = 0;
  size_t repeated_ = 0;
  size_t skipped_ = 0;
  AlignedArray features_;
  AlignedArray lengths_;
  AlignedArray tokens_;
  AlignedArray token_lengths_;
  std::vector<std::string_view> keys_;
  std::vector<std::string> texts_;
  std::vector<uint64_t> record_ids_;
  std::vector<uint64_t> sequences_;
  // Collate state, owned by the pipeline while the batch is being filled.
  std::vector<std::vector<int32_t>> row_tokens_;
  std::vector<uint8_t> row_ok_;  // 0 when the row's record was lost (corrupt block)
  uint32_t remaining_ = 0;       // rows not yet decoded
};

}  // namespace sluice::loader
