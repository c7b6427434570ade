// Kaldi data directories (docs/shardify-inputs.md, "Kaldi"): wav.scp and text, with segments,
// utt2spk and utt2lang when present.
//
// One record per utterance: a line of segments (utt rec start end; end -1 reads to the end), or
// without segments a line of wav.scp (the utterance is the whole recording). wav.scp maps a
// recording to a file path, or to a `cmd |` pipe whose stdout is the audio (run only with
// ImportOptions::allow_pipes). Every line of every file ends in a record or a rejected item
// naming the file and line: malformed lines, duplicate ids, an utterance without text (or
// without a speaker when utt2spk exists), text/utt2spk/utt2lang lines of unknown utterances,
// recordings no segment uses, ark:offset entries.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "importers/item.h"
#include "importers/options.h"

namespace sluice::importers {

// The files of a data directory, by name ("wav.scp", "text", "segments", "utt2spk",
// "utt2lang"); a missing optional file is absent from the map.
using KaldiFiles = std::map<std::string, std::string>;

// All the items of a data directory held in memory, in order: the utterances, then the lines
// that made no utterance. `dir` prefixes each source ("dir/text"). The fuzzer's entry point.
void KaldiItems(const std::string& dir, const KaldiFiles& files, const ImportOptions& opt,
                std::vector<ImportItem>* out);

// Reads DIR's files (NotFound naming the missing wav.scp or text) and yields KaldiItems.
Status OpenKaldiDir(const std::string& dir, const ImportOptions& opt,
                    std::unique_ptr<Importer>* out);

}  // namespace sluice::importers
