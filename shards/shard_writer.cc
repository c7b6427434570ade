#include "shards/shard_writer.h"

#include <zstd.h>

#include <cstdio>
#include <vector>

#include "base/file.h"
#include "shards/checksum.h"
#include "shards/coding.h"
#include "shards/format.h"

namespace sluice::shards {

struct ShardWriter::Rep {
  std::string path;
  std::string tmp_path;
  ShardWriterOptions options;
  std::unique_ptr<WritableFile> file;
  StreamingChecksum file_sum;
  ZSTD_CCtx* cctx = nullptr;

  std::string block;       // raw records of the block being filled
  std::string compressed;  // reused compression buffer
  std::string block_table;
  std::string record_table;
  std::string keys;
  std::string aux_offsets;  // u32 per record: where its aux bytes end (the aux area's table)
  std::string aux;
  std::unique_ptr<ColumnTableBuilder> columns;  // null: no columns area
  uint32_t num_blocks = 0;
  ShardStats stats;
  bool finished = false;

  ~Rep() {
    ZSTD_freeCCtx(cctx);
    if (!finished) {
      file.reset();
      std::remove(tmp_path.c_str());
    }
  }

  Status Write(std::string_view data) {
    file_sum.Update(data.data(), data.size());
    return file->Append(data);
  }

  Status FlushBlock() {
    if (block.empty()) return Status::OK();
    compressed.resize(ZSTD_compressBound(block.size()));
    size_t n = ZSTD_compressCCtx(cctx, compressed.data(), compressed.size(), block.data(),
                                 block.size(), options.zstd_level);
    if (ZSTD_isError(n)) return Status::IOError(tmp_path + ": zstd: " + ZSTD_getErrorName(n));
    compressed.resize(n);
    BlockInfo{file->size(), static_cast<uint32_t>(n), static_cast<uint32_t>(block.size()),
              Checksum(compressed.data(), n)}
        .EncodeTo(&block_table);
    SLUICE_RETURN_IF_ERROR(Write(compressed));
    ++num_blocks;
    block.clear();
    return Status::OK();
  }
};

ShardWriter::ShardWriter(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
ShardWriter::~ShardWriter() = default;

Status ShardWriter::Create(const std::string& path, const ShardWriterOptions& options,
                           std::unique_ptr<ShardWriter>* out) {
  if (options.block_size == 0 || options.block_size > kMaxBlockRawSize) {
    return Status::InvalidArgument(path + ": block size " + std::to_string(options.block_size) +
                                   " out of range");
  }
  auto rep = std::make_unique<Rep>();
  rep->path = path;
  rep->tmp_path = path + ".tmp";
  rep->options = options;
  rep->cctx = ZSTD_createCCtx();
  if (!options.columns.empty())
    rep->columns = std::make_unique<ColumnTableBuilder>(options.columns);
  SLUICE_RETURN_IF_ERROR(WritableFile::Create(rep->tmp_path, &rep->file));
  std::string header;
  ShardHeader().EncodeTo(&header);
  SLUICE_RETURN_IF_ERROR(rep->Write(header));
  out->reset(new ShardWriter(std::move(rep)));
  return Status::OK();
}

Status ShardWriter::Add(const RecordMeta& meta, std::string_view payload) {
  Rep& r = *rep_;
  if (r.finished) return Status::InvalidArgument(r.path + ": Add after Finish");
  if (meta.key.size() > kMaxKeySize) {
    return Status::InvalidArgument(r.path + ": key of " + std::to_string(meta.key.size()) +
                                   " bytes exceeds " + std::to_string(kMaxKeySize));
  }
  if (payload.size() > kMaxBlockRawSize) {
    return Status::InvalidArgument(r.path + ": record '" + std::string(meta.key) + "' of " +
                                   std::to_string(payload.size()) +
                                   " bytes exceeds the 1 GiB record limit");
  }
  if (r.aux.size() + meta.aux.size() > UINT32_MAX)
    return Status::InvalidArgument(r.path +
                                   ": the index's aux area would exceed 4 GiB at record '" +
                                   std::string(meta.key) + "'. HINT: use a smaller --shard-size");
  if (r.columns) {
    Status st = r.columns->Add(meta.columns, meta.key);
    if (!st.ok()) return Status::InvalidArgument(r.path + ": " + st.message());
  } else if (!meta.columns.empty()) {
    return Status::InvalidArgument(r.path + ": record '" + std::string(meta.key) +
                                   "' has column values but the shard has no columns");
  }
  // A record never spans blocks: close the current one if this would overflow it.
  if (!r.block.empty() && r.block.size() + payload.size() > r.options.block_size) {
    SLUICE_RETURN_IF_ERROR(r.FlushBlock());
  }
  RecordEntry{r.num_blocks,
              static_cast<uint32_t>(r.block.size()),
              static_cast<uint32_t>(payload.size()),
              static_cast<uint32_t>(r.keys.size()),
              static_cast<uint32_t>(meta.key.size()),
              meta.tokens,
              meta.duration}
      .EncodeTo(&r.record_table);
  r.keys.append(meta.key);
  r.aux.append(meta.aux);
  PutFixed32(&r.aux_offsets, static_cast<uint32_t>(r.aux.size()));
  r.block.append(payload);
  r.stats.records++;
  r.stats.raw_bytes += payload.size();
  r.stats.duration += meta.duration;
  r.stats.tokens += meta.tokens;
  if (r.block.size() >= r.options.block_size) SLUICE_RETURN_IF_ERROR(r.FlushBlock());
  return Status::OK();
}

uint64_t ShardWriter::EstimatedFileBytes() const {
  const Rep& r = *rep_;
  return r.file->size() + r.block.size() + r.block_table.size() + r.record_table.size() +
         r.keys.size() +
         (r.aux.empty() ? 0 : r.aux_offsets.size() + kAuxOffsetSize + r.aux.size()) +
         // At most 8 bytes per record and column (strings: a code plus their dictionary).
         (r.columns ? r.stats.records * 8 * r.options.columns.size() : 0) + kIndexHeaderSize +
         kFooterSize;
}

uint64_t ShardWriter::num_records() const { return rep_->stats.records; }

Status ShardWriter::EndBlock() {
  if (rep_->finished) return Status::InvalidArgument(rep_->path + ": EndBlock after Finish");
  return rep_->FlushBlock();
}

Status ShardWriter::Finish(ShardStats* stats) {
  Rep& r = *rep_;
  if (r.finished) return Status::InvalidArgument(r.path + ": Finish called twice");
  SLUICE_RETURN_IF_ERROR(r.FlushBlock());

  const uint64_t index_offset = r.file->size();
  std::string index;
  // No aux bytes at all: no aux area, so such shards keep the bytes of shards written before it.
  const uint64_t aux_bytes =
      r.aux.empty() ? 0 : kAuxOffsetSize + r.aux_offsets.size() + r.aux.size();
  IndexHeader{r.num_blocks, r.stats.records, r.keys.size(), aux_bytes}.EncodeTo(&index);
  index += r.block_table;
  index += r.record_table;
  index += r.keys;
  if (aux_bytes > 0) {
    PutFixed32(&index, 0);
    index += r.aux_offsets;
    index += r.aux;
  }
  // The columns area takes the rest of the index; shards without columns end at the aux area.
  if (r.columns) r.columns->Finish().EncodeTo(r.stats.records, &index);
  SLUICE_RETURN_IF_ERROR(r.Write(index));

  std::string footer;
  Footer{index_offset, index.size(), Checksum(index.data(), index.size())}.EncodeTo(&footer);
  SLUICE_RETURN_IF_ERROR(r.Write(footer));
  r.stats.footer_xxh3 = Checksum(footer.data(), footer.size());

  SLUICE_RETURN_IF_ERROR(r.file->Close());
  SLUICE_RETURN_IF_ERROR(RenameDurable(r.tmp_path, r.path));
  r.finished = true;
  r.stats.blocks = r.num_blocks;
  r.stats.file_bytes = r.file->size();
  r.stats.file_xxh3 = r.file_sum.Digest();
  if (stats) *stats = r.stats;
  return Status::OK();
}

}  // namespace sluice::shards
