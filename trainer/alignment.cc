#include "trainer/alignment.h"

#include <algorithm>

#include "reference/conv2d.h"
#include "reference/ctc.h"

namespace sluice::train {

void FindUnalignable(const loader::Batch& batch, const std::vector<int>& rows,
                     std::vector<Unalignable>* out) {
  const int32_t* tokens = batch.tokens();
  for (const int r : rows) {
    const int U = batch.token_lengths()[r];
    if (U == 0 || tokens == nullptr) continue;
    // What the model's forward gives this row (reference/model.cc: out_len), clamped: a row
    // shorter than the convolutions' 7 frames has no output frame at all.
    const int T = std::max(0, reference::SubsampledLength(batch.lengths()[r]));
    const int need =
        reference::CtcMinInputLength(tokens + static_cast<size_t>(r) * batch.max_tokens(), U);
    if (T < need) out->push_back({std::string(batch.keys()[r]), T, U, need});
  }
}

void UnalignableTally::Add(const std::vector<Unalignable>& found) {
  count += found.size();
  for (const Unalignable& u : found)
    if (first.size() < kNamed) first.push_back(u);
}

std::string UnalignableTally::Message() const {
  if (count == 0) return "";
  std::string m = std::to_string(count) +
                  (count == 1 ? " utterance cannot be aligned" : " utterances cannot be aligned") +
                  " (they train with loss 0 and no gradient): ";
  for (size_t i = 0; i < first.size(); ++i) {
    const Unalignable& u = first[i];
    if (i > 0) m += ", ";
    m += u.key + " (T=" + std::to_string(u.frames) +
         " frames after subsampling, U=" + std::to_string(u.tokens) + " tokens";
    if (u.min_frames != u.tokens) m += ", " + std::to_string(u.min_frames) + " with repeats";
    m += ")";
  }
  if (count > first.size()) m += ", ...";
  m += ". HINT: shardify --max-tokens-per-second rejects such records up front; or filter them "
       "out of the input manifest";
  return m;
}

}  // namespace sluice::train
