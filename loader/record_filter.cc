#include "loader/record_filter.h"

#include <limits>
#include <memory>

#include "loader/filter_expr.h"

namespace sluice::loader {
namespace {

enum Column {
  kDuration,
  kTokens,
  kTokensPerSecond,
  kKey,
  // Conversation datasets only.
  kAudioSeconds,
  kTextTokens,
  kEncoderFrames,
  kLlmTokens,
  kColumns
};

// A dataset of another kind has no conversation columns: naming one is refused at parse time
// (an unknown column) rather than read as 0.
std::vector<FilterColumn> Columns(bool conversation) {
  using T = FilterColumn::Type;
  std::vector<FilterColumn> c = {{"duration", T::kNumber},
                                 {"tokens", T::kNumber},
                                 {"tokens_per_second", T::kNumber},
                                 {"key", T::kString}};
  if (conversation) {
    c.push_back({"audio_seconds", T::kNumber});
    c.push_back({"text_tokens", T::kNumber});
    c.push_back({"encoder_frames", T::kNumber});
    c.push_back({"llm_tokens", T::kNumber});
  }
  return c;
}

double PerSecond(double n, double seconds) {
  return seconds > 0 ? n / seconds : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

std::vector<std::string> FilterColumnNames(bool conversation) {
  std::vector<std::string> names;
  for (const FilterColumn& c : Columns(conversation)) names.push_back(c.name);
  return names;
}

Status SelectRecords(const std::string& where, const std::string& filter,
                     const std::function<bool(std::string_view)>& select,
                     const std::function<std::string_view(uint64_t)>& key_of, int sample_rate,
                     const ConversationColumns* conversation, IndexColumns* index,
                     std::vector<FilterCount>* counts) {
  counts->clear();
  if (filter.empty() && !select) return Status::OK();
  std::unique_ptr<FilterExpr> expr;
  if (!filter.empty()) {
    Status st = FilterExpr::Parse(filter, Columns(conversation != nullptr), &expr);
    if (!st.ok()) return Status::InvalidArgument(where + ": " + st.message());
    for (const std::string& reason : expr->reasons()) counts->push_back({reason, 0});
  }
  const uint64_t n = index->num_records();
  if (conversation != nullptr &&
      (conversation->audio_samples.size() != n || conversation->text_tokens.size() != n ||
       conversation->encoder_frames.size() != n || conversation->llm_tokens.size() != n))
    return Status::InvalidArgument(where + ": conversation columns for " +
                                   std::to_string(conversation->llm_tokens.size()) +
                                   " records, the index has " + std::to_string(n));
  index->selected.assign(n, 0);
  FilterRow row;
  row.numbers.assign(kColumns, 0);
  row.strings.assign(kColumns, {});
  const bool need_key = select || (expr && expr->uses(kKey));
  uint64_t kept = 0, selected_out = 0;
  for (uint64_t r = 0; r < n; ++r) {
    const std::string_view key = need_key ? key_of(r) : std::string_view();
    if (select && !select(key)) {
      ++selected_out;
      continue;
    }
    if (expr) {
      const double seconds =
          sample_rate > 0 ? static_cast<double>(index->duration[r]) / sample_rate : 0.0;
      row.numbers[kDuration] = seconds;
      row.numbers[kTokens] = index->tokens[r];
      row.numbers[kTokensPerSecond] = PerSecond(index->tokens[r], seconds);
      row.strings[kKey] = key;
      if (conversation != nullptr) {
        const double audio = sample_rate > 0
                                 ? static_cast<double>(conversation->audio_samples[r]) / sample_rate
                                 : 0.0;
        const double targets = static_cast<double>(conversation->text_tokens[r]);
        row.numbers[kAudioSeconds] = audio;
        row.numbers[kTextTokens] = targets;
        row.numbers[kEncoderFrames] = static_cast<double>(conversation->encoder_frames[r]);
        row.numbers[kLlmTokens] = static_cast<double>(conversation->llm_tokens[r]);
        // What a speech-LLM's ratio filter means: the answer's tokens per second of audio.
        row.numbers[kTokensPerSecond] = PerSecond(targets, audio);
      }
      if (const int why = expr->Reject(row); why >= 0) {
        ++(*counts)[why].records;
        continue;
      }
    }
    index->selected[r] = 1;
    ++kept;
  }
  if (kept > 0) return Status::OK();
  std::string by;
  for (const FilterCount& c : *counts)
    by += "; '" + c.reason + "' left out " + std::to_string(c.records);
  if (select) by += "; LoaderOptions::select left out " + std::to_string(selected_out);
  return Status::InvalidArgument(
      where + ": " +
      (filter.empty() ? std::string("LoaderOptions::select") : "filter '" + filter + "'") +
      " keeps none of its " + std::to_string(n) + " records" + by);
}

}  // namespace sluice::loader
