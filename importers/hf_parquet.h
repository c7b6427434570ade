// HF datasets in parquet (docs/shardify-inputs.md, "HF datasets"): files whose audio column holds
// `{bytes, path}` (the storage of datasets' Audio feature) and whose text column holds the
// transcript, one record per row.
//
// Neither Debian 12 nor PyPI offers a C++ parquet reader that a C++ build can depend on (Apache
// Arrow's libparquet is not packaged by Debian 12; pyarrow bundles it for Python only), so the rows
// are read by the pyarrow of a Python the user names (ImportOptions::python: `--python`, or
// sluice.shardify.from_hf's own interpreter):
// a small reader script (kHfReaderScript) runs once per file and streams each row's id, text and
// encoded audio bytes to this importer. Decoding stays sluice's (libsndfile + soxr), so the
// records never change with the `datasets`/torchcodec version.
//
// The stream, on the script's stdout: per row a header, one line of JSON
// {"row": N, "key": ..., "text": ..., "path": ..., "bytes": B[, "speaker": ..., "language": ...,
// "fields": {...}]}, followed by B
// bytes of the encoded audio file; at the end {"end": ROWS}. A file-level failure (no pyarrow, a
// missing column, a file that is not parquet) is {"error": "..."} and a non-zero exit.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "importers/item.h"
#include "importers/options.h"

namespace sluice::importers {

// One row of the stream: `header` (its JSON line, without the newline) and `audio` (its bytes)
// as the item of row header.row of `file`, or an item with a reason naming file and row. The
// fuzzer's and the tests' entry point; never throws.
void ParseHfRow(const std::string& file, const std::string& header, std::string audio,
                const ImportOptions& opt, ImportItem* out);

// The rows of `files` (.parquet, or the .arrow stream files of a datasets cache), in order.
// A reader that cannot start, a file-level error, a broken stream or a non-zero exit is an error
// naming the file; a bad row is a rejected item.
// The reader runs under opt.python with the columns opt.hf_audio, hf_text and hf_id.
Status OpenHfParquet(std::vector<std::string> files, const ImportOptions& opt,
                     std::unique_ptr<Importer>* out);

// The reader script (Python 3 + pyarrow), run as `python -c SCRIPT AUDIO TEXT ID FILE META`,
// META being {"speaker": COLUMN, "language": COLUMN, "fields": [COLUMN...]} (ImportOptions).
extern const char* const kHfReaderScript;

}  // namespace sluice::importers
