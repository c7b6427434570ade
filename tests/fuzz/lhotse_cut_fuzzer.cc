// libFuzzer target for Lhotse cut manifests (importers/lhotse.h): each line through
// ParseLhotseCut, with and without --allow-pipes, and the whole input through the gzip decoder
// the .jsonl.gz reader uses. A cut is accepted or rejected with a reason, never a crash, and an
// accepted cut has exactly one audio source, a key, and a span with finite, non-negative numbers.
// Seeds: corpus/lhotse_cut (lines shaped as lhotse 1.33 writes them).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "importers/lhotse.h"
#include "importers/text_lines.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::importers;
  const std::string all(reinterpret_cast<const char*>(data), size);
  std::string inflated;
  (void)GunzipString("fuzz", all, &inflated);
  std::string_view in(all);
  while (!in.empty()) {
    const size_t nl = in.find('\n');
    const std::string line(in.substr(0, nl));
    in.remove_prefix(nl == std::string_view::npos ? in.size() : nl + 1);
    for (bool pipes : {false, true}) {
      ImportOptions opt;
      opt.allow_pipes = pipes;
      ImportItem it;
      ParseLhotseCut(line, opt, &it);
      if (!it.reason.empty()) continue;
      if (it.key.empty() || it.audio_path.empty() == it.pipe_command.empty()) std::abort();
      if (!pipes && !it.pipe_command.empty()) std::abort();  // a command only when allowed
      if (!std::isfinite(it.offset_seconds) || it.offset_seconds < 0 ||
          !std::isfinite(it.duration_seconds) || it.duration_seconds <= 0)
        std::abort();
    }
  }
  return 0;
}
