// The reader script of importers/hf_parquet.h: it reads one parquet (or datasets .arrow) file
// with pyarrow and writes the stream hf_parquet.h describes. Kept in Python because the only
// maintained parquet readers are Arrow's, which a C++ build cannot take from Debian 12; it uses
// pyarrow alone (no sluice, no datasets), in batches of 64 rows, so memory stays bounded.
#include "importers/hf_parquet.h"

namespace sluice::importers {

const char* const kHfReaderScript = R"py(
import json, sys

def fail(message):
    sys.stdout.write(json.dumps({"error": message}) + "\n")
    sys.stdout.flush()
    sys.exit(1)

def main():
    audio, text, key, path = sys.argv[1:5]
    # The metadata columns: {"speaker": COLUMN, "language": COLUMN, "fields": [COLUMN, ...]}.
    meta = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
    speaker, language = meta.get("speaker") or None, meta.get("language") or None
    fields = meta.get("fields", [])
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as e:
        fail(f"cannot read it: {e} ({sys.executable}). HINT: pip install pyarrow into that "
             f"Python, or pass --python a Python that has it")
    parquet = None
    try:
        if path.endswith(".arrow"):
            source = pa.memory_map(path)
            try:
                reader = pa.ipc.open_stream(source)
                batches = iter(reader)
            except pa.ArrowInvalid:
                reader = pa.ipc.open_file(source)
                batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
            schema = reader.schema
        else:
            parquet = pq.ParquetFile(path)
            schema = parquet.schema_arrow
    except Exception as e:
        fail(f"not a parquet file (nor a datasets .arrow file): {e}")
    names = schema.names
    for what, flag, column in (("audio", "--hf-audio", audio), ("text", "--hf-text", text)):
        if column not in names:
            fail(f"no {what} column {column!r} (its columns: {', '.join(names)}). HINT: name it "
                 f"with {flag} (sluice.shardify.from_hf: {what}=)")
    kind = schema.field(audio).type
    struct = pa.types.is_struct(kind)
    if struct and not {"bytes", "path"} & {kind.field(i).name for i in range(kind.num_fields)}:
        struct = None
    if not (struct or pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or
            pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        fail(f"the audio column {audio!r} holds {kind}: expected the {{bytes, path}} struct of "
             f"datasets' Audio feature, binary (the encoded file) or a string (its path). HINT: "
             f"store encoded audio: cast_column({audio!r}, datasets.Audio()) before to_parquet")
    # The default id column may be absent (records are then keyed by the audio's path); a named
    # one may not, or a misspelling would key every record by its path without a word.
    if key not in names and key != "id":
        fail(f"no id column {key!r} (its columns: {', '.join(names)}). HINT: name it with "
             f"--hf-id (sluice.shardify.from_hf: id=)")
    for flag, column in [("--hf-speaker", speaker), ("--hf-language", language)] + \
            [("--keep-field", f) for f in fields]:
        if column is not None and column not in names:
            fail(f"no column {column!r} for {flag} (its columns: {', '.join(names)})")
    extra = [c for c in dict.fromkeys([speaker, language] + fields) if c is not None]
    columns = list(dict.fromkeys([audio, text] + ([key] if key in names else []) + extra))
    if parquet is not None:
        batches = parquet.iter_batches(batch_size=64, columns=columns)
    out = sys.stdout.buffer
    row = 0
    for batch in batches:
        values = {c: batch.column(c).to_pylist() for c in columns}
        for i in range(batch.num_rows):
            row += 1
            a = values[audio][i]
            data, where = None, None
            if isinstance(a, dict):
                data, where = a.get("bytes"), a.get("path")
            elif isinstance(a, (bytes, bytearray)):
                data = a
            elif isinstance(a, str):
                where = a
            header = {"row": row, "path": where, "text": values[text][i],
                      "bytes": len(data) if data else 0}
            if key in values:
                k = values[key][i]
                header["key"] = k if k is None or isinstance(k, str) else str(k)
            if speaker is not None:
                header["speaker"] = values[speaker][i]
            if language is not None:
                header["language"] = values[language][i]
            if fields:
                header["fields"] = {f: values[f][i] for f in fields}
            # default=str: a column of dates or decimals arrives as text, never stops the run.
            out.write(json.dumps(header, default=str).encode() + b"\n")
            if data:
                out.write(data)
    out.write(json.dumps({"end": row}).encode() + b"\n")
    out.flush()

main()
)py";

}  // namespace sluice::importers
