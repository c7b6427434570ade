#include "trainer/greedy_decode.h"

namespace sluice::train {

Status GreedyDecode(const float* log_probs, int frames, int vocab,
                    const features::Tokenizer& tokenizer, std::vector<int32_t>* ids,
                    std::string* text) {
  std::vector<int32_t> best(static_cast<size_t>(frames));
  for (int t = 0; t < frames; ++t) {
    const float* row = log_probs + static_cast<size_t>(t) * vocab;
    int arg = 0;
    for (int k = 1; k < vocab; ++k)
      if (row[k] > row[arg]) arg = k;
    best[t] = arg;
  }
  ids->clear();
  features::CtcCollapse(best.data(), best.size(), ids);
  text->clear();
  return tokenizer.Decode(ids->data(), ids->size(), text);
}

}  // namespace sluice::train
