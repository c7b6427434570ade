#include "trainer/evaluate.h"

#include "trainer/data_parallel.h"
#include "trainer/greedy_decode.h"

namespace sluice::train {

Status Evaluate(loader::Loader* eval, Engine* engine, int V, const features::Tokenizer& tok,
                size_t max_examples, comm::Communicator* comm, EvalResult* out) {
  *out = EvalResult();
  SLUICE_RETURN_IF_ERROR(eval->Start(0));
  std::vector<int> rows;
  std::vector<int32_t> ids;
  std::string hypothesis, reference;
  double loss_sum = 0;
  const loader::Batch* batch = nullptr;
  while (true) {
    SLUICE_RETURN_IF_ERROR(eval->Next(&batch));
    if (batch == nullptr) break;
    rows.clear();
    // Rows past size - repeated repeat records only to even out the ranks' batch counts: scoring
    // them would count those utterances twice.
    for (size_t r = 0; r + batch->repeated() < batch->size(); ++r)
      rows.push_back(static_cast<int>(r));
    if (rows.empty()) continue;
    SLUICE_RETURN_IF_ERROR(engine->EvaluateRows(
        *batch, rows, [&](int i, double loss, const float* log_probs, int frames) -> Status {
          const int r = rows[i];
          loss_sum += loss;
          SLUICE_RETURN_IF_ERROR(GreedyDecode(log_probs, frames, V, tok, &ids, &hypothesis));
          // The reference is the decoded token ids: the transcript as the tokenizer normalised it.
          reference.clear();
          SLUICE_RETURN_IF_ERROR(
              tok.Decode(batch->tokens() + static_cast<size_t>(r) * batch->max_tokens(),
                         batch->token_lengths()[r], &reference));
          out->errors.Add(reference, hypothesis);
          if (out->examples.size() < max_examples)
            out->examples.emplace_back(reference, hypothesis);
          return Status::OK();
        }));
  }
  if (comm != nullptr) {
    ErrorCounts& e = out->errors;
    int64_t counts[5] = {static_cast<int64_t>(e.char_edits), static_cast<int64_t>(e.chars),
                         static_cast<int64_t>(e.word_edits), static_cast<int64_t>(e.words),
                         static_cast<int64_t>(e.utterances)};
    SLUICE_RETURN_IF_ERROR(SumOverRanks(comm, counts, 5));
    e.char_edits = counts[0], e.chars = counts[1], e.word_edits = counts[2], e.words = counts[3];
    e.utterances = counts[4];
    SLUICE_RETURN_IF_ERROR(SumDoubles(comm, &loss_sum, 1));
  }
  if (out->errors.utterances > 0) out->loss = loss_sum / out->errors.utterances;
  return Status::OK();
}

}  // namespace sluice::train
