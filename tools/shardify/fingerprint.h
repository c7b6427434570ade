// What a run's fingerprint (IngestOptions::fingerprint: its inputs and options) is compared with
// before shardify touches a directory that already holds its kind of output: the journal of an
// interrupted run, a part's marker (part.json), and a complete dataset's manifest.json, whose
// `source` records the fingerprint and the input's XXH3 (docs/shardify.md, "--resume").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace sluice::shardify {

// The first difference between this run's fingerprint and one recorded in `where` ("the
// journal", "the dataset"): "sample_rate: 8000 (the dataset: 16000)"; "" when they are equal.
std::string FingerprintDifference(const nlohmann::json& now, const nlohmann::json& recorded,
                                  const std::string& where);

// `--resume` over DIR/manifest.json, a complete dataset: OK when it was made from this input
// (`input_xxh3`) with these options, so there is nothing left to do. Otherwise InvalidArgument
// naming the option or input that differs, old and new. A manifest that records no fingerprint
// (made by merge, or by an earlier shardify) is checked against the journal a
// run left when it failed after its manifest's rename, and refused without one.
Status CheckCompleteDataset(const std::string& dir, const nlohmann::json& fingerprint,
                            const std::string& input_xxh3);

}  // namespace sluice::shardify
