// libFuzzer target for encoder frames specs (features/encoder_frames.h ParseEncoderFramesSpec):
// a JSON spec, as --encoder-frames FILE gives it, must parse or give a Status, never a crash; a
// spec that parses must count frames without overflow (UBSan), never negative, and never fewer
// for a longer clip. Seeds: corpus/encoder_frames (written by hand).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "features/encoder_frames.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::features;
  const std::string text(reinterpret_cast<const char*>(data), size);
  EncoderFramesSpec spec;
  if (!ParseEncoderFramesSpec(text, "fuzz/spec.json", &spec).ok()) return 0;
  int64_t previous = 0;
  for (int64_t n = 0; n < 2000; n += 7) {
    const int64_t frames = EncoderFrames(spec, n);
    if (frames < previous) std::abort();
    previous = frames;
  }
  if (EncoderFrames(spec, kMaxEncoderSamples) < previous) std::abort();
  if (EncoderFrames(spec, INT64_MAX) < 0 || EncoderFrames(spec, -1) != 0) std::abort();
  return 0;
}
