// Shard format v1: the constants that both ShardWriter and ShardReader use.
// The byte-level specification is docs/formats/shard.md; change both together
// and add a line to its "Version changes" list.
//
//   file   := header blocks* index footer
//   header := magic u64 | version u32 | reserved u32                (16 bytes)
//   block  := zstd frame (independent; raw size about kDefaultBlockSize)
//   index  := index header | block table | record table | key bytes
//   footer := index_offset u64 | index_size u64 | index_xxh3 u64 |
//             flags u32 | version u32 | footer_xxh3 u64 | magic u64 (48 bytes)
//
// All integers are little-endian. Checksums are XXH3-64 with seed 0.
#pragma once

#include <cstddef>
#include <cstdint>

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
inline constexpr size_t kRecordEntrySize = 32;  // see RecordEntry in shard_reader.h

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
};
// The layouts inside kTokens and kFeaturesF16: shards/fields.h.
inline constexpr uint8_t kMaxFieldType = 5;

const char* FieldTypeName(FieldType t);

}  // namespace sluice::shards
