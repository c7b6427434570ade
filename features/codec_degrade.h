// Codec degradation (waveform_augment_options.h, CodecOptions): the clip encoded and decoded in
// memory through libsndfile (virtual I/O, sndfile_io.h), so training audio carries the artefacts
// of telephone and streaming codecs. Encoders are libsndfile's: what a Debian libsndfile 1.2
// encodes (G.711 µ-law and A-law and GSM 6.10 in WAV, Vorbis and Opus in Ogg, MP3 through LAME).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "features/waveform_augment_options.h"

namespace sluice::features {

enum class Codec { kUlaw, kAlaw, kGsm, kVorbis, kOpus, kMp3 };

// "ulaw" ... "mp3" (the names CodecOptions::codecs takes). InvalidArgument naming the known
// ones for any other name.
Status ParseCodec(const std::string& name, Codec* codec);
const char* CodecName(Codec codec);

struct CodecDraw {
  bool apply = false;
  size_t codec = 0;          // index into CodecOptions::codecs
  double compression = 0.0;  // libsndfile's SFC_SET_COMPRESSION_LEVEL, [0, 1]
};
// Empty `codecs` draws apply = false.
CodecDraw DrawCodec(const CodecOptions& opt, uint64_t key);

// x (n samples at sample_rate Hz, mono) in place through the codec: encoded into *bytes (scratch,
// reused) and decoded back; the decoded stream is cut or zero-padded to n samples. Samples beyond
// +-1 are clipped to +-1 first (the chain's gain and noise may push them there). Unsupported when
// libsndfile cannot encode the codec at this rate (Opus takes 8, 12, 16, 24 or 48 kHz) or was built
// without it; IOError for a failed encode or decode.
Status CodecRoundTrip(float* x, size_t n, int sample_rate, Codec codec, double compression,
                      std::vector<uint8_t>* bytes);

}  // namespace sluice::features
