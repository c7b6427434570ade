// ShardReader: random access to the records of one shard file.
//
// Open() reads and checks the footer and the index (magic, version, checksums,
// every offset and length against the file size), so afterwards every
// RecordEntry is known to lie inside its block and every block inside the
// file. Payload bytes are checked per block: ReadCompressedBlock is the thin
// I/O step (a pread), DecodeBlock the CPU step (checksum, then zstd). Any
// damage is a Corruption status naming shard, block and byte offset; the
// reader never returns bytes that failed their checksum.
//
// Thread-safety: after Open, all const methods may be called from many
// threads at once (pread, and one zstd context per thread).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/file.h"
#include "base/status.h"
#include "shards/buffer.h"
#include "shards/columns.h"
#include "shards/format.h"
#include "shards/record.h"

namespace sluice::shards {

struct ReadOptions {
  bool verify_checksums = true;  // false skips the per-block XXH3 (zstd still checks frame sizes)
};

class ShardReader {
 public:
  static Status Open(const std::string& path, const ReadOptions& options,
                     std::unique_ptr<ShardReader>* out);
  static Status Open(std::unique_ptr<RandomAccessFile> file, const ReadOptions& options,
                     std::unique_ptr<ShardReader>* out);
  // The same, for the shard manifest.json lists with this footer checksum
  // (ShardEntry::footer_xxh3): a file with another footer is another version of the shard, a
  // Corruption that says the dataset changed while it was read. The footer is checked before
  // the index is read, so no byte of another version is used (or cached: every read of a
  // shard is a ReadVerified, except the footer's when `footer_xxh3` is absent).
  static Status Open(std::unique_ptr<RandomAccessFile> file, const ReadOptions& options,
                     std::optional<uint64_t> footer_xxh3, std::unique_ptr<ShardReader>* out);

  const std::string& name() const { return file_->name(); }
  uint64_t file_size() const { return file_->Size(); }
  uint64_t footer_xxh3() const { return footer_xxh3_; }  // what manifest.json records
  size_t num_records() const { return records_.size(); }
  size_t num_blocks() const { return blocks_.size(); }
  const RecordEntry& record(size_t i) const { return records_[i]; }
  const BlockInfo& block(size_t b) const { return blocks_[b]; }
  std::string_view key(size_t i) const {
    return std::string_view(keys_).substr(records_[i].key_offset, records_[i].key_size);
  }
  // Record i's bytes in the index's aux area (format.h); empty when the shard has none.
  std::string_view aux(size_t i) const {
    if (aux_offsets_.empty()) return {};
    return std::string_view(aux_).substr(aux_offsets_[i], aux_offsets_[i + 1] - aux_offsets_[i]);
  }
  bool has_aux() const { return !aux_offsets_.empty(); }
  // The shard's metadata columns (shards/columns.h); empty when it has no columns area.
  const ColumnTable& columns() const { return columns_; }
  // Records [first_record(b), first_record(b + 1)) live in block b.
  size_t first_record(size_t b) const { return block_first_record_[b]; }

  // Tells the file block b will be read soon (RandomAccessFile::WillNeed).
  void WillNeedBlock(size_t b) const { file_->WillNeed(blocks_[b].offset, blocks_[b].compressed_size); }
  // pread of block b's compressed bytes into `compressed`.
  Status ReadCompressedBlock(size_t b, Buffer* compressed) const;
  // Checks the checksum of `compressed` (block b) and decompresses it into `raw`.
  Status DecodeBlock(size_t b, std::string_view compressed, Buffer* raw) const;
  // Both of the above; `scratch` holds the compressed bytes.
  Status ReadBlock(size_t b, Buffer* scratch, Buffer* raw) const;
  // Payload of record i inside `raw`, which must hold its decoded block.
  std::string_view RecordPayload(size_t i, const Buffer& raw) const {
    return std::string_view(raw.data() + records_[i].offset, records_[i].size);
  }
  // Convenience for tests and tools: reads the whole block and copies record i.
  Status ReadRecord(size_t i, std::string* payload) const;

  // "shard-00001.sluice: block 3 at offset 4096" for error messages.
  std::string Where(size_t b) const;

 private:
  ShardReader() = default;
  Status Init(std::optional<uint64_t> expected_footer_xxh3);
  Status DecodeIndex(const std::string& index, uint64_t index_offset);
  Status DecodeAux(std::string_view in, uint64_t aux_offset);
  Status DecodeColumns(std::string_view in, uint64_t columns_offset);

  std::unique_ptr<RandomAccessFile> file_;
  ReadOptions options_;
  std::vector<BlockInfo> blocks_;
  std::vector<RecordEntry> records_;
  std::vector<size_t> block_first_record_;  // num_blocks + 1 entries
  std::string keys_;
  std::vector<uint32_t> aux_offsets_;  // num_records + 1 entries, or none
  std::string aux_;
  ColumnTable columns_;
  uint64_t footer_xxh3_ = 0;
};

}  // namespace sluice::shards
