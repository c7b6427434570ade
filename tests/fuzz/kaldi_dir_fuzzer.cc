// libFuzzer target for Kaldi data directories (importers/kaldi.h): the input is split at "\0"
// into wav.scp, text, segments, utt2spk and utt2lang (as many as it holds) and read by
// KaldiItems, with and without --allow-pipes. Every line ends in an item, accepted or rejected
// with a reason naming its file and line; an accepted one has a key, one audio source and a span
// with 0 <= offset and a positive duration or -1 (to the end).
// Seeds: corpus/kaldi_dir.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "importers/kaldi.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::importers;
  const char* names[] = {"wav.scp", "text", "segments", "utt2spk", "utt2lang"};
  KaldiFiles files;
  const std::string all(reinterpret_cast<const char*>(data), size);
  size_t pos = 0;
  for (const char* name : names) {
    if (pos > all.size()) break;
    size_t end = all.find('\0', pos);
    if (end == std::string::npos) end = all.size();
    files[name] = all.substr(pos, end - pos);
    pos = end + 1;
  }
  for (bool pipes : {false, true}) {
    ImportOptions opt;
    opt.allow_pipes = pipes;
    std::vector<ImportItem> items;
    KaldiItems("d", files, opt, &items);
    for (const ImportItem& it : items) {
      if (it.source.empty() || it.line == 0) std::abort();
      if (!it.reason.empty()) continue;
      if (it.key.empty() || it.audio_path.empty() == it.pipe_command.empty()) std::abort();
      if (!pipes && !it.pipe_command.empty()) std::abort();
      if (!(it.offset_seconds >= 0) || !(it.duration_seconds > 0 || it.duration_seconds == -1))
        std::abort();
    }
  }
  return 0;
}
