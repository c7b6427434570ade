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
};

// The columns computed from the index: the first four for every dataset, all eight for a
// conversation dataset.
size_t Builtins(bool conversation) { return conversation ? kLlmTokens + 1 : kKey + 1; }

// Where each filter column's value comes from: a built-in, chars_per_second, or metadata column
// `spec` of the shard's table.
struct Source {
  FilterColumn column;
  int spec = -1;            // >= 0: a metadata column
  bool per_second = false;  // chars_per_second: metadata column `spec` / duration
};

// A dataset of another kind has no conversation columns: naming one is refused at parse time
// (an unknown column) rather than read as 0.
std::vector<Source> Sources(const std::vector<shards::ColumnSpec>& specs, bool conversation) {
  using T = FilterColumn::Type;
  std::vector<Source> out = {{{"duration", T::kNumber}},
                             {{"tokens", T::kNumber}},
                             {{"tokens_per_second", T::kNumber}},
                             {{"key", T::kString}}};
  if (conversation) {
    out.push_back({{"audio_seconds", T::kNumber}});
    out.push_back({{"text_tokens", T::kNumber}});
    out.push_back({{"encoder_frames", T::kNumber}});
    out.push_back({{"llm_tokens", T::kNumber}});
  }
  for (size_t k = 0; k < specs.size(); ++k)
    if (specs[k].name == "chars" && specs[k].type == shards::ColumnType::kInt)
      out.push_back({{"chars_per_second", T::kNumber}, static_cast<int>(k), true});
  for (size_t k = 0; k < specs.size(); ++k) {
    const T type = specs[k].type == shards::ColumnType::kString ? T::kString : T::kNumber;
    out.push_back({{specs[k].name, type}, static_cast<int>(k)});
    // Lhotse and Kaldi say language, NeMo says lang: either names the column.
    if (specs[k].name == "language") out.push_back({{"lang", type}, static_cast<int>(k)});
  }
  return out;
}

double PerSecond(double n, double seconds) {
  return seconds > 0 ? n / seconds : std::numeric_limits<double>::quiet_NaN();
}

// Record r's conversation columns in `row` (and tokens_per_second as a speech-LLM's ratio filter
// means it: the answer's tokens per second of audio).
void SetConversationColumns(const ConversationColumns& c, uint64_t r, int sample_rate,
                            FilterRow* row) {
  const double audio =
      sample_rate > 0 ? static_cast<double>(c.audio_samples[r]) / sample_rate : 0.0;
  const double targets = static_cast<double>(c.text_tokens[r]);
  row->numbers[kAudioSeconds] = audio;
  row->numbers[kTextTokens] = targets;
  row->numbers[kEncoderFrames] = static_cast<double>(c.encoder_frames[r]);
  row->numbers[kLlmTokens] = static_cast<double>(c.llm_tokens[r]);
  row->numbers[kTokensPerSecond] = PerSecond(targets, audio);
}

// The metadata columns `used` (indices into `sources`) of record `local` of a shard's `table` in
// `row`: nulls flagged, as NaN for numbers; chars_per_second divided by `seconds`.
void SetMetadataColumns(const shards::ColumnTable& table, uint64_t local, double seconds,
                        const std::vector<Source>& sources, const std::vector<size_t>& used,
                        FilterRow* row) {
  for (size_t i : used) {
    const shards::Column& c = table.columns[sources[i].spec];
    const bool null = c.is_null(local);
    row->null[i] = null;
    if (sources[i].per_second) {
      row->numbers[i] = null || !(seconds > 0) ? std::numeric_limits<double>::quiet_NaN()
                                               : static_cast<double>(c.int_at(local)) / seconds;
    } else if (c.spec.type == shards::ColumnType::kString) {
      row->strings[i] = c.string_at(local);
    } else {
      row->numbers[i] = null ? std::numeric_limits<double>::quiet_NaN()
                        : c.spec.type == shards::ColumnType::kInt
                            ? static_cast<double>(c.int_at(local))
                            : c.float_at(local);
    }
  }
}

}  // namespace

std::vector<std::string> FilterColumnNames(const std::vector<shards::ColumnSpec>& specs,
                                           bool conversation) {
  std::vector<std::string> names;
  for (const Source& c : Sources(specs, conversation)) names.push_back(c.column.name);
  return names;
}

Status SelectRecords(const std::string& where, const std::string& filter,
                     const std::function<bool(std::string_view)>& select,
                     const std::function<std::string_view(uint64_t)>& key_of, int sample_rate,
                     const ConversationColumns* conversation, const MetadataColumns& metadata,
                     IndexColumns* index, std::vector<FilterCount>* counts) {
  counts->clear();
  if (filter.empty() && !select) return Status::OK();
  const std::vector<Source> sources = Sources(metadata.specs, conversation != nullptr);
  const size_t builtins = Builtins(conversation != nullptr);
  std::unique_ptr<FilterExpr> expr;
  if (!filter.empty()) {
    for (size_t i = builtins; i < sources.size(); ++i)
      for (size_t b = 0; b < builtins; ++b)
        if (sources[i].column.name == sources[b].column.name)
          return Status::InvalidArgument(
              where + ": the dataset's metadata column '" + sources[i].column.name +
              "' has the name of a filter column computed from the index; it cannot be filtered "
              "on. HINT: shardify it again with another --keep-field name");
    std::vector<FilterColumn> columns;
    for (const Source& c : sources) columns.push_back(c.column);
    Status st = FilterExpr::Parse(filter, std::move(columns), &expr);
    if (!st.ok()) {
      std::string hint;
      if (filter.find("chars_per_second") != std::string::npos &&
          st.message().find("'chars_per_second'") != std::string::npos)
        hint =
            ". HINT: chars_per_second needs the index's chars column, which shardify audio "
            "writes since the metadata columns; shardify the corpus again";
      return Status::InvalidArgument(where + ": " + st.message() + hint);
    }
    for (const std::string& reason : expr->reasons()) counts->push_back({reason, 0});
  }
  const uint64_t n = index->num_records();
  if (conversation != nullptr &&
      (conversation->audio_samples.size() != n || conversation->text_tokens.size() != n ||
       conversation->encoder_frames.size() != n || conversation->llm_tokens.size() != n))
    return Status::InvalidArgument(where + ": conversation columns for " +
                                   std::to_string(conversation->llm_tokens.size()) +
                                   " records, the index has " + std::to_string(n));
  // Records already left out (the chunks of stored recordings) stay out and are not counted.
  const std::vector<uint8_t> prior = std::move(index->selected);
  index->selected.assign(n, 0);
  FilterRow row;
  row.numbers.assign(sources.size(), 0);
  row.strings.assign(sources.size(), {});
  row.null.assign(sources.size(), 0);
  // The metadata columns the expression reads: only those are looked up per record.
  std::vector<size_t> used_metadata;
  for (size_t i = builtins; expr && i < sources.size(); ++i)
    if (expr->uses(i)) used_metadata.push_back(i);
  const bool need_key = select || (expr && expr->uses(kKey));
  uint64_t kept = 0, selected_out = 0;
  for (uint64_t r = 0; r < n; ++r) {
    if (!prior.empty() && !prior[r]) continue;
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
      if (conversation != nullptr) SetConversationColumns(*conversation, r, sample_rate, &row);
      if (!used_metadata.empty())
        SetMetadataColumns(metadata.table(index->shard_of(r)), index->local_index(r), seconds,
                           sources, used_metadata, &row);
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
