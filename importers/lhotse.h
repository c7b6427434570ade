// Lhotse CutSet manifests (`cuts.jsonl`, `cuts.jsonl.gz`): one cut per line, its recording inline,
// as `CutSet.to_file` writes them (docs/shardify-inputs.md, "Lhotse").
//
// A cut becomes one record: key = the cut's id, audio = its recording's file from `start` for
// `duration` seconds, text = its supervisions' texts in order of start, joined by one space.
// Rejected, naming the cut: cut types other than MonoCut/MultiCut, sources sluice cannot read
// (url, memory, shar; command unless allowed), recordings with transforms or one file per channel,
// a cut that selects some channels of a multi-channel recording (sluice mixes all channels down),
// no supervision with text.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "importers/item.h"
#include "importers/options.h"

namespace sluice::importers {

// Parses one line of a cuts manifest into *out (its audio, text, key, speaker, language), or
// sets out->reason. out->source, line and input are the caller's. Never throws.
void ParseLhotseCut(const std::string& line, const ImportOptions& opt, ImportItem* out);

// The cuts of `paths` (plain or gzip JSONL), in order.
Status OpenLhotseCuts(std::vector<std::string> paths, const ImportOptions& opt,
                      std::unique_ptr<Importer>* out);

}  // namespace sluice::importers
