// BatchBuffer: a pooled batch as the loader fills it: the Batch a consumer reads, its fields
// writable, and the state of its collation, which the consumer never sees. Each buffer is owned
// by one party at a time: the pool, the pipeline (being filled), the ready queue, or the consumer
// (as a const Batch*).
#pragma once

#include <cstdint>
#include <vector>

#include "loader/batch.h"

namespace sluice::loader {

class BatchBuffer : public Batch {
 public:
  BatchFields& fields() { return f_; }

  // Collate state, owned by the pipeline while the batch is being filled.
  std::vector<std::vector<int32_t>> row_tokens;  // padded batches: each row's ids until Finish
  std::vector<std::vector<uint8_t>> row_loss;    // padded conversations: each row's loss mask
  std::vector<uint8_t> row_ok;  // per row: 0 when its record was lost (corrupt block)
  uint32_t remaining = 0;       // read items not yet collated
  size_t token_reserve = 0;     // bytes of token ids BatchPool::ReserveMemory gave every batch
  // Conversation audio (loader/conversation_audio.h): the first audio slot of each of the
  // batch's entries (and one past the last), and per row the row whose audio it holds (itself,
  // the intact row a lost one copies, or -1 for a cleared row).
  std::vector<uint32_t> audio_first;
  std::vector<int32_t> audio_source;
};

}  // namespace sluice::loader
