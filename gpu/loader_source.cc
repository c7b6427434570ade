#include "gpu/loader_source.h"

#include <algorithm>
#include <span>

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
  h.seq_len = b.seq_len();
  h.positions = b.positions();
  h.doc_ids = b.doc_ids();
  h.loss_mask = b.loss_mask();
  const std::span<const int32_t> cu = b.cu_seqlens();
  h.cu_seqlens = cu.empty() ? nullptr : cu.data();
  h.segments = cu.empty() ? 0 : cu.size() - 1;
  h.row_cu_seqlens = b.row_cu_seqlens();
  if (b.num_audio() > 0) {
    h.num_audio = b.num_audio();
    h.audio_frames = b.audio_frames();
    h.audio_dim = b.audio_dim();
    h.audio_features = b.audio_features();
    h.audio_features_bytes = b.audio_features_bytes();
    h.audio_lengths = b.audio_lengths().data();
    h.audio_spans = b.audio_spans().data();
  }
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
  // Packed rows: seq_len input columns each; padded conversation rows: a loss mask byte per id.
  const loader::LoaderOptions& o = l.options();
  c.packed_columns = c.rows * o.packing.seq_len;
  const bool conversation = !o.conversation.chat_template.empty();
  c.loss_mask_bytes = c.packed_columns > 0 ? c.packed_columns : conversation ? c.token_ids : 0;
  // Audio turns: the plan's count and frames per batch, as Loader::Start reserves its pool.
  if (info.audio_turns) {
    c.audio = largest.audio;
    c.audio_feature_bytes = largest.padded_audio_frames * info.dim * loader::DTypeSize(info.dtype);
  }
  return c;
}

}  // namespace sluice::gpu
