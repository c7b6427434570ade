// manifest.json: the dataset directory's table of contents
// (docs/formats/manifest.md). Written last and atomically by shardify, so a
// directory with a manifest is complete.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "shards/columns.h"
#include "shards/json_value.h"
#include "shards/storage.h"

namespace sluice::shards {

inline constexpr int kManifestVersion = 1;
inline constexpr const char* kManifestName = "manifest.json";
// What shardify leaves in its output directory until a run finishes (its journal, and its lock if
// it crashed): a directory without a manifest that holds one is an interrupted run, to resume.
inline constexpr const char* kShardifyJournalName = ".shardify-journal.jsonl";
inline constexpr const char* kShardifyLockName = ".shardify.lock";

struct ShardEntry {
  std::string file;        // name relative to the dataset directory
  uint64_t records = 0;
  uint64_t bytes = 0;      // file size
  uint64_t raw_bytes = 0;  // record payload bytes before compression
  uint64_t duration = 0;   // samples at the dataset's sample rate
  uint64_t tokens = 0;
  uint64_t xxh3 = 0;       // XXH3-64 of the whole file
  // XXH3-64 of the shard's footer, which holds the offset, size and checksum of its index: what
  // a reader checks at open, before any block is used or cached, so that a shard of another
  // version of the dataset (an upload caught half way) is an error, never data. Absent in
  // manifests written before it existed (nothing is checked then).
  std::optional<uint64_t> footer_xxh3;
};

struct Manifest {
  int version = kManifestVersion;
  std::string kind;                 // "audio" or "text"
  int sample_rate = 0;              // audio datasets: Hz of every record
  std::string codec;                // audio datasets: "pcm16" or "flac"
  std::vector<std::string> fields;  // field names present in records, e.g. ["audio", "text"]
  // The metadata columns every shard's index holds (shards/columns.h), in their order; empty:
  // none ("columns" is then absent from the JSON).
  std::vector<ColumnSpec> columns;
  // Audio datasets: how segments of long recordings are stored. "" (absent from the JSON): each
  // segment was cut at ingest into a record of its own. "stored": each recording is stored once as
  // chunk records of chunk_samples samples and each segment is a record that refers to them
  // (shards/recording.h, docs/formats/shard.md "Stored recordings").
  std::string segments;
  uint64_t chunk_samples = 0;       // segments "stored": samples per chunk (a recording's last:
                                    // fewer)
  JsonValue features;               // null, or the options of precomputed features
  JsonValue tokenizer;              // null, or the tokenizer description
  uint64_t records = 0;
  uint64_t rejected = 0;            // input lines listed in rejects.jsonl
  uint64_t tokens = 0;
  std::vector<ShardEntry> shards;
  std::string created_by;           // "shardify 0.1.0"
  JsonValue source;                 // what was read: manifest path, line count, part

  double seconds() const;  // total audio duration
  uint64_t bytes() const;  // total shard bytes
  uint64_t raw_bytes() const;
  uint64_t duration() const;
  bool has_field(const std::string& name) const;  // `name` is in `fields`
  bool stored_segments() const { return segments == "stored"; }
};

// The JSON forms below: callers include <nlohmann/json.hpp> to use them.
// One entry of "shards"; also the unit of shardify's resume journal.
nlohmann::json ShardEntryToJson(const ShardEntry& e);
Status ShardEntryFromJson(const nlohmann::json& j, const std::string& where, ShardEntry* e);

nlohmann::json ManifestToJson(const Manifest& m);
Status ManifestFromJson(const nlohmann::json& j, const std::string& where, Manifest* m);
Status LoadManifest(const std::string& dir, Manifest* m);
// The manifest of a dataset wherever it lives (a directory, or a URL through storage/).
Status LoadManifest(const Storage& storage, Manifest* m);
Status SaveManifest(const std::string& dir, const Manifest& m);  // atomic

// XXH3-64 of what a dataset holds as its manifest describes it (every shard's name, size, record
// count and XXH3; kind, rate, fields, tokenizer): the canonical JSON of manifest.json without
// "created_by" and "source", which say who wrote it from which input path. A copy at another
// path or URL has the same one, so what a run records is the data, not where it lies.
uint64_t ManifestFingerprint(const Manifest& m);

}  // namespace sluice::shards
