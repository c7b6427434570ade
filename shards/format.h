// Shard format v1: the constants, and one struct per fixed-size structure with its
// EncodeTo/DecodeFrom pair (leveldb's Footer), which ShardWriter, ShardReader and every other
// reader of shard bytes use: each layout is written down once in code.
// The byte-level specification is docs/formats/shard.md; change both together
// and add a line to its "Version changes" list.
//
//   file   := header blocks* index footer
//   header := magic u64 | version u32 | reserved u32                (16 bytes)
//   block  := zstd frame (independent; raw size about kDefaultBlockSize)
//   index  := index header | block table | record table | key bytes | [aux area]
//   footer := index_offset u64 | index_size u64 | index_xxh3 u64 |
//             flags u32 | version u32 | footer_xxh3 u64 | magic u64 (48 bytes)
//
// All integers are little-endian. Checksums are XXH3-64 with seed 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace sluice::shards {

// "SLUICESH" read as a little-endian u64: the file starts and ends with it, so
// a truncated file (no magic at the end) is told apart from a foreign one.
inline constexpr uint64_t kMagic = 0x4853454349554c53ull;
// "SLIX": first word of the index section.
inline constexpr uint32_t kIndexMagic = 0x58494c53u;
inline constexpr uint32_t kFormatVersion = 1;

inline constexpr size_t kHeaderSize = 16;
inline constexpr size_t kFooterSize = 48;
inline constexpr size_t kIndexHeaderSize = 32;
inline constexpr size_t kBlockEntrySize = 24;   // offset u64 | csize u32 | rsize u32 | xxh3 u64
inline constexpr size_t kRecordEntrySize = 32;  // see RecordEntry below

// Default raw (uncompressed) block size. A record never spans blocks; a record
// larger than this gets a block of its own.
inline constexpr size_t kDefaultBlockSize = 1 << 20;
// Hard limits a reader enforces before allocating, so a damaged length field
// cannot make it allocate gigabytes.
inline constexpr uint32_t kMaxBlockRawSize = 1u << 30;
inline constexpr uint32_t kMaxKeySize = 4096;

// Record payloads are a sequence of fields, each padded to kFieldAlign bytes
// so that int16 / float16 / u32 data start aligned inside a block buffer.
//   field := type u8 | reserved u8 (0) | reserved u16 (0) | size u32 | data | pad
inline constexpr size_t kFieldHeaderSize = 8;
inline constexpr size_t kFieldAlign = 8;

// Field types. shards/ treats every payload as bytes; the names say what the
// producers (shardify, features/) put there.
enum class FieldType : uint8_t {
  kAudioPcm16 = 1,   // int16 LE mono samples at the dataset's sample rate
  kAudioFlac = 2,    // a complete FLAC stream, mono, at the dataset's sample rate
  kText = 3,         // UTF-8 transcript or document text
  kTokens = 4,       // u32 LE token ids
  kFeaturesF16 = 5,  // frames u32 | bins u32 | IEEE float16 LE [frames, bins]
  kTurns = 6,        // a conversation's turn table (shards/conversation.h)
};
// The layouts inside kTokens and kFeaturesF16: shards/fields.h; kTurns: shards/conversation.h.
inline constexpr uint8_t kMaxFieldType = 6;

const char* FieldTypeName(FieldType t);

// The structures below. EncodeTo appends exactly the structure's size in bytes to *dst.
// DecodeFrom reads the structure from the front of *input and advances *input past it. It checks
// what the structure alone can tell: its size, magic, version, checksum, reserved bytes and the
// range of each field. A failure is a Corruption (Unsupported for another format version) whose
// message names the structure, the field and the reason; the caller prefixes the file
// and the structure's file offset (Prefixed), and checks what needs the rest of the file (that
// blocks are contiguous, records tile them, the index fits the file). On failure *this and
// *input are unspecified.

// The first kHeaderSize bytes of a shard.
struct ShardHeader {
  uint32_t version = kFormatVersion;

  void EncodeTo(std::string* dst) const;
  Status DecodeFrom(std::string_view* input);
};

// The last kFooterSize bytes of a shard. footer_xxh3 is computed by EncodeTo and checked by
// DecodeFrom, so it is not a member.
struct Footer {
  uint64_t index_offset = 0;  // file offset of the index
  uint64_t index_size = 0;    // bytes of the index, up to the footer
  uint64_t index_xxh3 = 0;    // XXH3-64 of the index bytes
  uint32_t version = kFormatVersion;

  void EncodeTo(std::string* dst) const;
  Status DecodeFrom(std::string_view* input);
};

// The first kIndexHeaderSize bytes of the index; the block table, the record table and the
// keys follow it.
struct IndexHeader {
  uint32_t num_blocks = 0;
  uint64_t num_records = 0;
  uint64_t key_bytes = 0;  // total bytes of the key area
  // Bytes of the aux area after the keys (0: none; shards written before it existed have 0).
  uint64_t aux_bytes = 0;

  void EncodeTo(std::string* dst) const;
  Status DecodeFrom(std::string_view* input);
};

// The aux area (docs/formats/shard.md, "Aux area"): per-record index bytes whose layout the
// dataset's kind defines (shards/conversation.h), for planners that must not read payloads.
//   aux area := offsets u32 [num_records + 1] | data
// offsets[0] = 0, non-decreasing, offsets[num_records] = data bytes; record i's bytes are
// data[offsets[i], offsets[i + 1]).
inline constexpr size_t kAuxOffsetSize = 4;

// One entry of the block table (kBlockEntrySize bytes).
struct BlockInfo {
  uint64_t offset = 0;           // file offset of the zstd frame
  uint32_t compressed_size = 0;  // bytes on disk, > 0
  uint32_t raw_size = 0;         // bytes after decompression, 1 .. kMaxBlockRawSize
  uint64_t checksum = 0;         // XXH3-64 of the compressed bytes

  void EncodeTo(std::string* dst) const;
  Status DecodeFrom(std::string_view* input);
};

// One entry of the record table (kRecordEntrySize bytes).
struct RecordEntry {
  uint32_t block = 0;       // index into the block table
  uint32_t offset = 0;      // byte offset of the payload within the raw block
  uint32_t size = 0;        // payload bytes
  uint32_t key_offset = 0;  // offset of the key in the key area
  uint32_t key_size = 0;    // key bytes, at most kMaxKeySize
  uint32_t tokens = 0;      // see RecordMeta (shard_writer.h)
  uint64_t duration = 0;    // see RecordMeta (shard_writer.h)

  void EncodeTo(std::string* dst) const;
  Status DecodeFrom(std::string_view* input);
};

}  // namespace sluice::shards
