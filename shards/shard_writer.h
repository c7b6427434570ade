// ShardWriter: appends records to one shard file (docs/formats/shard.md).
//
// Records are packed into raw blocks of about options.block_size bytes; each
// full block is compressed as an independent zstd frame and written at once,
// so memory stays at one block whatever the shard size. Finish() appends the
// index and footer, fsyncs and renames `path.tmp` to `path`: a shard file
// that exists under its final name is complete.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "shards/columns.h"
#include "shards/format.h"

namespace sluice::shards {

struct ShardWriterOptions {
  size_t block_size = kDefaultBlockSize;  // raw bytes per block before compression
  int zstd_level = 3;  // -7 (fastest) .. 19 (smallest); negative levels are zstd's fast modes
  // The dataset's metadata columns (manifest.json "columns"): every record gives one value per
  // column (RecordMeta::columns). Empty: the shard has no columns area.
  std::vector<ColumnSpec> columns;
};

// Index columns of one record; samplers read these without touching payload.
struct RecordMeta {
  std::string_view key;   // unique within the dataset; at most kMaxKeySize bytes
  uint64_t duration = 0;  // audio: samples at the dataset's sample rate; text: 0
  uint32_t tokens = 0;    // token ids stored with the record (0 if none)
  // The record's bytes in the index's aux area (the dataset kind's layout, e.g. a conversation's
  // turn table); a shard none of whose records has any is written without an aux area.
  std::string_view aux;
  // One value per ShardWriterOptions::columns entry, in that order (empty when it has none).
  std::span<const ColumnValue> columns;
};

struct ShardStats {
  uint64_t records = 0;
  uint64_t blocks = 0;
  uint64_t raw_bytes = 0;   // sum of record payload sizes
  uint64_t file_bytes = 0;  // size of the finished file
  uint64_t duration = 0;    // sum of RecordMeta::duration
  uint64_t tokens = 0;      // sum of RecordMeta::tokens
  uint64_t file_xxh3 = 0;   // XXH3-64 of the whole file, as manifest.json stores it
  uint64_t footer_xxh3 = 0;  // XXH3-64 of the footer (ShardEntry::footer_xxh3)
};

class ShardWriter {
 public:
  static Status Create(const std::string& path, const ShardWriterOptions& options,
                       std::unique_ptr<ShardWriter>* out);
  ~ShardWriter();  // an unfinished writer removes its temporary file

  Status Add(const RecordMeta& meta, std::string_view payload);
  // Bytes the finished file would have if the pending block compressed to its raw size.
  uint64_t EstimatedFileBytes() const;
  uint64_t num_records() const;
  // Closes the block being filled (if any), so the next record starts a block of its own: a
  // stored recording's segment records (shards/recording.h) then share no block with its audio.
  Status EndBlock();
  Status Finish(ShardStats* stats);

 private:
  struct Rep;
  explicit ShardWriter(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace sluice::shards
