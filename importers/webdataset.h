// WebDataset tar shards (docs/shardify-inputs.md, "WebDataset"), read with libarchive.
//
// Members are grouped into samples by key as webdataset groups them: consecutive members whose
// names agree up to the first dot of the file name ("dir/utt1.flac", "dir/utt1.txt" -> key
// "dir/utt1"). A sample becomes one record: key = the sample's key, audio = its one member ending
// in .wav/.flac/.mp3/.ogg/.opus (decoded from memory), text = its .txt member, else the "text"
// string of its .json member. Other members (.cls, .id, ...) are not stored (the metadata columns
// to come). Rejected, naming tar and key: no audio or several, no text, a .json without "text",
// a key seen earlier in the same tar, a member that is not a regular file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "importers/item.h"

namespace sluice::importers {

// The samples of `tars`, in order. A damaged tar is an error naming the tar and member, not a
// rejected item: what follows the damage cannot be trusted to be the rest of the input.
Status OpenWebDataset(std::vector<std::string> tars, std::unique_ptr<Importer>* out);

// The samples of one tar held in memory (the fuzzer's and the tests' entry point): items, or
// the error OpenWebDataset's reader would return.
Status WebDatasetItems(const std::string& name, const std::string& tar,
                       std::vector<ImportItem>* out);

}  // namespace sluice::importers
