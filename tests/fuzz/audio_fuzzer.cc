// libFuzzer target for audio decoding from memory, through every path sluice wraps around
// libsndfile (features/audio.h DecodeMemory: WAV, FLAC, Ogg Vorbis/Opus, MP3 and whatever else
// libsndfile recognises; features/flac.h DecodeFlac: the `flac` codec of shard records) and the
// conversions after them (features/pcm.h). Any bytes give a Status, never a crash, and a decode
// that succeeds gives a rate, a channel count and, for DecodeFlac, the samples it promises.
// Seeds: corpus/audio (tests/fuzz/make_seeds.cc: one small file per format).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "features/audio.h"
#include "features/flac.h"
#include "features/pcm.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::features;
  DecodedAudio audio;
  std::vector<int16_t> pcm;
  if (DecodeMemory(data, size, "fuzz.audio", DecodeOptions{}, &audio).ok()) {
    if (audio.sample_rate <= 0 || audio.channels_in <= 0) std::abort();
    (void)AllFinite(audio.samples.data(), audio.samples.size());
    pcm.resize(audio.samples.size());
    FloatToPcm16(audio.samples.data(), audio.samples.size(), pcm.data());
    // The same bytes with an offset and a duration (a manifest line's "offset"/"duration"),
    // chosen by one byte of the input so a crash reproduces from the file alone.
    const uint8_t b = data[size / 2];
    static constexpr double kOffsets[] = {0, 0.001, 0.25, 1e9};
    static constexpr double kDurations[] = {-1, 0, 0.01, 1e-9};
    const DecodeOptions opt{kOffsets[b & 3], kDurations[(b >> 2) & 3]};
    (void)DecodeMemory(data, size, "fuzz.audio", opt, &audio);
  }
  int rate = 0;
  if (DecodeFlac(data, size, "fuzz.flac", &pcm, &rate).ok()) {
    if (rate <= 0) std::abort();
    std::vector<float> f(pcm.size());
    Pcm16ToFloat(pcm.data(), pcm.size(), f.data(), 1.0f / 32768);
  }
  return 0;
}
