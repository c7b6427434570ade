#include "loader/digest.h"

namespace sluice::loader {

void BatchDigest::Add(const Batch& b) {
  const int64_t shape[4] = {static_cast<int64_t>(b.size()), b.frames(), b.dim(), b.max_tokens()};
  sum_.Update(shape, sizeof(shape));
  for (std::string_view k : b.keys()) {
    const uint64_t n = k.size();
    sum_.Update(&n, sizeof(n));
    sum_.Update(k.data(), n);
  }
  for (const std::string& t : b.texts()) {
    const uint64_t n = t.size();
    sum_.Update(&n, sizeof(n));
    sum_.Update(t.data(), n);
  }
  sum_.Update(b.lengths().data(), b.size() * sizeof(int32_t));
  sum_.Update(b.features(), b.features_bytes());
  if (b.max_tokens() > 0) {
    sum_.Update(b.token_lengths().data(), b.size() * sizeof(int32_t));
    sum_.Update(b.tokens(), b.size() * b.max_tokens() * sizeof(int32_t));
  }
  if (b.seq_len() > 0) {  // packed: what the model is told about the documents
    const size_t columns = b.size() * static_cast<size_t>(b.seq_len());
    sum_.Update(b.positions(), columns * sizeof(int32_t));
    sum_.Update(b.doc_ids(), columns * sizeof(int64_t));
    sum_.Update(b.loss_mask(), columns);
    sum_.Update(b.cu_seqlens().data(), b.cu_seqlens().size() * sizeof(int32_t));
  } else if (b.loss_mask() != nullptr) {  // padded conversation rows
    sum_.Update(b.loss_mask(), b.size() * static_cast<size_t>(b.max_tokens()));
  }
  if (b.num_audio() > 0) {  // conversation audio: what fills the placeholder spans
    const int64_t shape[3] = {static_cast<int64_t>(b.num_audio()), b.audio_frames(), b.audio_dim()};
    sum_.Update(shape, sizeof(shape));
    sum_.Update(b.audio_features(), b.audio_features_bytes());
    sum_.Update(b.audio_lengths().data(), b.audio_lengths().size() * sizeof(int32_t));
    sum_.Update(b.audio_spans().data(), b.audio_spans().size() * sizeof(int32_t));
  }
}

uint64_t DigestOf(const Batch& b) {
  BatchDigest d;
  d.Add(b);
  return d.value();
}

}  // namespace sluice::loader
