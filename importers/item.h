// What every importer yields: one corpus item (a cut, an utterance, a tar sample) described the
// way shardify's audio pipeline takes it, or rejected with the reason. After this point all
// formats share one code path (tools/shardify/audio_cmd.cc), so parallel ingest, byte-identical
// output for any thread count, --resume, --part/merge and the rejected-with-reason accounting
// hold for each of them (docs/shardify-inputs.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace sluice::importers {

struct ImportItem {
  // Where it came from, for rejects.jsonl: the file and the 1-based line (tar: the 1-based
  // sample number), and what rejects.jsonl shows as its input (the line, or a summary).
  std::string source;
  uint64_t line = 0;
  std::string input;
  // Non-empty: the importer rejected the item (the reason names file, line and the cause);
  // nothing below is set then.
  std::string reason;

  // The audio: exactly one of a file path (relative paths resolve against base_dir), the encoded
  // file's bytes (a tar member), or a shell command whose stdout is the encoded file (a Kaldi
  // "cmd |" entry or a Lhotse command source, run only when allowed).
  std::string audio_path;
  std::string base_dir;
  std::string audio_bytes;
  std::string pipe_command;
  std::string audio_name;  // the bytes' or the command's name in errors: "a.tar:k1.flac"

  // The channels of a multi-channel file the clip takes (a Lhotse cut's "channel"): one, or
  // several averaged; empty: every channel, averaged (the downmix).
  std::vector<int> channels;
  double offset_seconds = 0;     // the clip inside the audio
  double duration_seconds = -1;  // < 0: to the end
  std::string text;
  std::string key;      // the record's key: cut id, utterance id, sample key
  // The recording the clip is cut from (Lhotse recording id, Kaldi recording id; "" when the
  // format has none): `--segments stored` writes each recording's audio once under this name.
  std::string recording;
  // The metadata columns (docs/shardify-inputs.md, "Metadata columns"); "" where the format or
  // the item has none (stored as null).
  std::string speaker;
  std::string language;
  // A JSON object of the item's other fields, where the format has them (a Lhotse cut's and its
  // supervision's "custom", a WebDataset sample's .json, the HF columns named in
  // ImportOptions::fields); `shardify --keep-field` takes its values from it. "" when none.
  std::string fields;
};

// A stream of items in input order. Not thread-safe: one reader.
class Importer {
 public:
  virtual ~Importer() = default;
  // The next item; false at the end, or on a read error, which *status then holds (a damaged
  // line or sample is an item with a reason, not an error).
  virtual bool Next(ImportItem* item, Status* status) = 0;
};

// Items already built whole (formats whose files must all be read before any item is known: a
// Kaldi directory, a recordings + supervisions manifest pair), handed out in order.
class ItemsImporter final : public Importer {
 public:
  explicit ItemsImporter(std::vector<ImportItem> items) : items_(std::move(items)) {}
  bool Next(ImportItem* item, Status*) override {
    if (next_ >= items_.size()) return false;
    *item = std::move(items_[next_++]);
    return true;
  }

 private:
  std::vector<ImportItem> items_;
  size_t next_ = 0;
};

}  // namespace sluice::importers
