// LoaderOptions::filter applied to a dataset's index (docs/loader.md, "Filters"): which records
// the epochs hold, decided from the index columns alone before order and rank split, and how
// many each reason left out.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "loader/plan.h"
#include "loader/stats.h"

namespace sluice::loader {

// The columns a filter may name, in this order: duration (seconds), tokens (the index's token
// ids), tokens_per_second (tokens / duration; NaN without audio) and key (the record key).
std::vector<std::string> FilterColumnNames();

// Marks index->selected: a record stays when it was selected before (index->selected empty: every
// record was) and `select` (may be empty) accepts its key and
// `filter` (may be "") holds for it. *counts gets one entry per reason of the filter with the
// records it left out (a record counts under the first reason it fails; `select`'s are not
// counted). `sample_rate` turns durations into seconds. An expression that does not parse, or a
// filter and select that keep nothing, is InvalidArgument naming `where`.
Status SelectRecords(const std::string& where, const std::string& filter,
                     const std::function<bool(std::string_view)>& select,
                     const std::function<std::string_view(uint64_t)>& key_of, int sample_rate,
                     IndexColumns* index, std::vector<FilterCount>* counts);

}  // namespace sluice::loader
