#include "features/audio.h"

#include <fcntl.h>
#include <sndfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "base/sysio.h"
#include "features/sndfile_io.h"
#include "features/wav_length.h"

namespace sluice::features {
namespace {

using internal::SndfileError;

// Closes the SNDFILE on every return path.
struct SndfileCloser {
  SNDFILE* sf;
  ~SndfileCloser() {
    if (sf != nullptr) sf_close(sf);
  }
};

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f s", s);
  return buf;
}

Status Truncated(const std::string& name, int64_t declared, int64_t holds) {
  return Status::Corruption(name + ": header declares " + std::to_string(declared) +
                            " frames, file holds " + std::to_string(holds) +
                            " (a truncated copy?). HINT: fetch or convert the file again; "
                            "shardify --allow-truncated-audio keeps the frames it holds");
}

// `at_least`: decoding stopped at the limit (a stream without a stated length).
Status TooLong(const std::string& name, double seconds, bool at_least, const DecodeOptions& opt) {
  char limit[32];
  std::snprintf(limit, sizeof(limit), "%g", opt.max_seconds);
  return Status::InvalidArgument(name + ": " + (at_least ? "at least " : "") + Seconds(seconds) +
                                 " of audio exceeds " + opt.max_seconds_name + " " + limit);
}

// Containers whose header states the exact length: reading fewer frames means the file was cut.
// (MP3 and Ogg lengths can be estimates, so a shortfall there proves nothing.)
bool ExactLength(const SF_INFO& info) {
  switch (info.format & SF_FORMAT_TYPEMASK) {
    case SF_FORMAT_WAV:
    case SF_FORMAT_WAVEX:
    case SF_FORMAT_AIFF:
    case SF_FORMAT_FLAC:
    case SF_FORMAT_W64:
    case SF_FORMAT_CAF:
      return true;
    default:
      return false;
  }
}

// Positions `sf` at frame `start`: a seek, or reading and dropping frames of an unseekable
// stream. False when the stream ends first.
bool SkipTo(SNDFILE* sf, const SF_INFO& info, sf_count_t start) {
  if (info.seekable && sf_seek(sf, start, SEEK_SET) == start) return true;
  std::vector<float> skip(4096 * static_cast<size_t>(info.channels));
  sf_count_t left = start;
  while (left > 0) {
    const sf_count_t got = sf_readf_float(sf, skip.data(), std::min<sf_count_t>(left, 4096));
    if (got <= 0) break;
    left -= got;
  }
  return left == 0;
}

// Decodes up to `want` frames from the current position into *samples, downmixed to mono unless
// `keep_channels` (then interleaved); fewer where the stream ends (the caller tells a short file
// from a read error). Returns the frames decoded.
sf_count_t ReadFrames(SNDFILE* sf, int channels, sf_count_t want, bool length_known,
                      bool keep_channels, std::vector<float>* samples) {
  const sf_count_t kChunk = 8192;  // frames per libsndfile call
  // The header's length is a claim: reserve it only up to 4 Mi samples (4 min at 16 kHz); longer
  // audio grows as it decodes. A damaged header claiming 1e11 samples made this reservation fail
  // (audio_fuzzer, features_input_fuzzer).
  constexpr sf_count_t kMaxReserve = sf_count_t{1} << 22;
  if (channels == 1 || keep_channels) {
    // Mono (the common PCM16 case) or all channels: libsndfile converts straight into the output.
    const auto ch = static_cast<size_t>(channels);
    if (length_known) samples->reserve(static_cast<size_t>(std::min(want, kMaxReserve)) * ch);
    sf_count_t done = 0;
    while (done < want) {
      const sf_count_t ask = std::min(kChunk, want - done);
      samples->resize(static_cast<size_t>(done + ask) * ch);
      const sf_count_t got = sf_readf_float(sf, samples->data() + done * channels, ask);
      if (got <= 0) break;
      done += got;
    }
    samples->resize(static_cast<size_t>(done) * ch);
    return done;
  }
  if (length_known) samples->reserve(static_cast<size_t>(std::min(want, kMaxReserve)));
  const int ch = channels;
  const float inv = 1.0f / static_cast<float>(ch);
  std::vector<float> buf(static_cast<size_t>(kChunk) * ch);
  sf_count_t done = 0;
  while (done < want) {
    const sf_count_t got = sf_readf_float(sf, buf.data(), std::min(kChunk, want - done));
    if (got <= 0) break;
    samples->resize(static_cast<size_t>(done + got));
    float* dst = samples->data() + done;
    for (sf_count_t i = 0; i < got; ++i) {
      const float* frame = buf.data() + i * ch;
      float sum = 0;
      for (int c = 0; c < ch; ++c) sum += frame[c];
      dst[i] = sum * inv;
    }
    done += got;
  }
  return done;
}

// Reads the requested span of an opened file (downmixed to mono unless opt.keep_channels).
// `wav` is what the file's own RIFF header says (wav_length.h): libsndfile has already shortened
// info.frames to what is there.
Status ReadOpened(SNDFILE* sf, const SF_INFO& info, const std::string& name,
                  const internal::WavLength& wav, const DecodeOptions& opt, DecodedAudio* out) {
  out->samples.clear();
  if (info.channels <= 0 || info.samplerate <= 0) {
    return Status::Corruption(name + ": audio header has " + std::to_string(info.channels) +
                              " channels at " + std::to_string(info.samplerate) + " Hz");
  }
  if (!std::isfinite(opt.offset_seconds) || opt.offset_seconds < 0) {
    return Status::InvalidArgument(name + ": offset must be a finite number of seconds >= 0");
  }
  if (std::isnan(opt.duration_seconds)) {
    return Status::InvalidArgument(name + ": duration is NaN");
  }
  if (wav.declared > wav.present && !opt.allow_truncated)
    return Truncated(name, wav.declared, wav.present);
  out->sample_rate = info.samplerate;
  out->channels_in = info.channels;
  const double rate = info.samplerate;
  // Some containers (streams, MP3 without a header) do not know their length up front.
  const bool length_known =
      info.frames > 0 && info.frames < std::numeric_limits<sf_count_t>::max() / 2;
  const auto start = static_cast<sf_count_t>(std::llround(opt.offset_seconds * rate));
  if (length_known && start >= info.frames) {
    return Status::InvalidArgument(name + ": offset " + Seconds(opt.offset_seconds) +
                                   " is at or beyond the end of the audio (" +
                                   Seconds(info.frames / rate) + ")");
  }
  sf_count_t want = std::numeric_limits<sf_count_t>::max();
  if (opt.duration_seconds >= 0) {
    want = static_cast<sf_count_t>(std::llround(std::min(opt.duration_seconds, 1e9) * rate));
    if (want == 0) {
      return Status::InvalidArgument(name + ": duration " + Seconds(opt.duration_seconds) +
                                     " is shorter than one sample");
    }
    // A segment that ends past the end of its file: the manifest describes another file (or
    // another version of it). Kept short only within the tolerance (rounding of the times).
    const sf_count_t over = length_known ? start + want - info.frames : 0;
    if (over > std::llround(std::max(opt.end_tolerance_seconds, 0.0) * rate) &&
        !opt.allow_truncated) {
      return Status::InvalidArgument(
          name + ": segment offset " + Seconds(opt.offset_seconds) + " + duration " +
          Seconds(opt.duration_seconds) + " ends " + Seconds(over / rate) +
          " past the end of the audio (" + Seconds(info.frames / rate) +
          "). HINT: correct the manifest's offset/duration; shardify --allow-truncated-audio "
          "keeps what the file holds");
    }
  }
  if (length_known) want = std::min(want, info.frames - start);
  if (opt.max_seconds > 0) {
    // Decided from the header, before decoding: a long recording is refused at the cost of its
    // header. Without a known length, decoding stops one sample past the limit.
    if (length_known && static_cast<double>(want) / rate > opt.max_seconds)
      return TooLong(name, static_cast<double>(want) / rate, false, opt);
    if (!length_known) {
      want = std::min(want, static_cast<sf_count_t>(std::min(opt.max_seconds, 1e9) * rate) + 1);
    }
  }

  if (start > 0 && !SkipTo(sf, info, start)) {
    return Status::InvalidArgument(name + ": offset " + Seconds(opt.offset_seconds) +
                                   " is beyond the end of the audio");
  }

  const sf_count_t got =
      ReadFrames(sf, info.channels, want, length_known, opt.keep_channels, &out->samples);
  if (length_known && got < want && ExactLength(info) && !opt.allow_truncated)
    return Truncated(name, info.frames, start + got);
  if (sf_error(sf) != SF_ERR_NO_ERROR && !opt.allow_truncated) {
    return Status::Corruption(SndfileError(name, "error while decoding audio", sf));
  }
  if (opt.max_seconds > 0 && static_cast<double>(got) / rate > opt.max_seconds)
    return TooLong(name, static_cast<double>(got) / rate, !length_known, opt);
  if (out->samples.empty()) {
    if (start > 0) {
      return Status::InvalidArgument(name + ": offset " + Seconds(opt.offset_seconds) +
                                     " is at or beyond the end of the audio");
    }
    return Status::InvalidArgument(name + ": audio has no samples (zero length)");
  }
  return Status::OK();
}

}  // namespace

Status DecodeFile(const std::string& path, const DecodeOptions& opt, DecodedAudio* out) {
  out->bytes_read = 0;
  // A missing file is NotFound and a permission problem an InvalidArgument (this input cannot be
  // used), both with errno's reason, as is a FIFO or device (refused, never waited on). Any other
  // failure is an IOError: the machine's fault, not the input's, so shardify stops instead of
  // rejecting an item an undisturbed run would keep.
  int fd = -1, err = 0;
  struct stat st;
  const Status open = sysio::OpenRegular(path, O_RDONLY | O_CLOEXEC, &fd, &st, &err);
  if (!open.ok()) {
    if (err == 0) return open;  // not a regular file, or fstat failed
    std::string msg = path + ": cannot open: " + std::strerror(err);
    if (err == ENOENT || err == ENOTDIR) return Status::NotFound(std::move(msg));
    if (err == EACCES || err == EPERM || err == ELOOP || err == EISDIR)
      return Status::InvalidArgument(std::move(msg));
    return Status::IOError(std::move(msg));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } fd_closer{fd};
  if (st.st_size == 0) return Status::InvalidArgument(path + ": file is empty (zero length)");
  // libsndfile reads through our calls (sysio, the fault seam) and only what it asks for: the
  // header, then the span from a seek. Reading the whole file first made a segment of a long
  // recording cost the recording. A read error is kept by the reader and returned before any
  // verdict on the bytes: libsndfile would take a failing disk for a short file.
  // Scratch per thread: shardify's workers decode one clip at a time each.
  thread_local std::vector<char> window;
  internal::FdReader reader;
  reader.fd = fd;
  reader.path = &path;
  reader.size = static_cast<sf_count_t>(st.st_size);
  reader.buffer = &window;
  // The header's bytes are fetched here, outside the lock OpenSndfile holds around the open.
  char first;
  if (!reader.ReadAt(0, 1, &first)) return reader.error;
  SF_INFO info{};
  internal::OpenFailure failure;
  SndfileCloser sf{internal::OpenSndfile(
      [&] { return sf_open_virtual(internal::FdReaderIo(), SFM_READ, &info, &reader); }, &failure)};
  SLUICE_RETURN_IF_ERROR(reader.error);
  if (sf.sf == nullptr)
    return Status::Corruption(path + ": not a readable audio file: " + failure.reason);
  const internal::WavLength wav = internal::WavFrames(
      [&reader](uint64_t offset, size_t n, void* dst) {
        return reader.ReadAt(static_cast<sf_count_t>(offset), static_cast<sf_count_t>(n), dst);
      },
      static_cast<uint64_t>(st.st_size));
  SLUICE_RETURN_IF_ERROR(reader.error);
  const Status decoded = ReadOpened(sf.sf, info, path, wav, opt, out);
  out->bytes_read = reader.bytes_read;
  SLUICE_RETURN_IF_ERROR(reader.error);
  return decoded;
}

Status DecodeMemory(const void* data, size_t size, const std::string& name,
                    const DecodeOptions& opt, DecodedAudio* out) {
  if (size == 0) return Status::InvalidArgument(name + ": audio buffer is empty (zero length)");
  internal::MemoryReader reader{static_cast<const uint8_t*>(data), static_cast<sf_count_t>(size),
                                0};
  SF_INFO info{};
  internal::OpenFailure failure;
  SndfileCloser sf{internal::OpenSndfile(
      [&] { return sf_open_virtual(internal::MemoryReaderIo(), SFM_READ, &info, &reader); },
      &failure)};
  if (sf.sf == nullptr)
    return Status::Corruption(name + ": not a readable audio file: " + failure.reason);
  const internal::WavLength wav = internal::WavFrames(
      [data, size](uint64_t offset, size_t n, void* dst) {
        if (offset > size || n > size - offset) return false;
        std::memcpy(dst, static_cast<const uint8_t*>(data) + offset, n);
        return true;
      },
      size);
  return ReadOpened(sf.sf, info, name, wav, opt, out);
}

bool AllFinite(const float* samples, size_t n) {
  // Integer test on the exponent bits (all ones = NaN or Inf): an OR reduction the compiler
  // vectorises, where a float comparison loop with an early exit would not.
  uint32_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, samples + i, sizeof(bits));
    bad |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}

}  // namespace sluice::features
