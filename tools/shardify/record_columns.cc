#include "record_columns.h"

#include <cctype>
#include <set>

#include <nlohmann/json.hpp>

namespace sluice::shardify {
namespace {

// Names the loader's filter reads from the index itself (loader/record_filter.h): a kept field
// of the same name could never be filtered on.
const std::set<std::string>& ReservedNames() {
  static const std::set<std::string> names = {"duration",
                                              "tokens",
                                              "tokens_per_second",
                                              "key",
                                              "chars_per_second",
                                              "speaker",
                                              "language",
                                              "lang",
                                              "chars",
                                              "and",
                                              "or",
                                              "not"};
  return names;
}

bool Identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

}  // namespace

Status ParseKeepField(const std::string& arg, shards::ColumnSpec* out) {
  const size_t colon = arg.find(':');
  out->name = arg.substr(0, colon);
  out->type = shards::ColumnType::kString;
  if (colon != std::string::npos && !shards::ParseColumnType(arg.substr(colon + 1), &out->type))
    return Status::InvalidArgument("--keep-field '" + arg + "': type '" + arg.substr(colon + 1) +
                                   "' is not int, float or string");
  if (!Identifier(out->name) || out->name.size() > shards::kMaxColumnNameSize)
    return Status::InvalidArgument("--keep-field '" + arg + "': the name '" + out->name +
                                   "' is not a filter identifier (letters, digits and _, not "
                                   "starting with a digit, at most 255 bytes)");
  if (ReservedNames().count(out->name))
    return Status::InvalidArgument(
        "--keep-field '" + arg + "': '" + out->name +
        "' is a column every audio dataset has or a filter word. HINT: speaker and language are "
        "kept without --keep-field; name another field");
  return Status::OK();
}

Status AudioColumns(const std::vector<shards::ColumnSpec>& keep,
                    std::vector<shards::ColumnSpec>* out) {
  *out = {{kSpeakerColumn, shards::ColumnType::kString},
          {kLanguageColumn, shards::ColumnType::kString},
          {kCharsColumn, shards::ColumnType::kInt}};
  std::set<std::string> seen;
  for (const shards::ColumnSpec& c : keep) {
    if (!seen.insert(c.name).second)
      return Status::InvalidArgument("--keep-field " + c.name + " is given twice");
    out->push_back(c);
  }
  if (out->size() > shards::kMaxColumns)
    return Status::InvalidArgument("at most " + std::to_string(shards::kMaxColumns - 3) +
                                   " --keep-field columns");
  return Status::OK();
}

uint64_t CountChars(std::string_view text) {
  uint64_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return n;
}

bool RecordColumnValues(const std::vector<shards::ColumnSpec>& keep, const std::string& speaker,
                        const std::string& language, std::string_view text, std::string_view fields,
                        std::vector<shards::ColumnValue>* out, std::string* why) {
  out->assign(3 + keep.size(), shards::ColumnValue());
  auto set_string = [](const std::string& s, shards::ColumnValue* v) {
    v->null = s.empty();
    v->s = s;
  };
  set_string(speaker, &(*out)[0]);
  set_string(language, &(*out)[1]);
  (*out)[2].null = false;
  (*out)[2].i = static_cast<int64_t>(CountChars(text));
  if (keep.empty()) return true;
  nlohmann::json j;
  if (!fields.empty()) {
    j = nlohmann::json::parse(fields, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      *why = "the fields --keep-field reads are not a JSON object";
      return false;
    }
  }
  for (size_t k = 0; k < keep.size(); ++k) {
    shards::ColumnValue& v = (*out)[3 + k];
    if (!j.is_object()) continue;
    auto it = j.find(keep[k].name);
    if (it == j.end() || it->is_null()) continue;
    const auto bad = [&](const char* want) {
      *why = "--keep-field " + keep[k].name + ":" + shards::ColumnTypeName(keep[k].type) +
             ": the value " + it->dump().substr(0, 80) + " is not " + want;
      return false;
    };
    // Text formats (Kaldi's utt2NAME files) hold numbers as text: a string that is exactly a
    // number counts as that number for a numeric column.
    nlohmann::json parsed;
    if (it->is_string() && keep[k].type != shards::ColumnType::kString) {
      parsed = nlohmann::json::parse(it->get_ref<const std::string&>(), nullptr, false);
    }
    const nlohmann::json& value = parsed.is_number() ? parsed : *it;
    switch (keep[k].type) {
      case shards::ColumnType::kInt:
        if (!value.is_number_integer()) return bad("an integer");
        if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{INT64_MAX})
          return bad("an integer of 64 bits");
        v.i = value.get<int64_t>();
        if (v.i == shards::kNullInt) return bad("an integer above -2^63 (the null)");
        break;
      case shards::ColumnType::kFloat:
        if (!value.is_number()) return bad("a number");
        v.f = value.get<double>();
        break;
      case shards::ColumnType::kString:
        if (!it->is_string()) return bad("a string");
        v.s = it->get<std::string>();
        break;
    }
    v.null = false;
  }
  return true;
}

}  // namespace sluice::shardify
