// Record payloads: a sequence of typed fields (docs/formats/shard.md, "Record").
// RecordBuilder writes them; ParseRecord checks and splits them without
// copying: FieldView points into the caller's block buffer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "shards/format.h"

namespace sluice::shards {

class RecordBuilder {
 public:
  void Clear() { data_.clear(); }
  // Appends one field; data is padded to kFieldAlign with zero bytes.
  void AddField(FieldType type, const void* data, size_t size);
  void AddField(FieldType type, std::string_view bytes) {
    AddField(type, bytes.data(), bytes.size());
  }
  const std::string& data() const { return data_; }

 private:
  std::string data_;
};

struct FieldView {
  FieldType type{};
  const char* data = nullptr;
  uint32_t size = 0;
  std::string_view bytes() const { return {data, size}; }
};

// At most kMaxFields fields per record: one of each type.
inline constexpr size_t kMaxFields = kMaxFieldType;

struct RecordView {
  std::array<FieldView, kMaxFields> fields{};
  size_t num_fields = 0;
  // Returns the field of this type, or nullptr.
  const FieldView* Find(FieldType type) const {
    for (size_t i = 0; i < num_fields; ++i)
      if (fields[i].type == type) return &fields[i];
    return nullptr;
  }
};

// Splits a payload into fields. Corruption (naming `where` and the byte offset
// within the record) on a field that overruns the record, a non-zero reserved
// byte or padding, an unknown type, or a type that appears twice. Allocates nothing.
Status ParseRecord(const char* data, size_t size, std::string_view where, RecordView* out);

}  // namespace sluice::shards
