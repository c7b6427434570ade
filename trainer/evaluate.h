// Held-out evaluation after each epoch: greedy CTC decoding of every row, scored as CER/WER
// against the decoded reference ids (docs/train.md).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "comm/communicator.h"
#include "features/tokenizer.h"
#include "loader/loader.h"
#include "trainer/engine.h"
#include "trainer/error_rate.h"

namespace sluice::train {

struct EvalResult {
  double loss = 0;  // mean CTC loss per utterance
  ErrorCounts errors;
  std::vector<std::pair<std::string, std::string>> examples;  // (reference, hypothesis)
};

// Greedy decoding of every row of `eval` (a separate --eval dataset, or the training dataset's
// held-out records: MakeLoaderOptions). With several ranks each decodes its partition and the
// counts and losses are summed over ranks (a collective); the examples are this rank's.
Status Evaluate(loader::Loader* eval, Engine* engine, int V, const features::Tokenizer& tok,
                size_t max_examples, comm::Communicator* comm, EvalResult* out);

}  // namespace sluice::train
