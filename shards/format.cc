#include "shards/format.h"

#include <cinttypes>
#include <cstdio>

#include "shards/checksum.h"
#include "shards/coding.h"

namespace sluice::shards {
namespace {

// Takes the first n bytes of *input, or says how short it is.
Status Take(std::string_view* input, size_t n, const char* what, const char** p) {
  if (input->size() < n) {
    return Status::Corruption(std::string(what) + ": " + std::to_string(input->size()) +
                              " bytes, it takes " + std::to_string(n) + " (truncated?)");
  }
  *p = input->data();
  input->remove_prefix(n);
  return Status::OK();
}

std::string Hex(uint64_t v) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

}  // namespace

void ShardHeader::EncodeTo(std::string* dst) const {
  PutFixed64(dst, kMagic);
  PutFixed32(dst, version);
  PutFixed32(dst, 0);  // reserved
}

Status ShardHeader::DecodeFrom(std::string_view* input) {
  const char* p;
  SLUICE_RETURN_IF_ERROR(Take(input, kHeaderSize, "header", &p));
  if (DecodeFixed64(p) != kMagic)
    return Status::Corruption("header: bad magic: not a sluice shard");
  version = DecodeFixed32(p + 8);
  if (version != kFormatVersion) {
    return Status::Unsupported(
        "header: shard format version " + std::to_string(version) + ", this reader knows version " +
        std::to_string(kFormatVersion) +
        ". HINT: rebuild sluice from a newer checkout, or re-run shardify with this one");
  }
  if (DecodeFixed32(p + 12) != 0) {
    return Status::Corruption("header: reserved bytes 12..15 are " + Hex(DecodeFixed32(p + 12)) +
                              ", not zero");
  }
  return Status::OK();
}

void Footer::EncodeTo(std::string* dst) const {
  const size_t start = dst->size();
  PutFixed64(dst, index_offset);
  PutFixed64(dst, index_size);
  PutFixed64(dst, index_xxh3);
  PutFixed32(dst, 0);  // flags, reserved
  PutFixed32(dst, version);
  PutFixed64(dst, Checksum(dst->data() + start, 32));
  PutFixed64(dst, kMagic);
}

Status Footer::DecodeFrom(std::string_view* input) {
  const char* p;
  SLUICE_RETURN_IF_ERROR(Take(input, kFooterSize, "footer", &p));
  // The magic first: without it the file is not a whole shard, whatever the other bytes say.
  if (DecodeFixed64(p + 40) != kMagic) {
    return Status::Corruption(
        "no footer magic at the end of the file (truncated, or bytes appended after the footer)");
  }
  const uint64_t stored = DecodeFixed64(p + 32), computed = Checksum(p, 32);
  if (stored != computed) {
    return Status::Corruption("footer checksum mismatch (stored " + ChecksumHex(stored) +
                              ", computed " + ChecksumHex(computed) + ")");
  }
  version = DecodeFixed32(p + 28);
  if (version != kFormatVersion) {
    return Status::Unsupported("footer says format version " + std::to_string(version) +
                               ", this reader knows version " + std::to_string(kFormatVersion));
  }
  if (DecodeFixed32(p + 24) != 0) {
    return Status::Corruption("footer: reserved flags are " + Hex(DecodeFixed32(p + 24)) +
                              ", not zero");
  }
  index_offset = DecodeFixed64(p);
  index_size = DecodeFixed64(p + 8);
  index_xxh3 = DecodeFixed64(p + 16);
  return Status::OK();
}

void IndexHeader::EncodeTo(std::string* dst) const {
  PutFixed32(dst, kIndexMagic);
  PutFixed32(dst, num_blocks);
  PutFixed64(dst, num_records);
  PutFixed64(dst, key_bytes);
  PutFixed64(dst, aux_bytes);
}

Status IndexHeader::DecodeFrom(std::string_view* input) {
  const char* p;
  SLUICE_RETURN_IF_ERROR(Take(input, kIndexHeaderSize, "index header", &p));
  if (DecodeFixed32(p) != kIndexMagic) {
    return Status::Corruption("bad index magic " + Hex(DecodeFixed32(p)) + " (SLIX is " +
                              Hex(kIndexMagic) + ")");
  }
  num_blocks = DecodeFixed32(p + 4);
  num_records = DecodeFixed64(p + 8);
  key_bytes = DecodeFixed64(p + 16);
  aux_bytes = DecodeFixed64(p + 24);
  return Status::OK();
}

void BlockInfo::EncodeTo(std::string* dst) const {
  PutFixed64(dst, offset);
  PutFixed32(dst, compressed_size);
  PutFixed32(dst, raw_size);
  PutFixed64(dst, checksum);
}

Status BlockInfo::DecodeFrom(std::string_view* input) {
  const char* p;
  SLUICE_RETURN_IF_ERROR(Take(input, kBlockEntrySize, "block entry", &p));
  offset = DecodeFixed64(p);
  compressed_size = DecodeFixed32(p + 8);
  raw_size = DecodeFixed32(p + 12);
  checksum = DecodeFixed64(p + 16);
  if (compressed_size == 0) return Status::Corruption("block entry: compressed_size is 0");
  if (raw_size == 0 || raw_size > kMaxBlockRawSize) {
    return Status::Corruption("block entry: raw_size " + std::to_string(raw_size) +
                              " is outside 1.." + std::to_string(kMaxBlockRawSize));
  }
  return Status::OK();
}

void RecordEntry::EncodeTo(std::string* dst) const {
  PutFixed32(dst, block);
  PutFixed32(dst, offset);
  PutFixed32(dst, size);
  PutFixed32(dst, key_offset);
  PutFixed32(dst, key_size);
  PutFixed32(dst, tokens);
  PutFixed64(dst, duration);
}

Status RecordEntry::DecodeFrom(std::string_view* input) {
  const char* p;
  SLUICE_RETURN_IF_ERROR(Take(input, kRecordEntrySize, "record entry", &p));
  block = DecodeFixed32(p);
  offset = DecodeFixed32(p + 4);
  size = DecodeFixed32(p + 8);
  key_offset = DecodeFixed32(p + 12);
  key_size = DecodeFixed32(p + 16);
  tokens = DecodeFixed32(p + 20);
  duration = DecodeFixed64(p + 24);
  if (key_size > kMaxKeySize) {
    return Status::Corruption("record entry: key_size " + std::to_string(key_size) + " exceeds " +
                              std::to_string(kMaxKeySize));
  }
  return Status::OK();
}

}  // namespace sluice::shards
