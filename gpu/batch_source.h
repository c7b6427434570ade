// BatchSource: where the feeder takes host batches from. The loader is one (loader_source.h);
// tests and sluice-bench feed use synthetic ones. The contract mirrors Loader::Next: a batch
// stays valid until Next() has been called holds() more times, then the source may reuse its
// memory. The feeder relies on exactly that to return a pinned buffer only after its copy.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "loader/options.h"

namespace sluice::gpu {

// The arrays of one host batch (loader/batch.h describes the layout). Pointers may be null for
// arrays the batch does not have (tokens of an audio-only dataset).
struct HostBatch {
  uint64_t epoch = 0;
  uint64_t index = 0;          // position in the rank's epoch
  size_t rows = 0;
  int64_t frames = 0;          // T
  int dim = 0;                 // F
  loader::DType dtype = loader::DType::kFloat32;
  int64_t max_tokens = 0;      // L
  const void* features = nullptr;
  size_t features_bytes = 0;   // rows * frames * dim * DTypeSize(dtype)
  const int32_t* lengths = nullptr;        // [rows]
  const int32_t* tokens = nullptr;         // [rows, max_tokens]
  const int32_t* token_lengths = nullptr;  // [rows]
};

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
