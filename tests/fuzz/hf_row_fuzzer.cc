// libFuzzer target for the rows of HF parquet (importers/hf_parquet.h): the input's first line is
// a row's header as the reader script writes it, the rest its audio bytes, through ParseHfRow. A
// row is accepted or rejected with a reason naming file and row, never a crash, and an accepted
// row has a key and exactly one audio source: its bytes, or else a path.
// Seeds: corpus/hf_row (headers shaped as the reader script writes them, by hand).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "importers/hf_parquet.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::importers;
  const std::string all(reinterpret_cast<const char*>(data), size);
  const size_t nl = all.find('\n');
  const std::string header = all.substr(0, nl);
  std::string audio = nl == std::string::npos ? std::string() : all.substr(nl + 1);
  const bool had_audio = !audio.empty();
  ImportOptions opt;
  opt.base_dir = "/data";
  ImportItem it;
  ParseHfRow("train.parquet", header, std::move(audio), opt, &it);
  if (it.source != "train.parquet" || it.input != header) std::abort();
  if (!it.reason.empty()) {
    if (it.reason.rfind("train.parquet row ", 0) != 0) std::abort();
    if (!it.audio_bytes.empty() || !it.audio_path.empty()) std::abort();
    return 0;
  }
  if (it.key.empty() || it.audio_bytes.empty() == it.audio_path.empty()) std::abort();
  if (had_audio == it.audio_bytes.empty() || !it.pipe_command.empty()) std::abort();
  return 0;
}
