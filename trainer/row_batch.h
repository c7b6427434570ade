// RowBatch: selected rows of a loader batch, copied into a dense model batch. The trainer needs
// the copy anyway to give each replica its own share (and the model its float32 features), and
// it re-pads each share to its own longest row (a share of short rows does not pay for the long
// ones). Buffers are kept between steps: steady state allocates nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "reference/model.h"
#include "loader/batch.h"

namespace sluice::train {

class RowBatch {
 public:
  // Copies rows[0, n) of `batch` (float32 features). InvalidArgument naming the record's key when
  // a token id is outside [1, vocab) (blank in a transcript, or a tokenizer larger than the model).
  Status Fill(const loader::Batch& batch, const int* rows, int n, int vocab);
  reference::ModelBatch<float> View() const;
  int size() const { return B_; }

 private:
  int B_ = 0, T_ = 0, F_ = 0, S_max_ = 0;
  std::vector<float> features_;
  std::vector<int32_t> frames_, labels_, label_lengths_;
};

}  // namespace sluice::train
