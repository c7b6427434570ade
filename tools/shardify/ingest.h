// The engine shared by `shardify audio` and `shardify text`:
//
//   ItemSource (serial, in order) -> Process (parallel) -> write (serial, in order)
//
// on a oneTBB parallel_pipeline. The write stage sees items in input order,
// so the shards are byte-identical whatever the thread count. Every item ends
// as a record or as a line of rejects.jsonl. Crash safety: shards appear under
// their final name only when complete; after each one, a journal line records
// how far the input got, so --resume restarts at the first unfinished shard
// and produces the same bytes as an uninterrupted run. manifest.json is
// written last, atomically, and the journal removed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "importers/item.h"
#include "shards/dataset_writer.h"
#include "shards/manifest.h"
#include "shards/recording.h"

namespace sluice::shardify {

struct InputItem {
  uint64_t index = 0;  // position in the whole input, 0-based
  std::string source;  // file the item came from, for rejects and errors
  uint64_t line = 0;   // 1-based line of the item in `source`
  std::string text;    // the raw manifest line, text line or document
  // Set by ImportSource (shardify audio --from lhotse|kaldi|wds): the item as its importer
  // parsed it, in the serial stage; `text` then holds what rejects.jsonl shows of it.
  std::shared_ptr<const importers::ImportItem> imported;
  // Set with --segments stored (ImportSource grouping): every item of one recording, in input
  // order (`imported` is the first). The item is then the recording: its result is a group.
  std::shared_ptr<const std::vector<importers::ImportItem>> recording;
};

// One entry of a recording's group (--segments stored, shards/recording.h): a record to write or
// an input item rejected. Records: the recording's chunks, then its segments.
struct GroupEntry {
  bool ok = false;
  std::string key;
  uint64_t duration = 0;
  uint32_t tokens = 0;
  std::string payload;
  // The record's aux bytes. A segment's ref.chunk counts from the recording's first chunk: the
  // write stage adds that chunk's shard-local record index, known only there.
  shards::RecordingRef ref;
  // One value per column of IngestOptions::writer.shard.columns: a segment's metadata; a chunk,
  // which is audio and no utterance, has them all null.
  std::vector<shards::ColumnValue> columns;
  // A rejected item (ok false): where it came from and why, for rejects.jsonl.
  std::string source;
  uint64_t line = 0;
  std::string input;
  std::string reason;
};

struct ItemResult {
  bool ok = false;
  std::string reason;      // when !ok: why the item was rejected
  std::string key;
  uint64_t duration = 0;   // samples at the dataset's rate
  uint32_t tokens = 0;
  std::string payload;     // record fields (shards/record.h)
  std::string aux;         // the record's bytes in the index's aux area (shards/format.h)
  // One value per column of IngestOptions::writer.shard.columns (shards/columns.h).
  std::vector<shards::ColumnValue> columns;
  // Non-empty: the item was a recording (InputItem::recording) and this is what it gave; the
  // fields above but for input_bytes, warning, clipped_samples and fault are unused then.
  std::vector<GroupEntry> group;
  uint64_t input_bytes = 0;
  // Kept, but worth a word: printed to stderr as "shardify: warning: ..." in input order.
  std::string warning;
  uint64_t clipped_samples = 0;  // samples beyond full scale, clamped (float sources)
  // A machine fault while reading the item (EIO): stops the run with this error instead of
  // rejecting an item an undisturbed run would keep; --resume then continues.
  Status fault;
};

class ItemSource {
 public:
  virtual ~ItemSource() = default;
  // Counts the items (a cheap first pass), for progress and --part, and digests them
  // (XXH3-64 of the input's lines in order): the input identity a part's marker records, so
  // merge can tell parts cut from different versions of the input.
  virtual Status Count(uint64_t* n, uint64_t* digest) = 0;
  // Next item, in order; false at the end. Sets *status on a read error.
  virtual bool Next(InputItem* item, Status* status) = 0;
};

// Must be thread-safe: called for many items at once.
using ProcessFn = std::function<void(const InputItem&, ItemResult*)>;

struct IngestOptions {
  std::string out_dir;
  shards::DatasetWriterOptions writer;
  int threads = 0;           // 0: the usable cores (base/cpus.h: affinity and cgroup quota)
  uint32_t part = 0;         // this run handles part `part` of `parts` (contiguous item ranges)
  uint32_t parts = 1;
  // --part was given: the directory is one part of a run. It gets a completion marker
  // (part.json, part.h) and reruns are idempotent: a part completed with the same inputs and
  // options is not redone, an incomplete one is removed and redone (docs/shardify.md).
  bool is_part = false;
  bool resume = false;
  bool overwrite = false;
  bool progress = true;      // drawn only on a terminal
  std::string progress_what = "items";
  nlohmann::json fingerprint;  // input + options; --resume refuses a journal made with others
  // Files written (atomically) into the dataset just before manifest.json,
  // e.g. the tokenizer model: name -> bytes.
  std::vector<std::pair<std::string, std::string>> extra_files;
};

struct IngestSummary {
  uint64_t items = 0;        // inputs of this part
  uint64_t records = 0;
  uint64_t rejected = 0;
  uint64_t input_bytes = 0;        // read by this run
  uint64_t duration_this_run = 0;  // samples in the shards this run wrote (rates: not resumed ones)
  uint64_t clipped_files = 0;      // records of this run with samples clipped (ItemResult)
  uint64_t clipped_samples = 0;
  double wall_seconds = 0;
  bool resumed = false;
  uint64_t resumed_at_item = 0;
  // A complete part (part.json) or, with --resume, a complete dataset: nothing was done.
  bool already_complete = false;
  shards::Manifest manifest;
};

// Runs the whole ingest. `manifest` comes in with the dataset-level fields set
// (kind, sample_rate, codec, fields, features, tokenizer, created_by, source)
// and is completed and saved as DIR/manifest.json.
Status RunIngest(ItemSource* source, const ProcessFn& process, const IngestOptions& options,
                 shards::Manifest manifest, IngestSummary* summary);

// Prints the summary: one line, or one JSON object with --json.
void PrintSummary(const IngestSummary& s, bool json);

}  // namespace sluice::shardify
