#include "loader/collator.h"

#include <string>

namespace sluice::loader {

Status CheckTokenizerCount(size_t got, uint64_t want) {
  if (got == want) return Status::OK();
  return Status::InvalidArgument(
      "the tokenizer gives " + std::to_string(got) + " token ids, the index counted " +
      std::to_string(want) +
      " (the dataset was counted with another tokenizer or normalisation; use the dataset's own: "
      "leave LoaderOptions::tokenizer empty)");
}

}  // namespace sluice::loader
