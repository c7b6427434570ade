#include "shards/shard_reader.h"

#include <zstd.h>

#include "shards/checksum.h"
#include "shards/coding.h"
#include "shards/format.h"

namespace sluice::shards {
namespace {

// One decompression context per thread: creating one costs more than
// decompressing a small block, and contexts are not thread-safe.
ZSTD_DCtx* ThreadDCtx() {
  struct Holder {
    ZSTD_DCtx* ctx = ZSTD_createDCtx();
    ~Holder() { ZSTD_freeDCtx(ctx); }
  };
  thread_local Holder holder;
  return holder.ctx;
}

}  // namespace

Status ShardReader::Open(const std::string& path, const ReadOptions& options,
                         std::unique_ptr<ShardReader>* out) {
  std::unique_ptr<RandomAccessFile> file;
  SLUICE_RETURN_IF_ERROR(OpenRandomAccessFile(path, &file));
  return Open(std::move(file), options, out);
}

Status ShardReader::Open(std::unique_ptr<RandomAccessFile> file, const ReadOptions& options,
                         std::unique_ptr<ShardReader>* out) {
  return Open(std::move(file), options, std::nullopt, out);
}

Status ShardReader::Open(std::unique_ptr<RandomAccessFile> file, const ReadOptions& options,
                         std::optional<uint64_t> footer_xxh3, std::unique_ptr<ShardReader>* out) {
  std::unique_ptr<ShardReader> r(new ShardReader);
  r->file_ = std::move(file);
  r->options_ = options;
  SLUICE_RETURN_IF_ERROR(r->Init(footer_xxh3));
  *out = std::move(r);
  return Status::OK();
}

Status ShardReader::Init(std::optional<uint64_t> expected_footer_xxh3) {
  const std::string& name = file_->name();
  const uint64_t size = file_->Size();
  auto corrupt = [&](uint64_t offset, const std::string& why) {
    return Status::Corruption(name + ": offset " + std::to_string(offset) + ": " + why);
  };
  if (size < kHeaderSize + kFooterSize) {
    return corrupt(
        0, "file of " + std::to_string(size) + " bytes is too small to be a shard (truncated?)");
  }
  // Every shard of this format version starts with the same 16 bytes.
  char header[kHeaderSize];
  {
    std::string expect;
    ShardHeader().EncodeTo(&expect);
    SLUICE_RETURN_IF_ERROR(
        file_->ReadVerified(0, kHeaderSize, Checksum(expect.data(), expect.size()), header));
  }
  std::string_view in(header, kHeaderSize);
  SLUICE_RETURN_IF_ERROR(Prefixed(ShardHeader().DecodeFrom(&in), name + ": offset 0"));

  const uint64_t footer_at = size - kFooterSize;
  char f[kFooterSize];
  SLUICE_RETURN_IF_ERROR(expected_footer_xxh3
                             ? file_->ReadVerified(footer_at, kFooterSize, *expected_footer_xxh3, f)
                             : file_->Read(footer_at, kFooterSize, f));
  footer_xxh3_ = Checksum(f, kFooterSize);
  if (expected_footer_xxh3 && footer_xxh3_ != *expected_footer_xxh3) {
    // Checked first: an old shard under a new manifest.json is whole and well-formed, and may
    // even have the same size and record count (one transcript changed), so only this tells.
    return Status::Corruption(
        name + ": footer checksum " + ChecksumHex(footer_xxh3_) +
        " is not the one manifest.json records for this shard (" +
        ChecksumHex(*expected_footer_xxh3) +
        "): the shard and manifest.json belong to different versions of the dataset, which "
        "changed while it was read (caught mid-update: an upload such as `aws s3 sync` writes "
        "manifest.json before the shards). HINT: wait for the upload to finish and re-run; "
        "upload manifest.json last");
  }
  Footer footer;
  in = std::string_view(f, kFooterSize);
  SLUICE_RETURN_IF_ERROR(
      Prefixed(footer.DecodeFrom(&in), name + ": offset " + std::to_string(footer_at)));
  const uint64_t index_offset = footer.index_offset;
  const uint64_t index_size = footer.index_size;
  if (index_offset < kHeaderSize || index_offset > footer_at ||
      index_size != footer_at - index_offset) {
    return corrupt(footer_at, "index offset " + std::to_string(index_offset) + " / size " +
                                  std::to_string(index_size) + " do not fit the file");
  }
  if (index_size < kIndexHeaderSize) return corrupt(index_offset, "index too small");

  std::string index(index_size, '\0');
  SLUICE_RETURN_IF_ERROR(
      file_->ReadVerified(index_offset, index_size, footer.index_xxh3, index.data()));
  if (Checksum(index.data(), index.size()) != footer.index_xxh3)
    return corrupt(index_offset, "index checksum mismatch");
  return DecodeIndex(index, index_offset);
}

// The index's block and record tables, checked against each other and the index's size; every
// inconsistency is a Corruption at `index_offset` (the index checksum has already matched).
Status ShardReader::DecodeIndex(const std::string& index, uint64_t index_offset) {
  const uint64_t index_size = index.size();
  auto corrupt = [&](uint64_t offset, const std::string& why) {
    return Status::Corruption(file_->name() + ": offset " + std::to_string(offset) + ": " + why);
  };
  std::string_view in(index);
  IndexHeader header;
  SLUICE_RETURN_IF_ERROR(
      Prefixed(header.DecodeFrom(&in), file_->name() + ": offset " + std::to_string(index_offset)));
  const uint64_t nblocks = header.num_blocks;
  const uint64_t nrecords = header.num_records;
  const uint64_t key_bytes = header.key_bytes;
  const uint64_t aux_bytes = header.aux_bytes;
  // Checked in this order so that no product below can overflow.
  if (nblocks > index_size / kBlockEntrySize || nrecords > index_size / kRecordEntrySize ||
      key_bytes > index_size || aux_bytes > index_size ||
      kIndexHeaderSize + nblocks * kBlockEntrySize + nrecords * kRecordEntrySize + key_bytes +
              aux_bytes >
          index_size) {
    return corrupt(index_offset, "index counts (" + std::to_string(nblocks) + " blocks, " +
                                     std::to_string(nrecords) + " records, " +
                                     std::to_string(key_bytes) + " key bytes, " +
                                     std::to_string(aux_bytes) + " aux bytes) do not fit its size");
  }
  // The file offset of the entry that `in` starts at: where a bad entry's error points.
  auto entry_at = [&] { return index_offset + (index_size - in.size()); };

  blocks_.resize(nblocks);
  uint64_t expect_offset = kHeaderSize;
  for (uint64_t b = 0; b < nblocks; ++b) {
    BlockInfo& bi = blocks_[b];
    const uint64_t at = entry_at();
    SLUICE_RETURN_IF_ERROR(Prefixed(
        bi.DecodeFrom(&in),
        file_->name() + ": offset " + std::to_string(at) + " (block " + std::to_string(b) + ")"));
    if (bi.offset != expect_offset || bi.compressed_size > index_offset - bi.offset) {
      return corrupt(at, "block table entry " + std::to_string(b) + " (offset " +
                             std::to_string(bi.offset) + ", " + std::to_string(bi.compressed_size) +
                             " bytes) is inconsistent");
    }
    expect_offset = bi.offset + bi.compressed_size;
  }
  if (expect_offset != index_offset) {
    return corrupt(index_offset, "blocks end at " + std::to_string(expect_offset) +
                                     ", not where the index starts");
  }

  if (nblocks == 0 && nrecords != 0) return corrupt(index_offset, "records without blocks");
  records_.resize(nrecords);
  block_first_record_.assign(nblocks + 1, nrecords);
  uint64_t cur_block = 0, cur_offset = 0;
  if (nblocks > 0) block_first_record_[0] = 0;
  for (uint64_t i = 0; i < nrecords; ++i) {
    RecordEntry& e = records_[i];
    const uint64_t at = entry_at();
    SLUICE_RETURN_IF_ERROR(Prefixed(
        e.DecodeFrom(&in),
        file_->name() + ": offset " + std::to_string(at) + " (record " + std::to_string(i) + ")"));
    // Records tile their blocks in order: each starts where the previous ended,
    // and a new block starts at offset 0 once the previous one is full.
    if (e.block != cur_block) {
      if (e.block != cur_block + 1 || cur_offset != blocks_[cur_block].raw_size || e.offset != 0) {
        return corrupt(at, "record " + std::to_string(i) + " does not follow block " +
                               std::to_string(cur_block));
      }
      cur_block = e.block;
      cur_offset = 0;
      block_first_record_[cur_block] = i;
    }
    if (e.block >= nblocks || e.offset != cur_offset ||
        e.size > blocks_[e.block].raw_size - e.offset || e.key_offset > key_bytes ||
        e.key_size > key_bytes - e.key_offset) {
      return corrupt(at, "record table entry " + std::to_string(i) + " is inconsistent");
    }
    cur_offset += e.size;
  }
  if (nblocks > 0 && (cur_block != nblocks - 1 || cur_offset != blocks_[cur_block].raw_size)) {
    return corrupt(index_offset, "records do not cover every block");
  }
  keys_.assign(in.data(), key_bytes);  // the size check above: key_bytes + aux_bytes remain
  in.remove_prefix(key_bytes);
  SLUICE_RETURN_IF_ERROR(
      DecodeAux(in.substr(0, aux_bytes), index_offset + (index_size - in.size())));
  in.remove_prefix(aux_bytes);
  // What follows the aux area, up to the index's end, is the columns area.
  return DecodeColumns(in, index_offset + (index_size - in.size()));
}

Status ShardReader::DecodeColumns(std::string_view in, uint64_t columns_offset) {
  columns_ = ColumnTable();
  if (in.empty()) return Status::OK();
  return Prefixed(columns_.DecodeFrom(&in, records_.size()),
                  file_->name() + ": offset " + std::to_string(columns_offset));
}

// The aux area (format.h): an offsets table whose entries rise from 0 to the data's size.
Status ShardReader::DecodeAux(std::string_view in, uint64_t aux_offset) {
  aux_offsets_.clear();
  aux_.clear();
  if (in.empty()) return Status::OK();
  const uint64_t nrecords = records_.size();
  if (in.size() < (nrecords + 1) * kAuxOffsetSize)
    return Status::Corruption(file_->name() + ": offset " + std::to_string(aux_offset) +
                              ": aux area of " + std::to_string(in.size()) +
                              " bytes is shorter than its offsets table");
  const uint64_t data_bytes = in.size() - (nrecords + 1) * kAuxOffsetSize;
  aux_offsets_.resize(nrecords + 1);
  for (uint64_t i = 0; i <= nrecords; ++i) {
    aux_offsets_[i] = DecodeFixed32(in.data() + i * kAuxOffsetSize);
    const uint32_t prev = i == 0 ? 0 : aux_offsets_[i - 1];
    if ((i == 0 && aux_offsets_[0] != 0) || aux_offsets_[i] < prev ||
        aux_offsets_[i] > data_bytes || (i == nrecords && aux_offsets_[i] != data_bytes))
      return Status::Corruption(file_->name() + ": offset " +
                                std::to_string(aux_offset + i * kAuxOffsetSize) + ": aux offset " +
                                std::to_string(i) + " (" + std::to_string(aux_offsets_[i]) +
                                ") is inconsistent");
  }
  aux_.assign(in.data() + (nrecords + 1) * kAuxOffsetSize, data_bytes);
  return Status::OK();
}

std::string ShardReader::Where(size_t b) const {
  return file_->name() + ": block " + std::to_string(b) + " at offset " +
         std::to_string(blocks_[b].offset);
}

Status ShardReader::ReadCompressedBlock(size_t b, Buffer* compressed) const {
  const BlockInfo& bi = blocks_[b];
  compressed->Resize(bi.compressed_size);
  // A remote read that failed after its retries names URL, range and status; say which block.
  return Prefixed(
      file_->ReadVerified(bi.offset, bi.compressed_size, bi.checksum, compressed->data()),
      Where(b));
}

Status ShardReader::DecodeBlock(size_t b, std::string_view compressed, Buffer* raw) const {
  const BlockInfo& bi = blocks_[b];
  if (compressed.size() != bi.compressed_size) {
    return Status::Corruption(Where(b) + ": got " + std::to_string(compressed.size()) +
                              " bytes, index says " + std::to_string(bi.compressed_size));
  }
  if (options_.verify_checksums && Checksum(compressed.data(), compressed.size()) != bi.checksum) {
    return Status::Corruption(Where(b) + ": checksum mismatch");
  }
  const unsigned long long content = ZSTD_getFrameContentSize(compressed.data(), compressed.size());
  if (content != bi.raw_size) {
    return Status::Corruption(Where(b) + ": zstd frame header says " +
                              (ZSTD_isError(content) || content == ZSTD_CONTENTSIZE_UNKNOWN ||
                                       content == ZSTD_CONTENTSIZE_ERROR
                                   ? std::string("no valid size")
                                   : std::to_string(content) + " bytes") +
                              ", index says " + std::to_string(bi.raw_size));
  }
  raw->Resize(bi.raw_size);
  const size_t n = ZSTD_decompressDCtx(ThreadDCtx(), raw->data(), raw->size(), compressed.data(),
                                       compressed.size());
  if (ZSTD_isError(n)) return Status::Corruption(Where(b) + ": zstd: " + ZSTD_getErrorName(n));
  if (n != bi.raw_size) {
    return Status::Corruption(Where(b) + ": decompressed to " + std::to_string(n) +
                              " bytes, index says " + std::to_string(bi.raw_size));
  }
  return Status::OK();
}

Status ShardReader::ReadBlock(size_t b, Buffer* scratch, Buffer* raw) const {
  SLUICE_RETURN_IF_ERROR(ReadCompressedBlock(b, scratch));
  return DecodeBlock(b, scratch->view(), raw);
}

Status ShardReader::ReadRecord(size_t i, std::string* payload) const {
  Buffer scratch, raw;
  SLUICE_RETURN_IF_ERROR(ReadBlock(records_[i].block, &scratch, &raw));
  payload->assign(RecordPayload(i, raw));
  return Status::OK();
}

}  // namespace sluice::shards
