// `--overwrite` over a complete dataset keeps it until the new one exists: its files move into
// DIR/.shardify-replaced/ before the run starts and are deleted once the new manifest.json is
// durable. A run that writes no record (every input rejected) puts them back instead, so a bad
// input never replaces a good dataset with an empty one (docs/shardify.md, "Nothing lost").
//
// Crash safety: manifest.json moves first and comes back last, so DIR is a dataset (the old one)
// or is not, never a mix. A run that crashed in between leaves the set-aside beside its journal;
// the --resume or --overwrite that follows deletes it when it completes, or puts it back when it
// too writes nothing.
#pragma once

#include <string>

#include "base/status.h"

namespace sluice::shardify {

inline constexpr const char* kSetAsideName = ".shardify-replaced";

// Moves DIR's dataset (manifest.json, the shards, rejects.jsonl, tokenizer.model, part.json) into
// DIR/.shardify-replaced, replacing a set-aside an earlier run left (DIR's dataset is newer).
Status SetAsideDataset(const std::string& dir);

// Puts a set-aside dataset back into DIR, removing the files of the same names there (the
// failed run's rejects.jsonl); *restored false when there was none.
Status RestoreDataset(const std::string& dir, bool* restored);

// Deletes the set-aside, if any: the new dataset is complete.
Status DiscardSetAside(const std::string& dir);

}  // namespace sluice::shardify
