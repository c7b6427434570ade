// Greedy CTC decoding: the most likely class per output frame, runs collapsed and blanks dropped
// (features::CtcCollapse), then the tokenizer's Decode. What the per-epoch CER/WER measure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "features/tokenizer.h"

namespace sluice::train {

// log_probs: `frames` rows of `vocab` scores (any monotone transform of probabilities); ties go
// to the lower id. `ids` is scratch the caller may reuse. InvalidArgument (from Decode) if the
// model's vocabulary is larger than the tokenizer's.
Status GreedyDecode(const float* log_probs, int frames, int vocab,
                    const features::Tokenizer& tokenizer, std::vector<int32_t>* ids,
                    std::string* text);

}  // namespace sluice::train
