// Stored recordings (docs/formats/shard.md, "Stored recordings"): a long recording is written once
// as consecutive chunk records, and each of its segments is a record of its own whose audio is a
// reference into those chunks. The reference lives in the record's aux bytes, so a planner knows
// which chunks (and so which blocks) a segment needs without reading any payload.
//
//   ref := kind u8 (1 chunk, 2 segment) | reserved u8[3] (0) | chunk u32 | offset u64 | samples u64
//                                                                                    (24 bytes)
// chunk record:   chunk = its index in its recording (0 = the recording's first chunk),
//                 offset = its first sample in the recording, samples = its samples
// segment record: chunk = the shard-local record index of the chunk that holds its first sample,
//                 offset = that sample's index inside the chunk, samples = the segment's samples
// Both: samples equals the record entry's duration. A recording's chunks follow each other in one
// shard; all but its last hold the dataset's chunk_samples (manifest.json "segments").
// shards/ knows nothing of audio: a chunk's audio is its record's audio field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace sluice::shards {

inline constexpr size_t kRecordingRefSize = 24;

enum class RefKind : uint8_t { kChunk = 1, kSegment = 2 };

struct RecordingRef {
  RefKind kind = RefKind::kChunk;
  uint32_t chunk = 0;    // see above
  uint64_t offset = 0;   // see above
  uint64_t samples = 0;  // > 0

  void EncodeTo(std::string* dst) const;
  // Reads kRecordingRefSize bytes from the front of *input and advances it. Corruption for a
  // short input, an unknown kind, non-zero reserved bytes or samples of 0; the caller prefixes
  // the shard and record.
  Status DecodeFrom(std::string_view* input);
};

// Record `i` of a shard, seen through its aux bytes; what the loader needs of it.
struct SegmentSpan {
  uint32_t first_chunk = 0;  // shard-local record index of its first chunk
  uint32_t end_chunk = 0;    // one past its last chunk
  uint64_t offset = 0;       // its first sample inside first_chunk
  uint64_t samples = 0;
};

class ShardReader;

// Parses record i's aux bytes as a ref (`ref`), and for a segment checks it against the chunks
// it points at: a chunk record, offset inside it, the recording's next chunks following on in
// order and holding offset + samples, every chunk's ref samples equal to its duration. Fills
// *span for a segment. Corruption naming the shard and record otherwise.
Status ReadRecordingRef(const ShardReader& shard, size_t i, RecordingRef* ref, SegmentSpan* span);

}  // namespace sluice::shards
