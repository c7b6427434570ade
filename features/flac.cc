#include "features/flac.h"

#include <sndfile.h>

#include <algorithm>

#include "features/encode.h"
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
  return EncodePcm16(pcm, n, 1, sample_rate, AudioContainer::kFlac, out);
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
