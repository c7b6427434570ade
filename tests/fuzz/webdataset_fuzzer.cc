// libFuzzer target for WebDataset tars (importers/webdataset.h): the input is a tar (or a
// gzipped one) read by WebDatasetItems through libarchive. A damaged tar is an error status and a
// bad sample a rejected item, never a crash; an accepted sample has a key and audio bytes.
// Seeds: corpus/webdataset.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "importers/webdataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::importers;
  std::vector<ImportItem> items;
  const sluice::Status st =
      WebDatasetItems("fuzz.tar", std::string(reinterpret_cast<const char*>(data), size), &items);
  (void)st;
  for (const ImportItem& it : items) {
    if (it.line == 0) std::abort();
    if (!it.reason.empty()) continue;
    if (it.key.empty() || it.audio_bytes.empty() || it.audio_name.empty()) std::abort();
  }
  return 0;
}
