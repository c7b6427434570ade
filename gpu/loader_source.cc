#include "gpu/loader_source.h"

#include <algorithm>

namespace sluice::gpu {

HostBatch HostBatchOf(const loader::Batch& b) {
  HostBatch h;
  h.epoch = b.epoch();
  h.index = b.index();
  h.rows = b.size();
  h.frames = b.frames();
  h.dim = b.dim();
  h.dtype = b.dtype();
  h.features = b.features();
  h.features_bytes = b.features_bytes();
  h.lengths = b.lengths().data();
  h.max_tokens = b.max_tokens();
  h.tokens = b.max_tokens() > 0 ? b.tokens() : nullptr;
  h.token_lengths = b.max_tokens() > 0 ? b.token_lengths().data() : nullptr;
  return h;
}

Status LoaderSource::Next(HostBatch* out, bool* end) {
  const loader::Batch* b = nullptr;
  SLUICE_RETURN_IF_ERROR(loader_->Next(&b));
  *end = b == nullptr;
  if (b == nullptr) return Status::OK();
  *out = HostBatchOf(*b);
  return Status::OK();
}

int LoaderSource::holds() const { return loader_->options().consumer_batches; }

FeedCapacity CapacityForPlan(const loader::Loader& l, size_t tokens_per_row) {
  FeedCapacity c;
  const loader::FeatureInfo& info = l.feature_info();
  const loader::BatchShape largest = l.max_batch_shape();
  c.feature_bytes = largest.padded_frames * info.dim * loader::DTypeSize(info.dtype);
  c.rows = largest.rows;
  // The index's token counts, where the records carry them, are the plan's widest token row.
  c.token_ids = c.rows * std::max<size_t>(tokens_per_row, largest.tokens);
  return c;
}

}  // namespace sluice::gpu
