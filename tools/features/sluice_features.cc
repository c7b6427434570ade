// sluice-features: features of one audio file as a NumPy .npy [frames, bins] float32, to inspect
// them or compare with another toolkit. Options use Kaldi's names and units (compute-fbank-feats),
// the same flags and defaults as shardify, sluice-bench and sluice-train (tools/common).
//
//   sluice-features speech.flac --features fbank --num-mel-bins 80 -o feats.npy
//   python3 -c "import numpy; print(numpy.load('feats.npy').shape)"
//
// and, without audio, the encoder frames (speech-LLM tokens) a clip of n samples becomes
// (features/encoder_frames.h), one "n frames" line per count:
//
//   sluice-features encoder-frames --encoder-frames fastconformer 16000 480000
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/file.h"
#include "base/random.h"
#include "feature_options.h"
#include "features/audio.h"
#include "features/encoder_frames.h"
#include "features/fbank.h"
#include "features/resample.h"
#include "features/spectrogram.h"
#include "options_cli.h"

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
  const unsigned char preamble[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  const uint16_t len = static_cast<uint16_t>(header.size());
  const unsigned char len_le[2] = {static_cast<unsigned char>(len & 0xff),
                                   static_cast<unsigned char>(len >> 8)};
  // Written to OUT.npy.tmp through the file seam (base/sysio.h: its faults are injectable) and
  // renamed only when complete, so a failed run never leaves a truncated OUT.npy.
  const std::string tmp = path + ".tmp";
  std::unique_ptr<sluice::WritableFile> f;
  SLUICE_RETURN_IF_ERROR(sluice::WritableFile::Create(tmp, &f));
  // float32 data is written as is: every target of this project is little-endian.
  const size_t bytes = static_cast<size_t>(rows * cols) * sizeof(float);
  Status st = f->Append({reinterpret_cast<const char*>(preamble), 8});
  if (st.ok()) st = f->Append({reinterpret_cast<const char*>(len_le), 2});
  if (st.ok()) st = f->Append(header);
  if (st.ok()) st = f->Append({reinterpret_cast<const char*>(data), bytes});
  if (st.ok()) st = f->Close();
  if (st.ok()) st = sluice::RenameDurable(tmp, path);
  if (!st.ok()) std::remove(tmp.c_str());
  return st;
}

int Fail(const Status& s) {
  std::fprintf(stderr, "sluice-features: %s\n", s.ToString().c_str());
  return 1;
}

// `encoder-frames`: prints "<count> <encoder frames>" per count given, or for every count
// 0..up_to; counts are samples, or the stages' input frames with `stages_only`.
int PrintEncoderFrames(const feat::EncoderFramesOptions& options, std::vector<int64_t> counts,
                       int64_t up_to, bool stages_only) {
  if (options.encoder_frames.empty()) {
    return Fail(Status::InvalidArgument(
        "encoder-frames: --encoder-frames is required (a preset or a JSON spec file)"));
  }
  feat::EncoderFramesSpec spec;
  const Status s = feat::ResolveEncoderFramesSpec(options.encoder_frames, &spec);
  if (!s.ok()) return Fail(s);
  for (int64_t n = 0; n <= up_to; ++n) counts.push_back(n);
  for (const int64_t n : counts) {
    const int64_t frames = stages_only ? feat::StageFrames(spec, n) : feat::EncoderFrames(spec, n);
    std::printf("%lld %lld\n", static_cast<long long>(n), static_cast<long long>(frames));
  }
  return 0;
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
  uint64_t seed = 0;
  sluice::tools::FeatureArgs fa;  // the flags every tool shares (tools/common/feature_options.h)

  app.add_option("input", input, "audio file (WAV, FLAC, Ogg, Opus, MP3, ...)");
  app.add_option("-o,--output", output, "output .npy file");
  app.add_option("--features", kind, "fbank or spectrogram")
      ->check(CLI::IsMember({"fbank", "spectrogram"}));
  app.add_option("--offset", offset, "start reading at this time (s)");
  app.add_option("--duration", duration, "read this long (s); < 0 reads to the end");
  app.add_option(
      "--sample-frequency", sample_frequency,
      "resample the input to this rate (Hz); default 16000 for fbank, 8000 for spectrogram");
  app.add_option("--seed", seed, "fbank: dither seed")->capture_default_str();
  sluice::tools::AddFeatureOptions(&app, &fa);

  CLI::App* frames_cmd = app.add_subcommand(
      "encoder-frames",
      "Prints the encoder frames (speech-LLM tokens) of clips of the given lengths in samples,\n"
      "one \"samples frames\" line each (docs/features.md, \"Encoder frames\")");
  feat::EncoderFramesOptions frames_options;
  std::vector<int64_t> counts;
  int64_t up_to = -1;
  bool stages_only = false;
  sluice::tools::AddOptions(frames_cmd, &frames_options,
                            [](const sluice::FieldInfo&) { return true; });
  frames_cmd->add_option("counts", counts, "lengths in samples")->check(CLI::NonNegativeNumber);
  frames_cmd->add_option("--up-to", up_to, "also every length 0..N")->check(CLI::NonNegativeNumber);
  frames_cmd->add_flag("--stages-only", stages_only,
                       "counts are the stages' input frames (feature frames), not samples");
  try {
    app.parse(argc, argv);
    if (!frames_cmd->parsed() && input.empty()) throw CLI::RequiredError("input");
    if (!frames_cmd->parsed() && output.empty()) throw CLI::RequiredError("--output");
  } catch (const CLI::ParseError& e) {
    return sluice::tools::CommandLineExit(app, e);
  }
  if (frames_cmd->parsed()) return PrintEncoderFrames(frames_options, counts, up_to, stages_only);

  const bool fbank = kind == "fbank";
  const int rate = sample_frequency > 0 ? static_cast<int>(std::lround(sample_frequency))
                                        : (fbank ? 16000 : 8000);
  fa.kind = kind;
  sluice::tools::FeatureConfig config;
  Status s = sluice::tools::MakeFeatureConfig(fa, rate, &config);
  if (!s.ok()) return Fail(s);
  feat::DecodedAudio audio;
  s = feat::DecodeFile(input, {offset, duration}, &audio);
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
    const feat::FbankComputer computer(config.fbank);
    for (float& x : samples) x *= 32768.0f;  // Kaldi's int16 scale
    frames =
        computer.Compute(samples.data(), samples.size(), &ws, &out, sluice::StreamKey(seed, 0, 0));
    dim = computer.Dim();
  } else {
    const feat::SpectrogramComputer computer(config.spectrogram);
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
