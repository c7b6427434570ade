// DatasetWriter: appends records in order and rolls over to a new shard file
// (shard-NNNNN.sluice) once the current one reaches options.shard_size.
// Shard boundaries depend only on the records' sizes and order, so the same
// input gives the same files whatever the number of threads that produced it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "shards/manifest.h"
#include "shards/shard_writer.h"

namespace sluice::shards {

struct DatasetWriterOptions {
  uint64_t shard_size =
      256ull << 20;  // target bytes per shard file (a shard may exceed it by one block)
  ShardWriterOptions shard;
  uint32_t first_shard_index = 0;  // continue numbering after shards of an earlier run (--resume)
};

std::string ShardFileName(uint32_t index);  // "shard-00042.sluice"

class DatasetWriter {
 public:
  // Called after each shard file is complete and renamed to its final name.
  using ShardDone = std::function<Status(const ShardEntry&)>;

  DatasetWriter(std::string dir, DatasetWriterOptions options, ShardDone on_shard_done = {});
  ~DatasetWriter();

  Status Add(const RecordMeta& meta, std::string_view payload);
  // Records added between BeginGroup and EndGroup go to one shard: the move to a new shard waits
  // for EndGroup. A stored recording's segments refer to its chunks by shard-local record index
  // (shards/recording.h), so a recording never spans two shards.
  void BeginGroup() { in_group_ = true; }
  Status EndGroup();
  // ShardWriter::EndBlock of the open shard (nothing when none is open).
  Status EndBlock();
  // Finishes the open shard, if any. The entries of all shards written.
  Status Finish();
  const std::vector<ShardEntry>& shards() const { return shards_; }
  // Records in the shard that is still open (not yet durable).
  uint64_t pending_records() const;
  // Where the next Add() will put its record: shard index and record index in it.
  std::pair<uint32_t, uint64_t> NextPosition() const;

 private:
  Status CloseShard();

  std::string dir_;
  DatasetWriterOptions options_;
  ShardDone on_shard_done_;
  uint32_t next_index_;
  std::unique_ptr<ShardWriter> current_;
  std::string current_name_;
  std::vector<ShardEntry> shards_;
  bool in_group_ = false;
};

}  // namespace sluice::shards
