#include "features/encode.h"

#include <sndfile.h>

#include <string>

#include "features/sndfile_io.h"

namespace sluice::features {

const char* AudioContainerExtension(AudioContainer c) {
  return c == AudioContainer::kFlac ? ".flac" : ".wav";
}

Status EncodePcm16(const int16_t* pcm, size_t frames, int channels, int sample_rate,
                   AudioContainer container, std::vector<uint8_t>* out) {
  out->clear();
  const bool flac = container == AudioContainer::kFlac;
  const std::string what = flac ? "flac encode" : "wav encode";
  if (frames == 0) return Status::InvalidArgument(what + ": no samples");
  if (channels < 1) return Status::InvalidArgument(what + ": no channels");
  if (sample_rate <= 0 || (flac && sample_rate > 655350)) {
    return Status::InvalidArgument(what + ": sample rate " + std::to_string(sample_rate) +
                                   " Hz is outside " + (flac ? "FLAC" : "WAV") + "'s range");
  }
  internal::VectorWriter writer{out, 0};
  SF_INFO info{};
  info.samplerate = sample_rate;
  info.channels = channels;
  info.format = (flac ? SF_FORMAT_FLAC : SF_FORMAT_WAV) | SF_FORMAT_PCM_16;
  internal::OpenFailure failure;
  SNDFILE* sf = internal::OpenSndfile(
      [&] { return sf_open_virtual(internal::VectorWriterIo(), SFM_WRITE, &info, &writer); },
      &failure);
  if (sf == nullptr) return Status::IOError(what + ": cannot start encoder: " + failure.reason);
  const auto n = static_cast<sf_count_t>(frames);
  const bool written = sf_writef_short(sf, pcm, n) == n;
  const std::string write_error = written ? "" : sf_strerror(sf);
  // sf_close flushes the last FLAC frame and rewrites the header (WAV sizes; FLAC's STREAMINFO
  // length and MD5) through seek.
  const int close_error = sf_close(sf);
  if (!written) return Status::IOError(what + ": write failed: " + write_error);
  if (close_error != 0)
    return Status::IOError(what + ": finishing the stream failed: " + sf_error_number(close_error));
  if (out->empty()) return Status::IOError(what + ": encoder produced no bytes");
  return Status::OK();
}

}  // namespace sluice::features
