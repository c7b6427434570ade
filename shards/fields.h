// The layouts inside the typed fields whose data has structure (docs/formats/shard.md, "Field
// layouts"): kTokens and kFeaturesF16. Writers and readers both go through these functions, so
// each layout is written down once in code, beside the constants of shards/format.h.
// shards/ knows nothing of audio: float16 values travel as their 16 bits; features/half.h
// converts them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "shards/record.h"

namespace sluice::shards {

// kFeaturesF16 := frames u32 | bins u32 | frames * bins IEEE 754 binary16 LE, row-major.
inline constexpr size_t kFeaturesF16HeaderSize = 8;

// Lays out a [frames, bins] field in `field`: resized to FeaturesF16Size(frames, bins) bytes
// (in 16-bit words) with the header written. Returns where the frames * bins binary16 values go,
// for the caller to fill; `field` is then the field's data (RecordBuilder::AddField with
// field->size() * 2 bytes).
uint16_t* EncodeFeaturesF16(uint32_t frames, uint32_t bins, std::vector<uint16_t>* field);
inline uint64_t FeaturesF16Size(uint32_t frames, uint32_t bins) {
  return kFeaturesF16HeaderSize + uint64_t{frames} * bins * 2;
}

struct FeaturesF16View {
  uint32_t frames = 0;
  uint32_t bins = 0;
  const uint16_t* values = nullptr;  // frames * bins, into the field (fields are 8-byte aligned)
};
// Splits a kFeaturesF16 field without copying. Corruption naming `where` for a field shorter
// than its header or whose size is not FeaturesF16Size(frames, bins).
Status DecodeFeaturesF16(const FieldView& f, std::string_view where, FeaturesF16View* out);

// kTokens := u32 LE token ids. The ids of the field without copying; Corruption naming `where`
// for a size that is not a whole number of ids.
Status DecodeTokens(const FieldView& f, std::string_view where, std::span<const uint32_t>* ids);

}  // namespace sluice::shards
