#include "shards/columns.h"

#include <cmath>
#include <cstring>
#include <unordered_set>

#include "shards/coding.h"

namespace sluice::shards {

const char* ColumnTypeName(ColumnType t) {
  switch (t) {
    case ColumnType::kInt: return "int";
    case ColumnType::kFloat: return "float";
    case ColumnType::kString: return "string";
  }
  return "?";
}

bool ParseColumnType(std::string_view name, ColumnType* t) {
  for (ColumnType c : {ColumnType::kInt, ColumnType::kFloat, ColumnType::kString}) {
    if (name == ColumnTypeName(c)) {
      *t = c;
      return true;
    }
  }
  return false;
}

bool Column::is_null(size_t r) const {
  switch (spec.type) {
    case ColumnType::kInt: return ints.empty() || ints[r] == kNullInt;
    case ColumnType::kFloat: return floats.empty() || std::isnan(floats[r]);
    case ColumnType::kString: return codes.empty() || codes[r] == kNullCode;
  }
  return true;
}

double Column::float_at(size_t r) const {
  return floats.empty() ? std::numeric_limits<double>::quiet_NaN() : floats[r];
}

std::string_view Column::string_at(size_t r) const {
  if (codes.empty() || codes[r] == kNullCode) return {};
  return dict[codes[r]];
}

std::vector<ColumnSpec> ColumnTable::specs() const {
  std::vector<ColumnSpec> out;
  for (const Column& c : columns) out.push_back(c.spec);
  return out;
}

void ColumnTable::EncodeTo(uint64_t num_records, std::string* dst) const {
  PutFixed32(dst, kColumnsMagic);
  PutFixed32(dst, static_cast<uint32_t>(columns.size()));
  for (const Column& c : columns) {
    const bool none = c.all_null();
    uint32_t dict_bytes = 0;
    for (const std::string& s : c.dict) dict_bytes += static_cast<uint32_t>(s.size());
    dst->push_back(static_cast<char>(c.spec.type));
    dst->push_back(static_cast<char>(none ? kColumnAllNull : 0));
    PutFixed16(dst, 0);
    PutFixed32(dst, static_cast<uint32_t>(c.spec.name.size()));
    PutFixed32(dst, none ? 0 : static_cast<uint32_t>(c.dict.size()));
    PutFixed32(dst, none ? 0 : dict_bytes);
    dst->append(c.spec.name);
    if (none) continue;
    switch (c.spec.type) {
      case ColumnType::kInt:
        for (uint64_t r = 0; r < num_records; ++r)
          PutFixed64(dst, static_cast<uint64_t>(c.ints[r]));
        break;
      case ColumnType::kFloat:
        for (uint64_t r = 0; r < num_records; ++r) {
          uint64_t bits;
          std::memcpy(&bits, &c.floats[r], 8);
          PutFixed64(dst, bits);
        }
        break;
      case ColumnType::kString: {
        uint32_t end = 0;
        for (const std::string& s : c.dict) PutFixed32(dst, end += static_cast<uint32_t>(s.size()));
        for (const std::string& s : c.dict) dst->append(s);
        for (uint64_t r = 0; r < num_records; ++r) PutFixed32(dst, c.codes[r]);
        break;
      }
    }
  }
}

Status ColumnTable::DecodeFrom(std::string_view* input, uint64_t num_records) {
  std::string_view& in = *input;
  const size_t area = in.size();
  auto corrupt = [&](const std::string& why) {
    return Status::Corruption("columns area, byte " + std::to_string(area - in.size()) + ": " +
                              why);
  };
  columns.clear();
  if (in.size() < kColumnsHeaderSize) return corrupt("shorter than its 8-byte header");
  if (DecodeFixed32(in.data()) != kColumnsMagic) return corrupt("bad magic (not \"SLCO\")");
  const uint32_t count = DecodeFixed32(in.data() + 4);
  if (count == 0 || count > kMaxColumns)
    return corrupt("column count " + std::to_string(count) + " not in 1.." +
                   std::to_string(kMaxColumns));
  in.remove_prefix(kColumnsHeaderSize);
  std::unordered_set<std::string> names;
  for (uint32_t k = 0; k < count; ++k) {
    const std::string col = "column " + std::to_string(k);
    if (in.size() < kColumnHeaderSize) return corrupt(col + ": header runs past the area");
    const uint8_t type = static_cast<uint8_t>(in[0]);
    const uint8_t flags = static_cast<uint8_t>(in[1]);
    const uint16_t reserved = DecodeFixed16(in.data() + 2);
    const uint32_t name_size = DecodeFixed32(in.data() + 4);
    const uint32_t dict_count = DecodeFixed32(in.data() + 8);
    const uint32_t dict_bytes = DecodeFixed32(in.data() + 12);
    if (type < 1 || type > 3) return corrupt(col + ": unknown type " + std::to_string(type));
    if ((flags & ~kColumnAllNull) != 0 || reserved != 0)
      return corrupt(col + ": reserved bits are not 0");
    if (name_size == 0 || name_size > kMaxColumnNameSize)
      return corrupt(col + ": name size " + std::to_string(name_size) + " not in 1..255");
    in.remove_prefix(kColumnHeaderSize);
    if (in.size() < name_size) return corrupt(col + ": name runs past the area");
    Column c;
    c.spec.type = static_cast<ColumnType>(type);
    c.spec.name.assign(in.data(), name_size);
    in.remove_prefix(name_size);
    if (!names.insert(c.spec.name).second)
      return corrupt(col + ": name '" + c.spec.name + "' used twice");
    const std::string named = "column '" + c.spec.name + "'";
    const bool none = flags & kColumnAllNull;
    if ((none || c.spec.type != ColumnType::kString) && (dict_count != 0 || dict_bytes != 0))
      return corrupt(named + ": a dictionary where none belongs");
    if (none) {
      columns.push_back(std::move(c));
      continue;
    }
    // Sizes in u64: no product below overflows for any u32 count and any record count that
    // fits an index.
    const uint64_t values = c.spec.type == ColumnType::kString
                                ? 4ull * dict_count + dict_bytes + 4ull * num_records
                                : 8ull * num_records;
    if (values > in.size()) return corrupt(named + ": values run past the area");
    if (c.spec.type == ColumnType::kInt) {
      c.ints.resize(num_records);
      for (uint64_t r = 0; r < num_records; ++r)
        c.ints[r] = static_cast<int64_t>(DecodeFixed64(in.data() + 8 * r));
    } else if (c.spec.type == ColumnType::kFloat) {
      c.floats.resize(num_records);
      std::memcpy(c.floats.data(), in.data(), 8 * num_records);
    } else {
      const char* ends = in.data();
      const char* bytes = ends + 4ull * dict_count;
      c.dict.resize(dict_count);
      uint32_t begin = 0;
      for (uint32_t d = 0; d < dict_count; ++d) {
        const uint32_t end = DecodeFixed32(ends + 4ull * d);
        if (end < begin || end > dict_bytes)
          return corrupt(named + ": dictionary entry " + std::to_string(d) + " ends at " +
                         std::to_string(end) + ", before its start or past the " +
                         std::to_string(dict_bytes) + " dictionary bytes");
        c.dict[d].assign(bytes + begin, end - begin);
        begin = end;
      }
      if (begin != dict_bytes)
        return corrupt(named + ": dictionary entries end at " + std::to_string(begin) +
                       ", not at its " + std::to_string(dict_bytes) + " bytes");
      const char* codes = bytes + dict_bytes;
      c.codes.resize(num_records);
      for (uint64_t r = 0; r < num_records; ++r) {
        c.codes[r] = DecodeFixed32(codes + 4 * r);
        if (c.codes[r] != kNullCode && c.codes[r] >= dict_count)
          return corrupt(named + ": record " + std::to_string(r) + "'s code " +
                         std::to_string(c.codes[r]) + " is past the dictionary's " +
                         std::to_string(dict_count) + " entries");
      }
    }
    in.remove_prefix(values);
    columns.push_back(std::move(c));
  }
  if (!in.empty()) return corrupt(std::to_string(in.size()) + " bytes after the last column");
  return Status::OK();
}

void RowValues(const ColumnTable& table, size_t r, std::vector<ColumnValue>* out) {
  out->resize(table.columns.size());
  for (size_t k = 0; k < table.columns.size(); ++k) {
    const Column& c = table.columns[k];
    ColumnValue& v = (*out)[k];
    v = ColumnValue();
    v.null = c.is_null(r);
    if (v.null) continue;
    switch (c.spec.type) {
      case ColumnType::kInt: v.i = c.int_at(r); break;
      case ColumnType::kFloat: v.f = c.float_at(r); break;
      case ColumnType::kString: v.s = c.string_at(r); break;
    }
  }
}

ColumnTableBuilder::ColumnTableBuilder(std::vector<ColumnSpec> specs)
    : specs_(std::move(specs)),
      columns_(specs_.size()),
      codes_(specs_.size()),
      any_value_(specs_.size(), false) {
  for (size_t k = 0; k < specs_.size(); ++k) columns_[k].spec = specs_[k];
}

Status ColumnTableBuilder::Add(std::span<const ColumnValue> values, std::string_view key) {
  if (values.size() != specs_.size())
    return Status::InvalidArgument(
        "record '" + std::string(key) + "': " + std::to_string(values.size()) +
        " column values for the " + std::to_string(specs_.size()) + " columns of the dataset");
  // Checked before anything is appended, so a refused record leaves the table as it was.
  for (size_t k = 0; k < specs_.size(); ++k) {
    if (specs_[k].type == ColumnType::kInt && !values[k].null && values[k].i == kNullInt)
      return Status::InvalidArgument("record '" + std::string(key) + "': column '" +
                                     specs_[k].name + "': " + std::to_string(kNullInt) +
                                     " is the int columns' null and cannot be stored");
  }
  for (size_t k = 0; k < specs_.size(); ++k) {
    const ColumnValue& v = values[k];
    Column& c = columns_[k];
    any_value_[k] = any_value_[k] || !v.null;
    switch (c.spec.type) {
      case ColumnType::kInt: c.ints.push_back(v.null ? kNullInt : v.i); break;
      case ColumnType::kFloat:
        c.floats.push_back(v.null ? std::numeric_limits<double>::quiet_NaN() : v.f);
        break;
      case ColumnType::kString: {
        if (v.null) {
          c.codes.push_back(kNullCode);
          break;
        }
        auto [it, added] = codes_[k].emplace(v.s, static_cast<uint32_t>(c.dict.size()));
        if (added) c.dict.push_back(v.s);
        c.codes.push_back(it->second);
        break;
      }
    }
  }
  ++records_;
  return Status::OK();
}

ColumnTable ColumnTableBuilder::Finish() {
  ColumnTable t;
  for (size_t k = 0; k < columns_.size(); ++k) {
    Column c = std::move(columns_[k]);
    // Nothing to store for a column no record has: its values would all be the null.
    if (!any_value_[k]) c = Column{specs_[k], {}, {}, {}, {}};
    t.columns.push_back(std::move(c));
  }
  return t;
}

}  // namespace sluice::shards
