#include "loader/stats.h"

#include <nlohmann/json.hpp>

namespace sluice::loader {

nlohmann::json EpochStats::ToJson() const {
  nlohmann::json j = {{"epoch", epoch},
                      {"start_batch", start_batch},
                      {"consumed_records", consumed_records},
                      {"batches", batches},
                      {"utterances", utterances},
                      {"repeated_records", repeated_records},
                      {"skipped_records", skipped_records},
                      {"split_batches", split_batches},
                      {"audio_seconds", audio_seconds},
                      {"frames", frames},
                      {"padded_frames", padded_frames},
                      {"tokens", tokens},
                      {"padding_tokens", padding_tokens},
                      {"input_columns", input_columns},
                      {"padding_waste", padding_waste()},
                      {"blocks_read", blocks_read},
                      {"segment_blocks_read", segment_blocks_read},
                      {"reread_blocks", reread_blocks},
                      {"bytes_read", bytes_read},
                      {"wall_seconds", wall_seconds},
                      {"first_batch_seconds", first_batch_seconds},
                      {"wait_seconds", wait_seconds},
                      {"read_busy_seconds", read_busy_seconds},
                      {"decode_busy_seconds", decode_busy_seconds},
                      {"collate_busy_seconds", collate_busy_seconds},
                      {"pool_batches", pool_batches},
                      {"pool_bytes", pool_bytes},
                      {"start_allocations", start_allocations},
                      {"pool_allocations", pool_allocations},
                      {"max_ready", max_ready},
                      {"max_open", max_open},
                      {"max_tokens", max_tokens},
                      {"max_open_bound", max_open_bound},
                      {"threads", threads},
                      {"blocks_in_flight", blocks_in_flight},
                      {"stream_tokens", stream_tokens},
                      {"wrapped_tokens", wrapped_tokens},
                      {"consumed_sequences", consumed_sequences},
                      {"fit_rows", fit_rows},
                      {"fit_padding", fit_padding},
                      {"split_documents", split_documents},
                      {"truncated_documents", truncated_documents},
                      {"truncated_tokens", truncated_tokens},
                      {"skipped_documents", skipped_documents},
                      {"skipped_tokens", skipped_tokens},
                      {"rank_token_spread", rank_token_spread},
                      {"rank_token_ratio", rank_token_ratio}};
  nlohmann::json counters = nlohmann::json::object();
  shards::VisitCounters(storage, [&](const char* name, uint64_t v) { counters[name] = v; });
  j["storage"] = std::move(counters);
  j["filtered_records"] = filtered_records;
  if (!filtered.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const FilterCount& f : filtered)
      list.push_back({{"reason", f.reason}, {"records", f.records}});
    j["filtered"] = std::move(list);
  }
  if (!sources.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const SourceStats& s : sources)
      list.push_back({{"records", s.records}, {"repeated", s.repeated}, {"rows", s.rows}});
    j["sources"] = std::move(list);
  }
  return j;
}

}  // namespace sluice::loader
