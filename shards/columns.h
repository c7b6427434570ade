// Typed metadata columns in the index (docs/formats/shard.md, "Columns area"): per record a
// speaker, a language, a transcript's character count or a field the user declared, for filters
// that must not read payloads. Strings are dictionary-coded per shard (a dictionary of the
// distinct values and a u32 code per record), numbers stored as 8 bytes per record; a column
// with no value in the shard stores none.
//
//   columns area := magic u32 "SLCO" | count u32 | count * column
//   column       := type u8 | flags u8 | reserved u16 (0) | name_size u32 | dict_count u32 |
//                   dict_bytes u32 | name | data
//   data         := int:    i64 [R] (null: INT64_MIN)
//                   float:  f64 [R] (null: NaN)
//                   string: dict ends u32 [dict_count] | dict bytes | codes u32 [R] (null: ~0)
//                   nothing when flags bit 0 (every value null)
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace sluice::shards {

// "SLCO" read as a little-endian u32: the first word of the columns area.
inline constexpr uint32_t kColumnsMagic = 0x4f434c53u;
inline constexpr size_t kColumnsHeaderSize = 8;
inline constexpr size_t kColumnHeaderSize = 16;
// Bounds a reader enforces, so a damaged count cannot make it allocate much.
inline constexpr uint32_t kMaxColumns = 64;
inline constexpr uint32_t kMaxColumnNameSize = 255;
inline constexpr uint8_t kColumnAllNull = 1;  // flags bit 0: no data follows the name
inline constexpr int64_t kNullInt = std::numeric_limits<int64_t>::min();
inline constexpr uint32_t kNullCode = 0xffffffffu;

enum class ColumnType : uint8_t { kInt = 1, kFloat = 2, kString = 3 };
// "int", "float", "string": manifest.json's and --keep-field's names.
const char* ColumnTypeName(ColumnType t);
bool ParseColumnType(std::string_view name, ColumnType* t);

struct ColumnSpec {
  std::string name;
  ColumnType type = ColumnType::kString;
  bool operator==(const ColumnSpec&) const = default;
};

// One record's value of one column; `null` when the record has none.
struct ColumnValue {
  bool null = true;
  int64_t i = 0;
  double f = 0;
  std::string s;
};

// One column of one shard. An all-null column holds no values (every accessor says null).
struct Column {
  ColumnSpec spec;
  std::vector<int64_t> ints;      // kInt: one per record
  std::vector<double> floats;     // kFloat: one per record
  std::vector<std::string> dict;  // kString: the distinct values, in first-use order
  std::vector<uint32_t> codes;    // kString: per record an index into dict, or kNullCode

  bool all_null() const { return ints.empty() && floats.empty() && codes.empty(); }
  bool is_null(size_t r) const;
  // Values of record r; callers check is_null first (a null reads as kNullInt, NaN or "").
  int64_t int_at(size_t r) const { return ints.empty() ? kNullInt : ints[r]; }
  double float_at(size_t r) const;
  std::string_view string_at(size_t r) const;
};

// The columns area of one shard.
struct ColumnTable {
  std::vector<Column> columns;

  bool empty() const { return columns.empty(); }
  std::vector<ColumnSpec> specs() const;
  // Appends the area's bytes (num_records values per column) to *dst.
  void EncodeTo(uint64_t num_records, std::string* dst) const;
  // Reads the whole of *input (the index's bytes after the aux area) as the area of a shard of
  // `num_records` records. Corruption naming the column, the field and the reason for a wrong
  // magic, a count of 0 or over kMaxColumns, an unknown type or flag, non-zero reserved bytes, a
  // name empty, too long or used twice, dictionary ends that decrease or pass dict_bytes, a code
  // past the dictionary, or a size that is not exactly the area's.
  Status DecodeFrom(std::string_view* input, uint64_t num_records);
};

// Record r's values of every column of `table`, in order: what a writer takes back (merge
// --repack).
void RowValues(const ColumnTable& table, size_t r, std::vector<ColumnValue>* out);

// Builds a ColumnTable record by record (ShardWriter).
class ColumnTableBuilder {
 public:
  explicit ColumnTableBuilder(std::vector<ColumnSpec> specs);
  // Appends one record's values, one per spec in order. InvalidArgument naming `key` for a
  // count or a type that is not the specs'.
  Status Add(std::span<const ColumnValue> values, std::string_view key);
  // The table of the records added (all-null columns hold no values).
  ColumnTable Finish();
  bool empty() const { return specs_.empty(); }

 private:
  std::vector<ColumnSpec> specs_;
  std::vector<Column> columns_;
  std::vector<std::unordered_map<std::string, uint32_t>> codes_;
  std::vector<bool> any_value_;
  uint64_t records_ = 0;
};

}  // namespace sluice::shards
