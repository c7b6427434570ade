#include "shards/fields.h"

#include <cstring>
#include <string>

#include "shards/coding.h"

namespace sluice::shards {

uint16_t* EncodeFeaturesF16(uint32_t frames, uint32_t bins, std::vector<uint16_t>* field) {
  static_assert(kFeaturesF16HeaderSize % sizeof(uint16_t) == 0);
  field->resize(FeaturesF16Size(frames, bins) / sizeof(uint16_t));
  char header[kFeaturesF16HeaderSize];
  EncodeFixed32(header, frames);
  EncodeFixed32(header + 4, bins);
  std::memcpy(field->data(), header, sizeof header);
  return field->data() + kFeaturesF16HeaderSize / sizeof(uint16_t);
}

Status DecodeFeaturesF16(const FieldView& f, std::string_view where, FeaturesF16View* out) {
  if (f.size < kFeaturesF16HeaderSize)
    return Status::Corruption(std::string(where) + ": features_f16 field of " +
                              std::to_string(f.size) + " bytes, shorter than its 8-byte header");
  const uint32_t frames = DecodeFixed32(f.data), bins = DecodeFixed32(f.data + 4);
  // Compared as counts of values: frames * bins fits in 64 bits, twice that may not.
  const uint64_t bytes = f.size - kFeaturesF16HeaderSize;
  if (bytes % 2 != 0 || uint64_t{frames} * bins != bytes / 2)
    return Status::Corruption(std::string(where) + ": features_f16 field of " +
                              std::to_string(f.size) + " bytes, but [" + std::to_string(frames) +
                              ", " + std::to_string(bins) + "] float16 values take " +
                              std::to_string(uint64_t{frames} * bins * 2 + 8) + " bytes");
  out->frames = frames;
  out->bins = bins;
  out->values = reinterpret_cast<const uint16_t*>(f.data + kFeaturesF16HeaderSize);
  return Status::OK();
}

Status DecodeTokens(const FieldView& f, std::string_view where, std::span<const uint32_t>* ids) {
  if (f.size % sizeof(uint32_t) != 0)
    return Status::Corruption(std::string(where) + ": tokens field of " + std::to_string(f.size) +
                              " bytes is not a whole number of u32 ids");
  *ids = {reinterpret_cast<const uint32_t*>(f.data), f.size / sizeof(uint32_t)};
  return Status::OK();
}

}  // namespace sluice::shards
