#include "shards/record.h"

#include "shards/coding.h"

namespace sluice::shards {

const char* FieldTypeName(FieldType t) {
  switch (t) {
    case FieldType::kAudioPcm16: return "audio_pcm16";
    case FieldType::kAudioFlac: return "audio_flac";
    case FieldType::kText: return "text";
    case FieldType::kTokens: return "tokens";
    case FieldType::kFeaturesF16: return "features_f16";
    case FieldType::kTurns: return "turns";
  }
  return "unknown";
}

void RecordBuilder::AddField(FieldType type, const void* data, size_t size) {
  char header[kFieldHeaderSize] = {};
  header[0] = static_cast<char>(type);
  EncodeFixed32(header + 4, static_cast<uint32_t>(size));
  data_.append(header, kFieldHeaderSize);
  data_.append(static_cast<const char*>(data), size);
  data_.append((kFieldAlign - size % kFieldAlign) % kFieldAlign, '\0');
}

Status ParseRecord(const char* data, size_t size, std::string_view where, RecordView* out) {
  out->num_fields = 0;
  size_t pos = 0;
  auto corrupt = [&](const std::string& why) {
    return Status::Corruption(std::string(where) + ": record byte " + std::to_string(pos) + ": " +
                              why);
  };
  while (pos < size) {
    if (size - pos < kFieldHeaderSize) return corrupt("truncated field header");
    const char* h = data + pos;
    const uint8_t type = static_cast<uint8_t>(h[0]);
    if (type == 0 || type > kMaxFieldType)
      return corrupt("unknown field type " + std::to_string(type));
    if (h[1] != 0 || h[2] != 0 || h[3] != 0) return corrupt("reserved field bytes are not zero");
    const uint32_t len = DecodeFixed32(h + 4);
    const size_t padded = len + (kFieldAlign - len % kFieldAlign) % kFieldAlign;
    if (padded > size - pos - kFieldHeaderSize)
      return corrupt("field of " + std::to_string(len) + " bytes overruns the record");
    for (size_t i = len; i < padded; ++i)
      if (h[kFieldHeaderSize + i] != 0) return corrupt("field padding is not zero");
    const FieldType ft = static_cast<FieldType>(type);
    for (size_t i = 0; i < out->num_fields; ++i)
      if (out->fields[i].type == ft)
        return corrupt(std::string("field ") + FieldTypeName(ft) + " appears twice");
    out->fields[out->num_fields++] = FieldView{ft, h + kFieldHeaderSize, len};
    pos += kFieldHeaderSize + padded;
  }
  return Status::OK();
}

}  // namespace sluice::shards
