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
#include "shards/columns.h"

namespace sluice::loader {

// What a filter may read of each conversation record besides the index columns, from the
// index's turn tables (ConversationIndexColumns, conversation_plan.h), per record in IndexColumns'
// order.
struct ConversationColumns {
  std::vector<uint64_t> audio_samples;   // all audio turns' samples
  std::vector<uint64_t> text_tokens;     // the assistant turns' token ids: the targets
  std::vector<uint64_t> encoder_frames;  // all audio turns' encoder frames
  std::vector<uint64_t> llm_tokens;      // the rendering's length: the record's cost in a row
};

// The dataset's metadata columns (shards/columns.h) as the filter reads them: manifest.json's list
// and each shard's table (which Dataset::Open checked against it).
struct MetadataColumns {
  std::vector<shards::ColumnSpec> specs;
  std::function<const shards::ColumnTable&(uint32_t shard)> table;
};

// The columns a filter may name, in this order: duration (seconds), tokens (the index's token
// ids), tokens_per_second (tokens / duration; NaN without audio) and key (the record key). With
// `conversation`, also audio_seconds, text_tokens, encoder_frames and llm_tokens (its
// ConversationColumns), and tokens_per_second is then text_tokens / audio_seconds: target tokens
// per second of audio (NaN without an audio turn). Then, with an int "chars" column,
// chars_per_second (chars / duration), and the dataset's metadata columns by their names
// ("language" also as "lang"), ints and floats as numbers.
std::vector<std::string> FilterColumnNames(const std::vector<shards::ColumnSpec>& specs = {},
                                           bool conversation = false);

// Marks index->selected: a record stays when it was selected before (index->selected empty: every
// record was) and `select` (may be empty) accepts its key and
// `filter` (may be "") holds for it. *counts gets one entry per reason of the filter with the
// records it left out (a record counts under the first reason it fails; `select`'s are not
// counted). `sample_rate` turns durations into seconds. `conversation` (nullptr: not a
// conversation dataset, whose columns a filter may then not name) gives the conversation
// columns; `metadata` the dataset's metadata columns. An expression that does not parse, or a
// filter and select that keep nothing, is InvalidArgument naming `where`.
Status SelectRecords(const std::string& where, const std::string& filter,
                     const std::function<bool(std::string_view)>& select,
                     const std::function<std::string_view(uint64_t)>& key_of, int sample_rate,
                     const ConversationColumns* conversation, const MetadataColumns& metadata,
                     IndexColumns* index, std::vector<FilterCount>* counts);

}  // namespace sluice::loader
