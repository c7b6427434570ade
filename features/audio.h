// Audio decode through libsndfile: files or memory buffers (WAV, FLAC, Ogg-Vorbis, Opus, MP3, ...)
// to mono float samples in [-1, 1].
//
// Samples are libsndfile's normalised floats: an int16 source sample s becomes s / 32768, exactly,
// so features/pcm.h's FloatToPcm16 gives the original integers back. Multi-channel input is
// downmixed by averaging the channels. Checking for NaN/Inf (possible in float WAV files) is the
// caller's job: AllFinite() below does it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace sluice::features {

struct DecodeOptions {
  double offset_seconds = 0;     // start reading here (seconds from the start of the audio)
  double duration_seconds = -1;  // seconds to read; < 0 reads to the end
  bool allow_truncated = false;  // decode what a file holds when its header declares more
                                 // samples (a cut-off copy); by default that is a Corruption.
                                 // Also keeps a span that runs past the end of the audio.
  // A span (offset + duration) may end this far past the end of the audio and is then read to
  // the end; further is an InvalidArgument naming offset, duration and length (a manifest that
  // does not match its file), unless allow_truncated.
  double end_tolerance_seconds = 0.01;
  // > 0: a span longer than this is an InvalidArgument "... exceeds <max_seconds_name> <max>",
  // decided from the header's length before any sample is decoded (a 2 GB WAV costs no memory);
  // where the length is unknown (some MP3/Ogg), decoding stops just past the limit.
  double max_seconds = -1;
  const char* max_seconds_name = "the maximum duration";  // e.g. "--max-duration"
  // false: multi-channel audio is downmixed to mono (what shards store); true: `samples` holds
  // the source's channels interleaved, frame by frame (sluice.load).
  bool keep_channels = false;
};

struct DecodedAudio {
  std::vector<float> samples;  // mono (or interleaved channels_in channels with keep_channels),
                               // in [-1, 1] for integer sources
  int sample_rate = 0;         // Hz, the source's rate (no resampling here)
  int channels_in = 0;         // channels of the source before the downmix
  uint64_t bytes_read = 0;     // DecodeFile: bytes read from the file (header and span)
};

// Decodes `path`, reading only what the span needs: the header, then from the offset on (a
// seek), so a segment of a long recording costs the segment. Errors: NotFound (no such file),
// IOError (unreadable), Corruption (not a recognised or a damaged audio file), InvalidArgument
// (not a regular file (a FIFO is refused, not waited on), offset at or beyond the end, a span
// ending past the end beyond the tolerance, bad offset/duration, over max_seconds, or no samples
// at all). Every message starts with the path. A file whose
// header declares more samples than it holds (WAV, FLAC, AIFF: headers with an exact length) is a
// Corruption "header declares N frames, file holds M" unless opt.allow_truncated.
// `out->samples` is reused (resized, its capacity kept).
Status DecodeFile(const std::string& path, const DecodeOptions& opt, DecodedAudio* out);

// Same as DecodeFile for an encoded file held in memory (libsndfile virtual I/O); `name` (a path
// or a record key) starts every error message. `data` must stay valid during the call only.
Status DecodeMemory(const void* data, size_t size, const std::string& name,
                    const DecodeOptions& opt, DecodedAudio* out);

// True when no sample is NaN or +-Inf.
bool AllFinite(const float* samples, size_t n);

}  // namespace sluice::features
