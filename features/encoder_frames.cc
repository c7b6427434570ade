#include "features/encoder_frames.h"

#include <algorithm>
#include <cstdint>

#include "base/conv_length.h"
#include "features/frames.h"

namespace sluice::features {
namespace {

using Kind = EncoderStage::Kind;

EncoderStage Conv(int kernel, int stride, int padding) {
  return {Kind::kConv, kernel, stride, padding, /*dilation=*/1, /*pad_end=*/false};
}
EncoderStage Stack(int frames, bool pad_end) {
  return {Kind::kStack, frames, frames, /*padding=*/0, /*dilation=*/1, pad_end};
}

// Each preset's front end and stages; docs/features.md gives the source of each.
std::vector<EncoderFramesSpec> MakePresets() {
  // 25 ms windows every 10 ms at 16 kHz.
  const EncoderFrontEnd centre_dropping_last{16000, 400, 160, FrameConvention::kCenter, true};
  const EncoderFrontEnd kaldi_snip{16000, 400, 160, FrameConvention::kSnipEdges, false};
  const EncoderFrontEnd kaldi_centre{16000, 400, 160, FrameConvention::kKaldiCenter, false};
  return {
      {"whisper", centre_dropping_last, {Conv(3, 1, 1), Conv(3, 2, 1)}, 0},
      {"fastconformer", centre_dropping_last, {Conv(3, 2, 1), Conv(3, 2, 1), Conv(3, 2, 1)}, 0},
      {"canary", centre_dropping_last, {Conv(3, 2, 1), Conv(3, 2, 1), Conv(3, 2, 1)}, 0},
      {"conformer", kaldi_centre, {Conv(3, 2, 0), Conv(3, 2, 0)}, 0},
      {"zipformer", kaldi_centre, {Conv(3, 1, 0), Conv(3, 2, 0), Conv(3, 1, 0), Stack(2, true)}, 0},
      {"sluice", kaldi_snip, {Conv(3, 2, 0), Conv(3, 2, 0)}, 0},
  };
}

const std::vector<EncoderFramesSpec>& Presets() {
  static const std::vector<EncoderFramesSpec> presets = MakePresets();
  return presets;
}

int64_t StagesOnce(const std::vector<EncoderStage>& stages, int64_t n) {
  for (const EncoderStage& s : stages) {
    // No input, no output: padding alone makes no frames (torch refuses an empty input).
    if (n == 0) return 0;
    if (s.kind == Kind::kConv) {
      n = ConvOutLength(n, s.kernel, s.stride, s.padding, s.dilation);
    } else if (s.pad_end) {
      n = (n + s.stride - 1) / s.stride;
    } else {
      n = n < s.kernel ? 0 : (n - s.kernel) / s.stride + 1;
    }
  }
  return n;
}

// Bounds that keep each stage's arithmetic far inside int64_t for kMaxEncoderSamples samples.
constexpr int kMaxStageValue = 1 << 20;
constexpr size_t kMaxStages = 1024;

Status Bad(const EncoderFramesSpec& spec, const std::string& field, const std::string& why) {
  return Status::InvalidArgument("encoder frames spec " + spec.name + ": " + field + " " + why);
}

}  // namespace

Status ValidateEncoderFramesSpec(const EncoderFramesSpec& spec) {
  const EncoderFrontEnd& f = spec.front_end;
  if (f.sample_rate < 1) return Bad(spec, "sample_rate", "must be >= 1 Hz");
  if (f.frame_length < 1) return Bad(spec, "frame_length", "must be >= 1 sample");
  if (f.frame_shift < 1) return Bad(spec, "frame_shift", "must be >= 1 sample");
  if (spec.chunk_frames < 0) return Bad(spec, "chunk_frames", "must be >= 0 (0: no chunking)");
  if (spec.stages.size() > kMaxStages)
    return Bad(spec, "stages", "has more than " + std::to_string(kMaxStages) + " stages");
  for (size_t i = 0; i < spec.stages.size(); ++i) {
    const EncoderStage& s = spec.stages[i];
    const std::string at = "stages[" + std::to_string(i) + "].";
    const std::string range = " and <= " + std::to_string(kMaxStageValue);
    if (s.kernel < 1 || s.kernel > kMaxStageValue)
      return Bad(spec, at + "kernel", "must be >= 1" + range);
    if (s.stride < 1 || s.stride > kMaxStageValue)
      return Bad(spec, at + "stride", "must be >= 1" + range);
    if (s.padding < 0 || s.padding > kMaxStageValue)
      return Bad(spec, at + "padding", "must be >= 0" + range);
    if (s.dilation < 1 || s.dilation > kMaxStageValue)
      return Bad(spec, at + "dilation", "must be >= 1" + range);
  }
  return Status::OK();
}

int64_t FrontEndFrames(const EncoderFramesSpec& spec, int64_t samples) {
  const EncoderFrontEnd& f = spec.front_end;
  const int64_t frames = NumFrames(std::clamp<int64_t>(samples, 0, kMaxEncoderSamples),
                                   f.frame_length, f.frame_shift, f.convention);
  return f.drop_last_frame ? std::max<int64_t>(frames - 1, 0) : frames;
}

int64_t StageFrames(const EncoderFramesSpec& spec, int64_t frames) {
  frames = std::clamp<int64_t>(frames, 0, kMaxEncoderSamples);
  if (spec.chunk_frames <= 0) return StagesOnce(spec.stages, frames);
  const int64_t whole = frames / spec.chunk_frames;
  const int64_t rest = frames % spec.chunk_frames;
  // Padding can make a chunk's output longer than the chunk; only a spec no encoder has (tiny
  // chunks, huge padding) goes past int64_t, and is counted as INT64_MAX.
  int64_t total = 0;
  if (__builtin_mul_overflow(whole, StagesOnce(spec.stages, spec.chunk_frames), &total) ||
      __builtin_add_overflow(total, StagesOnce(spec.stages, rest), &total))
    return INT64_MAX;
  return total;
}

int64_t EncoderFrames(const EncoderFramesSpec& spec, int64_t samples) {
  return StageFrames(spec, FrontEndFrames(spec, samples));
}

const std::vector<std::string>& EncoderFramesPresetNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const EncoderFramesSpec& p : Presets()) v.push_back(p.name);
    return v;
  }();
  return names;
}

Status EncoderFramesPreset(std::string_view name, EncoderFramesSpec* spec) {
  for (const EncoderFramesSpec& p : Presets()) {
    if (p.name == name) {
      *spec = p;
      return Status::OK();
    }
  }
  std::string known;
  for (const std::string& n : EncoderFramesPresetNames()) known += (known.empty() ? "" : ", ") + n;
  return Status::NotFound("encoder frames: no preset named \"" + std::string(name) +
                          "\" (presets: " + known + "; or give a JSON spec file)");
}

}  // namespace sluice::features
