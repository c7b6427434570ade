// ItemSource over an importer (importers/: Lhotse cuts, Kaldi data directories, WebDataset
// tars, HF parquet): each ImportItem rides in InputItem::imported to `shardify audio`'s one
// pipeline, so every format gets its parallelism, --resume, --part/merge and rejects
// (docs/shardify-inputs.md).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "importers/item.h"
#include "importers/options.h"
#include "ingest.h"

namespace sluice::shardify {

// The formats `shardify audio --from` takes besides "nemo".
inline const std::vector<std::string> kImportFormats = {"lhotse", "kaldi", "wds", "hf"};

// Opens a fresh importer over the whole input: Count reads the input once through one,
// Next through another.
using ImporterFactory = std::function<Status(std::unique_ptr<importers::Importer>*)>;

// The factory for `format` over `inputs` (cut manifests, one data directory, tars).
Status MakeImporterFactory(const std::string& format, const std::vector<std::string>& inputs,
                           const importers::ImportOptions& opt, ImporterFactory* out);

class ImportSource : public ItemSource {
 public:
  // `recordings` (--segments stored): consecutive items of one recording (the same recording id
  // and audio source) are one input item, InputItem::recording; a rejected item is one of its own.
  explicit ImportSource(ImporterFactory factory, bool recordings = false)
      : factory_(std::move(factory)), recordings_(recordings) {}
  // Items (recordings), and a digest of each item's source, line, input, reason and audio bytes
  // (and recording id).
  Status Count(uint64_t* n, uint64_t* digest) override;
  bool Next(InputItem* item, Status* status) override;

 private:
  bool NextRecording(InputItem* item, Status* status);

  ImporterFactory factory_;
  const bool recordings_;
  std::unique_ptr<importers::Importer> in_;
  std::unique_ptr<importers::ImportItem> pending_;  // read ahead: the next recording's first item
  uint64_t index_ = 0;
};

// Items with the same non-empty key are one recording (--segments stored); a rejected item's key
// is empty.
std::string RecordingKey(const importers::ImportItem& item);

}  // namespace sluice::shardify
