// sluice-features: features of one audio file as a NumPy .npy [frames, bins] float32, to inspect
// them or compare with another toolkit. Options use Kaldi's names and units (compute-fbank-feats).
//
//   sluice-features speech.flac --kind fbank --num-mel-bins 80 -o feats.npy
//   python3 -c "import numpy; print(numpy.load('feats.npy').shape)"
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "features/audio.h"
#include "features/fbank.h"
#include "features/random.h"
#include "features/resample.h"
#include "features/spectrogram.h"

namespace {

using sluice::Status;
namespace feat = sluice::features;

// NumPy format 1.0: magic, version, little-endian header length, a Python dict literal padded
// with spaces to a multiple of 64 bytes and ended by '\n', then the data (C order).
Status WriteNpy(const std::string& path, const float* data, int64_t rows, int64_t cols) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return Status::IOError(tmp + ": cannot create: " + std::strerror(errno));
  const unsigned char preamble[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  const uint16_t len = static_cast<uint16_t>(header.size());
  const unsigned char len_le[2] = {static_cast<unsigned char>(len & 0xff),
                                   static_cast<unsigned char>(len >> 8)};
  // float32 data is written as is: every target of this project is little-endian.
  const size_t count = static_cast<size_t>(rows * cols);
  bool ok = std::fwrite(preamble, 1, 8, f) == 8 && std::fwrite(len_le, 1, 2, f) == 2 &&
            std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            std::fwrite(data, sizeof(float), count, f) == count;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    return Status::IOError(tmp + ": write failed: " + std::strerror(errno));
  }
  // Renamed only when complete, so a failed run never leaves a truncated OUT.npy.
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::IOError(path + ": cannot rename into place: " + std::strerror(errno));
  }
  return Status::OK();
}

int Fail(const Status& s) {
  std::fprintf(stderr, "sluice-features: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Computes features of one audio file and writes a NumPy .npy [frames, bins] float32.\n"
      "Options use Kaldi's names and units. fbank: Kaldi's compute-fbank-feats (input in the\n"
      "int16 range, as Kaldi). spectrogram: DeepSpeech2's log(1 + |STFT|), per-utterance\n"
      "normalised (input in [-1, 1]). docs/features.md describes both.",
      "sluice-features"};
  std::string input, output, kind = "fbank";
  double offset = 0, duration = -1;
  double sample_frequency = 0;
  feat::FbankOptions fb;
  std::string window_type;
  uint64_t seed = 0;
  bool normalize = true;
  int n_fft = 0;
  float frame_length = -1, frame_shift = -1;

  app.add_option("input", input, "audio file (WAV, FLAC, Ogg, Opus, MP3, ...)")->required();
  app.add_option("-o,--output", output, "output .npy file")->required();
  app.add_option("--kind", kind, "fbank or spectrogram")
      ->check(CLI::IsMember({"fbank", "spectrogram"}));
  app.add_option("--offset", offset, "start reading at this time (s)");
  app.add_option("--duration", duration, "read this long (s); < 0 reads to the end");
  app.add_option("--sample-frequency", sample_frequency,
                 "resample the input to this rate (Hz); default 16000 for fbank, 8000 for spectrogram");
  app.add_option("--frame-length", frame_length, "window length (ms); default 25 (fbank), 20 (spectrogram)");
  app.add_option("--frame-shift", frame_shift, "hop between frames (ms); default 10");
  app.add_option("--window-type", window_type,
                 "povey, hamming, hanning, rectangular, blackman, sine (fbank; default povey); "
                 "hamming, hanning, rectangular (spectrogram, periodic; default hamming)");
  app.add_option("--snip-edges", fb.snip_edges,
                 "true: whole frames only; false: fbank mirrors the edges as Kaldi, spectrogram "
                 "reflect-pads as torch.stft center=True (spectrogram default false)");
  app.add_option("--num-mel-bins", fb.num_mel_bins, "fbank: mel bins")->capture_default_str();
  app.add_option("--dither", fb.dither, "fbank: dither noise std (int16 units); 0 = off")
      ->capture_default_str();
  app.add_option("--seed", seed, "fbank: dither seed")->capture_default_str();
  app.add_option("--preemphasis-coefficient", fb.preemphasis_coefficient, "fbank")
      ->capture_default_str();
  app.add_option("--remove-dc-offset", fb.remove_dc_offset, "fbank: subtract each frame's mean")
      ->capture_default_str();
  app.add_option("--blackman-coeff", fb.blackman_coeff, "fbank")->capture_default_str();
  app.add_option("--round-to-power-of-two", fb.round_to_power_of_two,
                 "fbank: zero-pad frames to a power of two for the FFT")->capture_default_str();
  app.add_option("--low-freq", fb.low_freq, "fbank: low edge of the mel bins (Hz)")
      ->capture_default_str();
  app.add_option("--high-freq", fb.high_freq,
                 "fbank: high edge (Hz); <= 0 is an offset from Nyquist")->capture_default_str();
  app.add_option("--use-energy", fb.use_energy, "fbank: add a log-energy column")
      ->capture_default_str();
  app.add_option("--raw-energy", fb.raw_energy, "fbank: energy before preemphasis and window")
      ->capture_default_str();
  app.add_option("--energy-floor", fb.energy_floor, "fbank: floor on the energy (linear)")
      ->capture_default_str();
  app.add_option("--htk-compat", fb.htk_compat, "fbank: energy column last")->capture_default_str();
  app.add_option("--use-power", fb.use_power, "fbank: power (true) or magnitude spectrum")
      ->capture_default_str();
  app.add_option("--use-log-fbank", fb.use_log_fbank, "fbank: log of the mel energies")
      ->capture_default_str();
  app.add_option("--normalize", normalize, "spectrogram: per-utterance mean/std normalisation")
      ->capture_default_str();
  app.add_option("--n-fft", n_fft, "spectrogram: FFT size (samples); 0 = the window length");
  bool snip_given = false;
  try {
    app.parse(argc, argv);
    snip_given = app.count("--snip-edges") > 0;
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  const bool fbank = kind == "fbank";
  const int rate = sample_frequency > 0 ? static_cast<int>(std::lround(sample_frequency))
                                        : (fbank ? 16000 : 8000);
  feat::DecodedAudio audio;
  Status s = feat::DecodeFile(input, {offset, duration}, &audio);
  if (!s.ok()) return Fail(s);
  if (!feat::AllFinite(audio.samples.data(), audio.samples.size())) {
    return Fail(Status::Corruption(input + ": audio contains NaN or infinite samples"));
  }
  std::vector<float> samples;
  s = feat::Resample(audio.samples.data(), audio.samples.size(), audio.sample_rate, rate, &samples);
  if (!s.ok()) return Fail(Status(s));

  std::vector<float> out;
  feat::Workspace ws;
  int dim = 0;
  int64_t frames = 0;
  if (fbank) {
    fb.sample_frequency = static_cast<float>(rate);
    if (frame_length > 0) fb.frame_length_ms = frame_length;
    if (frame_shift > 0) fb.frame_shift_ms = frame_shift;
    if (!window_type.empty() && !feat::ParseWindowType(window_type, &fb.window_type)) {
      return Fail(Status::InvalidArgument("unknown --window-type '" + window_type + "'"));
    }
    s = feat::FbankComputer::Validate(fb);
    if (!s.ok()) return Fail(s);
    const feat::FbankComputer computer(fb);
    for (float& x : samples) x *= 32768.0f;  // Kaldi's int16 scale
    frames = computer.Compute(samples.data(), samples.size(), &ws, &out, feat::StreamKey(seed, 0, 0));
    dim = computer.Dim();
  } else {
    feat::SpectrogramOptions so;
    so.sample_rate = rate;
    if (frame_length > 0) so.window_ms = frame_length;
    if (frame_shift > 0) so.hop_ms = frame_shift;
    so.n_fft = n_fft;
    so.normalize = normalize;
    so.frames = snip_given && fb.snip_edges ? feat::FrameConvention::kSnipEdges
                                            : feat::FrameConvention::kCenter;
    if (!window_type.empty() && !feat::ParseWindowType(window_type, &so.window)) {
      return Fail(Status::InvalidArgument("unknown --window-type '" + window_type + "'"));
    }
    s = feat::SpectrogramComputer::Validate(so);
    if (!s.ok()) return Fail(s);
    const feat::SpectrogramComputer computer(so);
    frames = computer.Compute(samples.data(), samples.size(), &ws, &out);
    dim = computer.Dim();
  }
  if (frames == 0) {
    return Fail(Status::InvalidArgument(input + ": too short for one frame (" +
                                        std::to_string(samples.size()) + " samples at " +
                                        std::to_string(rate) + " Hz)"));
  }
  s = WriteNpy(output, out.data(), frames, dim);
  if (!s.ok()) return Fail(s);
  std::fprintf(stderr, "sluice-features: %s: %lld frames x %d %s -> %s\n", input.c_str(),
               static_cast<long long>(frames), dim, kind.c_str(), output.c_str());
  return 0;
}
