// The metadata columns `shardify audio` stores in every shard's index (docs/shardify-inputs.md,
// "Metadata columns"): speaker and language (strings, from each format's own fields), chars (the
// transcript's characters, for the loader's chars_per_second) and the fields declared with
// --keep-field NAME[:int|float|string]. A record without a value has null there.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "shards/columns.h"

namespace sluice::shardify {

// The columns every audio dataset has, before the kept fields.
inline constexpr const char* kSpeakerColumn = "speaker";
inline constexpr const char* kLanguageColumn = "language";
inline constexpr const char* kCharsColumn = "chars";

// "NAME" (a string) or "NAME:TYPE". InvalidArgument naming the argument for an unknown type, a
// name that is not [A-Za-z_][A-Za-z0-9_]* (the filter's identifiers), or one the loader's filter
// already knows (duration, key, speaker, ...).
Status ParseKeepField(const std::string& arg, shards::ColumnSpec* out);

// speaker, language, chars, then `keep` (names checked distinct).
Status AudioColumns(const std::vector<shards::ColumnSpec>& keep,
                    std::vector<shards::ColumnSpec>* out);

// One record's values of AudioColumns(keep): "" speaker or language is null; `fields` is a JSON
// object text ("" : none) the kept fields are read from; a field absent or null there is null.
// False, with *why, for a field whose JSON type is not its column's (an int column takes
// integers, a float column numbers, a string column strings).
bool RecordColumnValues(const std::vector<shards::ColumnSpec>& keep, const std::string& speaker,
                        const std::string& language, std::string_view text, std::string_view fields,
                        std::vector<shards::ColumnValue>* out, std::string* why);

// Unicode code points of valid UTF-8 `text` (Python's len(str)).
uint64_t CountChars(std::string_view text);

}  // namespace sluice::shardify
