#include "features/flac.h"

#include <sndfile.h>

#include <algorithm>

#include "features/sndfile_io.h"

namespace sluice::features {
namespace {

struct SndfileCloser {
  SNDFILE* sf;
  ~SndfileCloser() {
    if (sf != nullptr) sf_close(sf);
  }
};

}  // namespace

Status EncodeFlac(const int16_t* pcm, size_t n, int sample_rate, std::vector<uint8_t>* out) {
  out->clear();
  if (n == 0) return Status::InvalidArgument("flac encode: no samples");
  if (sample_rate <= 0 || sample_rate > 655350) {
    return Status::InvalidArgument("flac encode: sample rate " + std::to_string(sample_rate) +
                                   " Hz is outside FLAC's range");
  }
  internal::VectorWriter writer{out, 0};
  SF_INFO info{};
  info.samplerate = sample_rate;
  info.channels = 1;
  info.format = SF_FORMAT_FLAC | SF_FORMAT_PCM_16;
  internal::OpenFailure failure;
  SNDFILE* sf = internal::OpenSndfile(
      [&] { return sf_open_virtual(internal::VectorWriterIo(), SFM_WRITE, &info, &writer); },
      &failure);
  if (sf == nullptr) return Status::IOError("flac encode: cannot start encoder: " + failure.reason);
  const auto frames = static_cast<sf_count_t>(n);
  const bool written = sf_writef_short(sf, pcm, frames) == frames;
  const std::string write_error = written ? "" : sf_strerror(sf);
  // sf_close flushes the last FLAC frame and rewrites STREAMINFO (length, MD5) through seek.
  const int close_error = sf_close(sf);
  if (!written) return Status::IOError("flac encode: write failed: " + write_error);
  if (close_error != 0) {
    return Status::IOError(std::string("flac encode: finishing the stream failed: ") +
                           sf_error_number(close_error));
  }
  if (out->empty()) return Status::IOError("flac encode: encoder produced no bytes");
  return Status::OK();
}

Status DecodeFlac(const uint8_t* data, size_t n, const std::string& name, std::vector<int16_t>* out,
                  int* sample_rate) {
  out->clear();
  if (n == 0) return Status::Corruption(name + ": empty FLAC record");
  internal::MemoryReader reader{data, static_cast<sf_count_t>(n), 0};
  SF_INFO info{};
  internal::OpenFailure failure;
  SndfileCloser sf{internal::OpenSndfile(
      [&] { return sf_open_virtual(internal::MemoryReaderIo(), SFM_READ, &info, &reader); },
      &failure)};
  if (sf.sf == nullptr) return Status::Corruption(name + ": not a FLAC stream: " + failure.reason);
  if ((info.format & SF_FORMAT_TYPEMASK) != SF_FORMAT_FLAC) {
    return Status::Corruption(name + ": audio record is not FLAC");
  }
  if (info.channels != 1 || (info.format & SF_FORMAT_SUBMASK) != SF_FORMAT_PCM_16) {
    return Status::Corruption(name + ": FLAC record is not mono 16-bit (" +
                              std::to_string(info.channels) + " channels)");
  }
  if (info.frames <= 0 || info.frames > (sf_count_t{1} << 40)) {
    return Status::Corruption(name + ": FLAC record has an invalid sample count " +
                              std::to_string(info.frames));
  }
  // The buffer grows with what decodes, not with STREAMINFO's count: a damaged header claiming
  // billions of samples costs a Corruption below, not gigabytes (found by record_fuzzer).
  constexpr sf_count_t kChunk = sf_count_t{1} << 16;
  sf_count_t got = 0, ask = 0;
  do {
    ask = std::min(kChunk, info.frames - got);
    out->resize(static_cast<size_t>(got + ask));
    const sf_count_t n_read = sf_readf_short(sf.sf, out->data() + got, ask);
    got += std::max<sf_count_t>(n_read, 0);
    if (n_read != ask) break;
  } while (got < info.frames);
  out->resize(static_cast<size_t>(got));
  if (got != info.frames || sf_error(sf.sf) != SF_ERR_NO_ERROR) {
    out->clear();
    return Status::Corruption(name + ": FLAC record truncated or damaged: decoded " +
                              std::to_string(got) + " of " + std::to_string(info.frames) +
                              " samples (" + sf_strerror(sf.sf) + ")");
  }
  *sample_rate = info.samplerate;
  return Status::OK();
}

}  // namespace sluice::features
