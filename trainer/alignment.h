// Utterances CTC cannot align: fewer output frames after the model's subsampling than their
// transcript needs (one per token plus one blank between equal adjacent tokens). Their loss is
// +inf, which the model zeroes (zero_infinity), so they train with loss 0 and no gradient:
// silently wasted unless counted. The loop counts and names them per epoch (docs/train.md,
// "Utterances that cannot be aligned"); shardify --max-tokens-per-second rejects them up front.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loader/batch.h"

namespace sluice::train {

struct Unalignable {
  std::string key;
  int frames = 0;      // output frames after subsampling
  int tokens = 0;      // transcript tokens
  int min_frames = 0;  // what an alignment needs (reference::CtcMinInputLength)
};

// Appends the rows of `batch` listed in `rows` that cannot be aligned.
void FindUnalignable(const loader::Batch& batch, const std::vector<int>& rows,
                     std::vector<Unalignable>* out);

// One epoch's count and the first few, as the epoch line reports them.
struct UnalignableTally {
  static constexpr size_t kNamed = 5;  // keys the report names
  uint64_t count = 0;
  std::vector<Unalignable> first;

  void Add(const std::vector<Unalignable>& found);
  // "3 utterances cannot be aligned: key1 (T=12 frames after subsampling, U=20 tokens), ...
  // HINT: ..." or "" when none.
  std::string Message() const;
};

}  // namespace sluice::train
