// PatternSource: a BatchSource of synthetic batches whose every byte is a function of the batch
// index, with the loader's recycling contract: the buffer of call n is rewritten at call
// n + holds (first with garbage, then with the new batch). If the feeder let that happen while a
// copy from it was pending, the device receives garbage and the test's check of the batch fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "gpu/batch_source.h"
#include "loader/allocator.h"

namespace sluice::gpu::testing {

struct PatternShape {
  size_t rows;
  int64_t frames;
  int dim;
  int64_t max_tokens;  // 0: no tokens
  // The arrays of packed and conversation batches (batch_source.h), filled with PatternByte:
  int64_t seq_len = 0;       // > 0: positions, doc ids, loss mask, cu_seqlens, row_cu_seqlens
  size_t audio = 0;          // > 0: audio features (dim wide), lengths and spans
  int64_t audio_frames = 0;  // the longest audio
};

// Batch i's shape: varied, at most max_shape.
PatternShape ShapeOf(uint64_t i, const PatternShape& max_shape);
// The float at position p of batch i's features (exact in float).
inline float FeatureValue(uint64_t i, size_t p) {
  return static_cast<float>((i * 7919 + p) % 1000003);
}
inline int32_t LengthValue(uint64_t i, size_t r) { return static_cast<int32_t>(i * 31 + r); }
inline int32_t TokenValue(uint64_t i, size_t p) { return static_cast<int32_t>(i * 131 + p + 1); }
// Byte p of array `a` (a BatchArray past the token ones) of batch i.
inline unsigned char PatternByte(uint64_t i, int a, size_t p) {
  return static_cast<unsigned char>(i * 151 + static_cast<uint64_t>(a) * 37 + p * 7 + 1);
}

class PatternSource : public BatchSource {
 public:
  // `batches` per epoch; host memory from `allocator` (pinned for GPU tests). `on_recycle(buffer
  // start, bytes)` is called just before a buffer is rewritten: tests check no copy reads it.
  PatternSource(int holds, uint64_t batches, PatternShape max_shape,
                std::shared_ptr<loader::BatchAllocator> allocator);
  ~PatternSource() override;

  Status Next(HostBatch* out, bool* end) override;
  int holds() const override { return holds_; }
  void Restart() { calls_ = 0; }
  void set_on_recycle(std::function<void(const void*, size_t)> f) { on_recycle_ = std::move(f); }
  // Batches whose arrays fit max_shape: the feeder capacity that needs no growth.
  size_t max_feature_bytes() const;

 private:
  struct Buffer {
    float* features;
    int32_t* lengths;
    int32_t* tokens;
    int32_t* token_lengths;
    std::vector<unsigned char*> extra;  // the arrays past the token ones, BatchArray order
  };
  // The most bytes of each array past the token ones (0: the batches have none).
  std::vector<size_t> extra_bytes_;
  int holds_;
  uint64_t batches_;
  PatternShape max_;
  std::shared_ptr<loader::BatchAllocator> allocator_;
  std::vector<Buffer> buffers_;  // holds_ of them: call n uses n % holds_
  uint64_t calls_ = 0;
  std::function<void(const void*, size_t)> on_recycle_;
};

}  // namespace sluice::gpu::testing
