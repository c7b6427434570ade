#include "features/codec_degrade.h"

#include <sndfile.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "base/random.h"
#include "features/sndfile_io.h"

namespace sluice::features {
namespace {

constexpr std::array<std::pair<const char*, Codec>, 6> kCodecs = {{
    {"ulaw", Codec::kUlaw},
    {"alaw", Codec::kAlaw},
    {"gsm", Codec::kGsm},
    {"vorbis", Codec::kVorbis},
    {"opus", Codec::kOpus},
    {"mp3", Codec::kMp3},
}};

int SndfileFormat(Codec codec) {
  switch (codec) {
    case Codec::kUlaw: return SF_FORMAT_WAV | SF_FORMAT_ULAW;
    case Codec::kAlaw: return SF_FORMAT_WAV | SF_FORMAT_ALAW;
    case Codec::kGsm: return SF_FORMAT_WAV | SF_FORMAT_GSM610;
    case Codec::kVorbis: return SF_FORMAT_OGG | SF_FORMAT_VORBIS;
    case Codec::kOpus: return SF_FORMAT_OGG | SF_FORMAT_OPUS;
    case Codec::kMp3: return SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III;
  }
  return 0;
}

// sf_open_virtual holding sndfile_io's process-wide open lock shared. That lock only keeps a
// failed open's reason (libsndfile's one global error, which every open writes) from being another
// thread's; a round trip opens twice (Vorbis' decoder setup alone takes about 0.65 ms), so holding
// it exclusively would queue every thread's codec step behind every other's opens. Shared, the
// round trips open together and never during an exclusive open, whose failure reason they would
// overwrite. A failed open is made again exclusively (`reset` first rewinds what it reads or
// writes): the stream is in memory, so it fails the same way there and the reason is its own.
template <class Open, class Reset>
SNDFILE* OpenShared(Open open, Reset reset, internal::OpenFailure* failure) {
  {
    std::shared_lock<std::shared_mutex> lock(internal::OpenLock());
    if (SNDFILE* sf = open(); sf != nullptr) return sf;
  }
  reset();
  return internal::OpenSndfile(std::move(open), failure);
}

// LAME, libsndfile's MP3 encoder, keeps process-wide tables that every encoder fills again as it
// starts (in lame_init at the open, and lame_init_params at libsndfile's first write) while every
// running encoder reads them (lame_encode_buffer_ieee_float): helgrind reports those races as soon
// as two MP3 encodes overlap. So MP3 encodes run one at a time, open to close, under a lock of
// their own: the open lock would make loader threads' opens wait for whole encodes. mpg123's
// decoder showed no race and runs unlocked.
std::mutex& LameLock() {
  static std::mutex mu;
  return mu;
}

}  // namespace

Status ParseCodec(const std::string& name, Codec* codec) {
  std::string known;
  for (const auto& [n, c] : kCodecs) {
    if (name == n) {
      *codec = c;
      return Status::OK();
    }
    known += known.empty() ? n : std::string(", ") + n;
  }
  return Status::InvalidArgument("codec degradation: unknown codec '" + name +
                                 "' (known: " + known + ")");
}

const char* CodecName(Codec codec) {
  for (const auto& [n, c] : kCodecs) {
    if (c == codec) return n;
  }
  return "?";
}

CodecDraw DrawCodec(const CodecOptions& opt, uint64_t key) {
  Rng rng(key);
  CodecDraw d;
  d.apply = rng.Uniform() < opt.probability && !opt.codecs.empty();
  if (!opt.codecs.empty()) {
    d.codec = static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(opt.codecs.size()) - 1));
  }
  d.compression = opt.min_compression + (opt.max_compression - opt.min_compression) * rng.Uniform();
  return d;
}

Status CodecRoundTrip(float* x, size_t n, int sample_rate, Codec codec, double compression,
                      std::vector<uint8_t>* bytes) {
  if (n == 0) return Status::OK();
  const std::string what = std::string("codec degradation (") + CodecName(codec) + ", " +
                           std::to_string(sample_rate) + " Hz)";
  bytes->clear();
  internal::VectorWriter writer{bytes, 0};
  SF_INFO info{};
  info.samplerate = sample_rate;
  info.channels = 1;
  info.format = SndfileFormat(codec);
  if (!sf_format_check(&info)) {
    return Status::Unsupported(what +
                               ": libsndfile cannot write this codec at this rate; hint: "
                               "leave it out of --codecs");
  }
  // sf_format_check passes Opus at any rate and the open then fails; refused here, with the
  // rates it takes, rather than by two failing opens (shared, then exclusive: below) that each
  // write libsndfile's global error.
  if (codec == Codec::kOpus && sample_rate != 8000 && sample_rate != 12000 &&
      sample_rate != 16000 && sample_rate != 24000 && sample_rate != 48000) {
    return Status::Unsupported(what +
                               ": libsndfile's Opus takes 8, 12, 16, 24 or 48 kHz; hint: leave "
                               "opus out of --codecs for this data, or resample it to one of them");
  }
  // Both opens hold sndfile_io's open lock shared (OpenShared, above): never during another
  // thread's exclusive open, whose failure reason they would wipe out
  // (ARoundTripLeavesAnotherThreadsOpenFailureAlone).
  std::unique_lock<std::mutex> lame;
  if (codec == Codec::kMp3) lame = std::unique_lock<std::mutex>(LameLock());
  internal::OpenFailure failure;
  SNDFILE* sf = OpenShared(
      [&] { return sf_open_virtual(internal::VectorWriterIo(), SFM_WRITE, &info, &writer); },
      [&] {
        bytes->clear();
        writer.pos = 0;
      },
      &failure);
  if (sf == nullptr) {
    return Status::Unsupported(what + ": cannot start the encoder: " + failure.reason +
                               "; hint: leave it out of --codecs");
  }
  // Clipped here, not left to libsndfile: sf_writef_float crashed on samples of 1000 (a
  // segmentation fault inside libsndfile 1.2.0; SFC_SET_CLIPPING did not prevent it).
  for (size_t i = 0; i < n; ++i) x[i] = std::clamp(x[i], -1.0f, 1.0f);
  double level = std::clamp(compression, 0.0, 1.0);
  // Codecs without a compression level (G.711, GSM) refuse the command; that is no error.
  sf_command(sf, SFC_SET_COMPRESSION_LEVEL, &level, sizeof(level));
  const auto frames = static_cast<sf_count_t>(n);
  const bool written = sf_writef_float(sf, x, frames) == frames;
  const std::string write_error = written ? "" : sf_strerror(sf);
  const int close_error = sf_close(sf);
  if (lame.owns_lock()) lame.unlock();
  if (!written) return Status::IOError(what + ": encoding failed: " + write_error);
  if (close_error != 0) {
    return Status::IOError(what + ": finishing the stream failed: " + sf_error_number(close_error));
  }

  internal::MemoryReader reader{bytes->data(), static_cast<sf_count_t>(bytes->size()), 0};
  SF_INFO in_info{};
  sf = OpenShared(
      [&] { return sf_open_virtual(internal::MemoryReaderIo(), SFM_READ, &in_info, &reader); },
      [&] {
        reader.pos = 0;
        in_info = SF_INFO{};
      },
      &failure);
  if (sf == nullptr) {
    return Status::IOError(what + ": cannot decode what it encoded: " + failure.reason);
  }
  if (in_info.channels != 1) {
    sf_close(sf);
    return Status::IOError(what + ": decoded " + std::to_string(in_info.channels) +
                           " channels from a mono stream");
  }
  const sf_count_t got = sf_readf_float(sf, x, frames);
  sf_close(sf);
  std::fill(x + std::max<sf_count_t>(got, 0), x + n, 0.0f);
  return Status::OK();
}

}  // namespace sluice::features
