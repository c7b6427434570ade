// Lhotse inputs of either shape (docs/shardify-inputs.md, "Lhotse"): cuts manifests, or a
// recordings manifest with a supervisions manifest (as lhotse's recipes write them), each
// `.jsonl` or `.jsonl.gz`.
//
// The pair becomes the cuts `CutSet.from_manifests(...).trim_to_supervisions()` would make: one
// per supervision, key = the supervision's id, its span of its recording, its own text. Rejected
// with file and line: lines that are not JSON objects with an "id", duplicate ids, a supervision
// whose recording is not in the recordings manifest, a recording no supervision uses; and every
// reason a cut is rejected for (lhotse.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "importers/item.h"
#include "importers/options.h"

namespace sluice::importers {

// Looks at the first line of each file: all cuts manifests -> OpenLhotseCuts; one recordings and
// one supervisions manifest (in any order) -> the pair; anything else is an InvalidArgument
// saying what each file holds.
Status OpenLhotse(const std::vector<std::string>& paths, const ImportOptions& opt,
                  std::unique_ptr<Importer>* out);

// The pair's items held in memory (the tests' entry point): `recordings` and `supervisions` are
// the manifests' lines, `rec_name` and `sup_name` their sources.
void LhotsePairItems(const std::string& rec_name, const std::vector<std::string>& recordings,
                     const std::string& sup_name, const std::vector<std::string>& supervisions,
                     const ImportOptions& opt, std::vector<ImportItem>* out);

}  // namespace sluice::importers
