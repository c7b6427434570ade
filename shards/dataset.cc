#include "shards/dataset.h"

#include <algorithm>

#include "shards/checksum.h"
#include "shards/format.h"
#include "shards/record.h"

namespace sluice::shards {
namespace {

// What Dataset::Open asks remote storage for at the end of each shard: the footer and the index
// of a shard of up to ~1500 records (about 40 bytes each) in one request.
constexpr uint64_t kOpenTailBytes = 64 << 10;
// VerifyDataset reads ahead this many chunks (and VerifyShard blocks), so a remote dataset is
// checked at bandwidth, not at one round trip per chunk.
constexpr uint64_t kVerifyAhead = 4;

}  // namespace

Status Dataset::Open(const std::string& dir, const ReadOptions& options,
                     std::unique_ptr<Dataset>* out) {
  return Open(NewLocalStorage(dir), options, out);
}

Status Dataset::Open(std::shared_ptr<const Storage> storage, const ReadOptions& options,
                     std::unique_ptr<Dataset>* out) {
  auto ds = std::unique_ptr<Dataset>(new Dataset);
  ds->storage_ = std::move(storage);
  SLUICE_RETURN_IF_ERROR(LoadManifest(*ds->storage_, &ds->manifest_));
  const std::vector<ShardEntry>& entries = ds->manifest_.shards;
  // Every shard's file first, each told what ShardReader::Open reads: the header, and a tail big
  // enough for the footer and, in the common case, the index before it. Remote storage then
  // fetches them all at once instead of three round trips per shard, one shard after another.
  // A bigger index is read on demand: one more round trip for that shard.
  std::vector<std::unique_ptr<RandomAccessFile>> files(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    SLUICE_RETURN_IF_ERROR(ds->storage_->OpenFile(entries[i].file, entries[i].bytes, &files[i]));
    const uint64_t size = files[i]->Size();
    if (size <= kOpenTailBytes) {
      files[i]->WillNeed(0, static_cast<size_t>(size));
    } else {
      files[i]->WillNeed(0, kHeaderSize);
      files[i]->WillNeed(size - kOpenTailBytes, kOpenTailBytes);
    }
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const ShardEntry& e = entries[i];
    std::unique_ptr<ShardReader> r;
    SLUICE_RETURN_IF_ERROR(ShardReader::Open(std::move(files[i]), options, e.footer_xxh3, &r));
    if (r->num_records() != e.records || r->file_size() != e.bytes) {
      return Status::Corruption(r->name() + ": holds " + std::to_string(r->num_records()) +
                                " records in " + std::to_string(r->file_size()) +
                                " bytes, manifest.json says " + std::to_string(e.records) +
                                " records in " + std::to_string(e.bytes) + " bytes");
    }
    // Filters read a column by the manifest's name and type from every shard.
    if (r->columns().specs() != ds->manifest_.columns) {
      auto list = [](const std::vector<ColumnSpec>& specs) {
        std::string s;
        for (const ColumnSpec& c : specs)
          s += (s.empty() ? "" : ", ") + c.name + ":" + ColumnTypeName(c.type);
        return s.empty() ? std::string("none") : s;
      };
      return Status::Corruption(r->name() + ": index columns (" + list(r->columns().specs()) +
                                ") are not manifest.json's (" + list(ds->manifest_.columns) +
                                "). HINT: the shard belongs to another dataset");
    }
    ds->shards_.push_back(std::move(r));
  }
  *out = std::move(ds);
  return Status::OK();
}

void VerifyShard(const ShardReader& reader, const std::string& shard_name, VerifyReport* report) {
  Buffer scratch, raw;
  RecordView view;
  report->blocks += reader.num_blocks();
  report->records += reader.num_records();
  for (size_t b = 0; b < std::min<size_t>(kVerifyAhead, reader.num_blocks()); ++b)
    reader.WillNeedBlock(b);
  for (size_t b = 0; b < reader.num_blocks(); ++b) {
    if (b + kVerifyAhead < reader.num_blocks()) reader.WillNeedBlock(b + kVerifyAhead);
    Status s = reader.ReadBlock(b, &scratch, &raw);
    if (!s.ok()) {
      report->problems.push_back({shard_name, s.ToString()});
      continue;
    }
    for (size_t i = reader.first_record(b); i < reader.first_record(b + 1); ++i) {
      std::string_view payload = reader.RecordPayload(i, raw);
      s = ParseRecord(payload.data(), payload.size(),
                      reader.Where(b) + ": record " + std::to_string(i), &view);
      if (!s.ok()) report->problems.push_back({shard_name, s.ToString()});
    }
  }
}

Status VerifyDataset(const std::string& dir, VerifyReport* report,
                     const std::function<void(uint64_t, uint64_t)>& progress) {
  return VerifyDataset(*NewLocalStorage(dir), report, progress);
}

Status VerifyDataset(const Storage& storage, VerifyReport* report,
                     const std::function<void(uint64_t, uint64_t)>& progress) {
  Manifest m;
  SLUICE_RETURN_IF_ERROR(LoadManifest(storage, &m));
  const uint64_t total = m.bytes();
  uint64_t done = 0;
  for (const ShardEntry& e : m.shards) {
    report->shards++;
    const std::string path = storage.Where(e.file);
    std::unique_ptr<RandomAccessFile> file;
    Status s = storage.OpenFile(e.file, e.bytes, &file);
    if (!s.ok()) {
      report->problems.push_back({e.file, s.ToString()});
      done += e.bytes;
      continue;
    }
    // Whole-file checksum first: it also catches damage in bytes no block owns.
    StreamingChecksum sum;
    Buffer chunk;
    chunk.Resize(1 << 20);
    const uint64_t size = file->Size();
    for (uint64_t k = 0; k < kVerifyAhead; ++k) file->WillNeed(k * chunk.size(), chunk.size());
    for (uint64_t off = 0; off < size && s.ok(); off += chunk.size()) {
      file->WillNeed(off + kVerifyAhead * chunk.size(), chunk.size());
      const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), size - off));
      s = file->Read(off, n, chunk.data());
      if (s.ok()) sum.Update(chunk.data(), n);
      if (progress) progress(done + off + n, total);
    }
    if (!s.ok()) {
      report->problems.push_back({e.file, s.ToString()});
    } else if (size != e.bytes) {
      report->problems.push_back({e.file, "Corruption: " + path + ": " + std::to_string(size) +
                                              " bytes, manifest.json says " +
                                              std::to_string(e.bytes)});
    } else if (sum.Digest() != e.xxh3) {
      report->problems.push_back(
          {e.file, "Corruption: " + path + ": whole-file checksum " + ChecksumHex(sum.Digest()) +
                       " does not match manifest.json's " + ChecksumHex(e.xxh3)});
    }
    report->bytes += size;
    done += e.bytes;

    std::unique_ptr<ShardReader> reader;
    s = ShardReader::Open(std::move(file), ReadOptions{}, e.footer_xxh3, &reader);
    if (!s.ok()) {
      report->problems.push_back({e.file, s.ToString()});
      continue;
    }
    if (reader->num_records() != e.records) {
      report->problems.push_back(
          {e.file, "Corruption: " + path + ": " + std::to_string(reader->num_records()) +
                       " records, manifest.json says " + std::to_string(e.records)});
    }
    VerifyShard(*reader, e.file, report);
  }
  return Status::OK();
}

}  // namespace sluice::shards
