#include "loader/record_filter.h"

#include <limits>
#include <memory>

#include "loader/filter_expr.h"

namespace sluice::loader {
namespace {

enum Column { kDuration, kTokens, kTokensPerSecond, kKey, kColumns };

std::vector<FilterColumn> Columns() {
  using T = FilterColumn::Type;
  return {{"duration", T::kNumber},
          {"tokens", T::kNumber},
          {"tokens_per_second", T::kNumber},
          {"key", T::kString}};
}

}  // namespace

std::vector<std::string> FilterColumnNames() {
  std::vector<std::string> names;
  for (const FilterColumn& c : Columns()) names.push_back(c.name);
  return names;
}

Status SelectRecords(const std::string& where, const std::string& filter,
                     const std::function<bool(std::string_view)>& select,
                     const std::function<std::string_view(uint64_t)>& key_of, int sample_rate,
                     IndexColumns* index, std::vector<FilterCount>* counts) {
  counts->clear();
  if (filter.empty() && !select) return Status::OK();  // index->selected as it was
  std::unique_ptr<FilterExpr> expr;
  if (!filter.empty()) {
    Status st = FilterExpr::Parse(filter, Columns(), &expr);
    if (!st.ok()) return Status::InvalidArgument(where + ": " + st.message());
    for (const std::string& reason : expr->reasons()) counts->push_back({reason, 0});
  }
  const uint64_t n = index->num_records();
  // Records already left out (the chunks of stored recordings) stay out and are not counted.
  const std::vector<uint8_t> prior = std::move(index->selected);
  index->selected.assign(n, 0);
  FilterRow row;
  row.numbers.assign(kColumns, 0);
  row.strings.assign(kColumns, {});
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
      row.numbers[kTokensPerSecond] =
          seconds > 0 ? index->tokens[r] / seconds : std::numeric_limits<double>::quiet_NaN();
      row.strings[kKey] = key;
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
