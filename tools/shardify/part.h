// Parts of a shardify run on a cluster (docs/shardify.md "Slurm"): which part
// this process is (`--part i/N`, `auto`, `auto/N`), the completion marker a
// finished part leaves (DIR/part.json), and how `merge` checks that a set of
// part directories is complete before it combines them.
//
// A part directory is complete when it holds part.json; shardify writes it
// atomically after everything else (shards, rejects.jsonl, tokenizer.model,
// manifest.json), so a part that crashed, was killed or is still running has
// none, whatever else it left behind.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "shards/manifest.h"

namespace sluice::shardify {

inline constexpr const char* kPartMarkerName = "part.json";
// The journal of an interrupted run (ingest.h), which tells merge which part an incomplete
// directory was.
inline constexpr const char* kJournalName = shards::kShardifyJournalName;
inline constexpr int kPartMarkerVersion = 1;

struct PartMarker {
  uint32_t part = 0;  // this is part `part` of `parts`
  uint32_t parts = 1;
  uint64_t first_item = 0;  // the part's input items are [first_item, end_item) ...
  uint64_t end_item = 0;
  uint64_t input_items = 0;  // ... of this many in the whole input
  std::string input_xxh3;    // XXH3-64 (hex) of the whole input's items, the same in every part
  nlohmann::json options;    // the run's inputs and options (the --resume fingerprint)
  nlohmann::json writer;     // {shard_size, block_size, zstd_level}: what merge --repack reuses
  uint64_t records = 0;
  uint64_t rejected = 0;
  std::string manifest_xxh3;  // XXH3-64 (hex) of the part's manifest.json as written
  std::string created_by;     // "shardify 0.1.0"
};

nlohmann::json PartMarkerToJson(const PartMarker& m);
Status PartMarkerFromJson(const nlohmann::json& j, const std::string& where, PartMarker* m);
// Atomic (write to .tmp, fsync, rename, fsync the directory).
Status WritePartMarker(const std::string& dir, const PartMarker& m);
// NotFound when DIR/part.json is absent; Corruption when it is unreadable.
Status LoadPartMarker(const std::string& dir, PartMarker* m);
// "3/16"
std::string PartSpec(uint32_t part, uint32_t parts);
// The part ("3/16") named by the first line of DIR's journal (an interrupted part), or "".
std::string JournalPart(const std::string& dir);

// Parses "i/N" into part and parts.
Status ParsePart(const std::string& spec, uint32_t* part, uint32_t* parts);

// Resolves --part. "i/N": as given. "auto": i = SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN
// (MIN defaults to 0) and N = SLURM_ARRAY_TASK_COUNT, for an array whose ids are one contiguous
// range. "auto/N": i = SLURM_ARRAY_TASK_ID, N as given, for any array of 0-based ids, such as a
// rerun of some parts (`sbatch --array=3,7`), where COUNT is the rerun's size, not N.
// InvalidArgument naming the variables when they are missing or inconsistent.
using EnvFn = std::function<const char*(const char* name)>;
Status ResolvePart(const std::string& spec, const EnvFn& env, uint32_t* part, uint32_t* parts);

struct CompletePart {
  std::string dir;
  PartMarker marker;
};

// Checks that `dirs` hold every part 0..N-1 of one run exactly once, each complete and made
// from the same input with the same options, and returns them in part order. Otherwise
// InvalidArgument naming the missing or incomplete parts by index and directory, e.g.
// "parts 3, 7 of 16 missing or incomplete: parts/3 (...), parts/7 (...)".
Status CollectParts(const std::vector<std::string>& dirs, std::vector<CompletePart>* parts);

// The subdirectories of `parent`: numeric names in numeric order, then the rest by name.
Status ListPartDirs(const std::string& parent, std::vector<std::string>* dirs);

}  // namespace sluice::shardify
