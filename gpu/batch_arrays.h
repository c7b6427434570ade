// Every array of a HostBatch or DeviceBatch (batch_source.h) with its size, so that the feeder
// copies, lays out and sizes them all by one loop rather than by a code path per array, and a
// new array of loader::Batch is one more line here (and a case in the feeder's capacity switch,
// which the compiler asks for).
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/batch_source.h"

namespace sluice::gpu {

enum class BatchArray {
  kFeatures,
  kLengths,
  kTokens,
  kTokenLengths,
  kPositions,
  kDocIds,
  kLossMask,
  kCuSeqlens,
  kRowCuSeqlens,
  kAudioFeatures,
  kAudioLengths,
  kAudioSpans,
};
inline constexpr int kBatchArrays = 12;

// The array's name as loader::Batch spells its accessor.
inline const char* BatchArrayName(BatchArray a) {
  switch (a) {
    case BatchArray::kFeatures: return "features";
    case BatchArray::kLengths: return "lengths";
    case BatchArray::kTokens: return "tokens";
    case BatchArray::kTokenLengths: return "token_lengths";
    case BatchArray::kPositions: return "positions";
    case BatchArray::kDocIds: return "doc_ids";
    case BatchArray::kLossMask: return "loss_mask";
    case BatchArray::kCuSeqlens: return "cu_seqlens";
    case BatchArray::kRowCuSeqlens: return "row_cu_seqlens";
    case BatchArray::kAudioFeatures: return "audio_features";
    case BatchArray::kAudioLengths: return "audio_lengths";
    case BatchArray::kAudioSpans: return "audio_spans";
  }
  return "?";
}

// Calls f(BatchArray, pointer&, bytes) for each array of `b` (a HostBatch or a DeviceBatch, const
// or not), in BatchArray order; bytes is what b's dims give the array, 0 where the pointer is
// null. Through the reference a caller may set a DeviceBatch's pointers.
template <class B, class F>
void ForEachArray(B& b, F&& f) {
  const size_t rows = b.rows;
  const size_t i32 = sizeof(int32_t);
  const size_t ids = rows * static_cast<size_t>(b.max_tokens);
  const size_t columns = rows * static_cast<size_t>(b.seq_len);
  auto call = [&](BatchArray a, auto& p, size_t bytes) { f(a, p, p != nullptr ? bytes : 0); };
  call(BatchArray::kFeatures, b.features, b.features_bytes);
  call(BatchArray::kLengths, b.lengths, rows * i32);
  call(BatchArray::kTokens, b.tokens, ids * i32);
  call(BatchArray::kTokenLengths, b.token_lengths, rows * i32);
  call(BatchArray::kPositions, b.positions, columns * i32);
  call(BatchArray::kDocIds, b.doc_ids, columns * sizeof(int64_t));
  call(BatchArray::kLossMask, b.loss_mask, b.seq_len > 0 ? columns : ids);
  call(BatchArray::kCuSeqlens, b.cu_seqlens, (b.segments + 1) * i32);
  call(BatchArray::kRowCuSeqlens, b.row_cu_seqlens, (columns + rows) * i32);
  call(BatchArray::kAudioFeatures, b.audio_features, b.audio_features_bytes);
  call(BatchArray::kAudioLengths, b.audio_lengths, b.num_audio * i32);
  call(BatchArray::kAudioSpans, b.audio_spans, b.num_audio * 3 * i32);
}

}  // namespace sluice::gpu
