#include "pattern_source.h"

#include <algorithm>
#include <cstring>

#include "gpu/batch_arrays.h"

namespace sluice::gpu::testing {

PatternShape ShapeOf(uint64_t i, const PatternShape& m) {
  PatternShape s;
  s.rows = 1 + (i * 7) % m.rows;
  s.frames = 1 + static_cast<int64_t>((i * 13) % static_cast<uint64_t>(m.frames));
  s.dim = m.dim;
  s.max_tokens = m.max_tokens == 0
                     ? 0
                     : 1 + static_cast<int64_t>((i * 5) % static_cast<uint64_t>(m.max_tokens));
  s.seq_len = m.seq_len;  // packed rows are all seq_len wide
  s.audio = m.audio == 0 ? 0 : 1 + (i * 3) % m.audio;
  s.audio_frames =
      m.audio == 0 ? 0 : 1 + static_cast<int64_t>((i * 11) % static_cast<uint64_t>(m.audio_frames));
  return s;
}

PatternSource::PatternSource(int holds, uint64_t batches, PatternShape max_shape,
                             std::shared_ptr<loader::BatchAllocator> allocator)
    : holds_(holds), batches_(batches), max_(max_shape), allocator_(std::move(allocator)) {
  const size_t a = loader::kBatchAlignment;
  // The largest batch's arrays, as ForEachArray sizes them.
  HostBatch most;
  const unsigned char any = 0;
  most.rows = max_.rows;
  most.max_tokens = max_.max_tokens;
  if (max_.seq_len > 0) {
    most.seq_len = max_.seq_len;
    most.segments = max_.rows * static_cast<size_t>(max_.seq_len);
    most.positions = most.row_cu_seqlens = most.cu_seqlens = reinterpret_cast<const int32_t*>(&any);
    most.doc_ids = reinterpret_cast<const int64_t*>(&any);
    most.loss_mask = &any;
  }
  if (max_.audio > 0) {
    most.num_audio = max_.audio;
    most.audio_features_bytes =
        max_.audio * static_cast<size_t>(max_.audio_frames) * static_cast<size_t>(max_.dim) * 4;
    most.audio_features = &any;
    most.audio_lengths = most.audio_spans = reinterpret_cast<const int32_t*>(&any);
  }
  ForEachArray(most, [&](BatchArray which, const auto&, size_t bytes) {
    if (which >= BatchArray::kPositions) extra_bytes_.push_back(bytes);
  });
  for (int i = 0; i < holds_; ++i) {
    Buffer b;
    b.features = static_cast<float*>(allocator_->Allocate(max_feature_bytes(), a));
    b.lengths = static_cast<int32_t*>(allocator_->Allocate(max_.rows * 4, a));
    b.tokens = static_cast<int32_t*>(
        allocator_->Allocate(max_.rows * std::max<int64_t>(max_.max_tokens, 1) * 4, a));
    b.token_lengths = static_cast<int32_t*>(allocator_->Allocate(max_.rows * 4, a));
    for (size_t n : extra_bytes_)
      b.extra.push_back(
          static_cast<unsigned char*>(allocator_->Allocate(std::max<size_t>(n, 1), a)));
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
    for (size_t k = 0; k < b.extra.size(); ++k)
      allocator_->Free(b.extra[k], std::max<size_t>(extra_bytes_[k], 1), a);
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
    for (size_t k = 0; k < b.extra.size(); ++k) {
      if (on_recycle_) on_recycle_(b.extra[k], extra_bytes_[k]);
      std::memset(b.extra[k], 0xEE, extra_bytes_[k]);
    }
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
  if (s.seq_len > 0) {
    h.seq_len = s.seq_len;
    h.segments = 1 + i % (s.rows * static_cast<size_t>(s.seq_len));
    h.positions = reinterpret_cast<const int32_t*>(b.extra[0]);
    h.doc_ids = reinterpret_cast<const int64_t*>(b.extra[1]);
    h.loss_mask = b.extra[2];
    h.cu_seqlens = reinterpret_cast<const int32_t*>(b.extra[3]);
    h.row_cu_seqlens = reinterpret_cast<const int32_t*>(b.extra[4]);
  }
  if (s.audio > 0) {
    h.num_audio = s.audio;
    h.audio_frames = s.audio_frames;
    h.audio_dim = s.dim;
    h.audio_features_bytes =
        s.audio * static_cast<size_t>(s.audio_frames) * static_cast<size_t>(s.dim) * sizeof(float);
    h.audio_features = b.extra[5];
    h.audio_lengths = reinterpret_cast<const int32_t*>(b.extra[6]);
    h.audio_spans = reinterpret_cast<const int32_t*>(b.extra[7]);
  }
  // The bytes of every array past the token ones, now that h gives their sizes.
  ForEachArray(h, [&](BatchArray which, const auto&, size_t bytes) {
    if (which < BatchArray::kPositions) return;
    const int a = static_cast<int>(which);
    unsigned char* dst = b.extra[a - static_cast<int>(BatchArray::kPositions)];
    for (size_t p = 0; p < bytes; ++p) dst[p] = PatternByte(i, a, p);
  });
  return Status::OK();
}

}  // namespace sluice::gpu::testing
