#include "pattern_source.h"

#include <algorithm>
#include <cstring>

namespace sluice::gpu::testing {

PatternShape ShapeOf(uint64_t i, const PatternShape& m) {
  PatternShape s;
  s.rows = 1 + (i * 7) % m.rows;
  s.frames = 1 + static_cast<int64_t>((i * 13) % static_cast<uint64_t>(m.frames));
  s.dim = m.dim;
  s.max_tokens = m.max_tokens == 0
                     ? 0
                     : 1 + static_cast<int64_t>((i * 5) % static_cast<uint64_t>(m.max_tokens));
  return s;
}

PatternSource::PatternSource(int holds, uint64_t batches, PatternShape max_shape,
                             std::shared_ptr<loader::BatchAllocator> allocator)
    : holds_(holds), batches_(batches), max_(max_shape), allocator_(std::move(allocator)) {
  const size_t a = loader::kBatchAlignment;
  for (int i = 0; i < holds_; ++i) {
    Buffer b;
    b.features = static_cast<float*>(allocator_->Allocate(max_feature_bytes(), a));
    b.lengths = static_cast<int32_t*>(allocator_->Allocate(max_.rows * 4, a));
    b.tokens = static_cast<int32_t*>(
        allocator_->Allocate(max_.rows * std::max<int64_t>(max_.max_tokens, 1) * 4, a));
    b.token_lengths = static_cast<int32_t*>(allocator_->Allocate(max_.rows * 4, a));
    buffers_.push_back(b);
  }
}

PatternSource::~PatternSource() {
  const size_t a = loader::kBatchAlignment;
  for (Buffer& b : buffers_) {
    allocator_->Free(b.features, max_feature_bytes(), a);
    allocator_->Free(b.lengths, max_.rows * 4, a);
    allocator_->Free(b.tokens, max_.rows * std::max<int64_t>(max_.max_tokens, 1) * 4, a);
    allocator_->Free(b.token_lengths, max_.rows * 4, a);
  }
}

size_t PatternSource::max_feature_bytes() const {
  return max_.rows * static_cast<size_t>(max_.frames) * static_cast<size_t>(max_.dim) *
         sizeof(float);
}

Status PatternSource::Next(HostBatch* out, bool* end) {
  const uint64_t i = calls_;
  *end = i >= batches_;
  if (*end) return Status::OK();
  ++calls_;
  Buffer& b = buffers_[i % holds_];
  if (i >= static_cast<uint64_t>(holds_)) {
    // The batch of call i - holds is invalid now: recycle its buffer.
    if (on_recycle_) {
      on_recycle_(b.features, max_feature_bytes());
      on_recycle_(b.lengths, max_.rows * 4);
    }
    std::memset(b.features, 0xEE, max_feature_bytes());
    std::memset(b.lengths, 0xEE, max_.rows * 4);
  }
  const PatternShape s = ShapeOf(i, max_);
  const size_t n = s.rows * static_cast<size_t>(s.frames) * static_cast<size_t>(s.dim);
  for (size_t p = 0; p < n; ++p) b.features[p] = FeatureValue(i, p);
  for (size_t r = 0; r < s.rows; ++r) b.lengths[r] = LengthValue(i, r);
  HostBatch& h = *out;
  h = HostBatch();
  h.index = i;
  h.rows = s.rows;
  h.frames = s.frames;
  h.dim = s.dim;
  h.dtype = loader::DType::kFloat32;
  h.features = b.features;
  h.features_bytes = n * sizeof(float);
  h.lengths = b.lengths;
  if (s.max_tokens > 0) {
    for (size_t p = 0; p < s.rows * static_cast<size_t>(s.max_tokens); ++p)
      b.tokens[p] = TokenValue(i, p);
    for (size_t r = 0; r < s.rows; ++r) b.token_lengths[r] = static_cast<int32_t>(s.max_tokens);
    h.max_tokens = s.max_tokens;
    h.tokens = b.tokens;
    h.token_lengths = b.token_lengths;
  }
  return Status::OK();
}

}  // namespace sluice::gpu::testing
