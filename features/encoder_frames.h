// How many encoder output frames (speech-LLM tokens) an audio clip of n samples becomes, exactly,
// from a declared front end and subsampling stack (docs/features.md, "Encoder frames"):
//
//   EncoderFramesSpec spec;
//   SLUICE_RETURN_IF_ERROR(ResolveEncoderFramesSpec("fastconformer", &spec));  // or a JSON file
//   int64_t tokens = EncoderFrames(spec, samples);
//
// Integer arithmetic only: a budget planned from the index must equal what the model computes,
// for every length, so no floating point rounds a boundary case the other way.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/fields.h"
#include "base/status.h"
#include "features/frame_convention.h"

namespace sluice::features {

// The feature frames the encoder reads: frames.h's arithmetic over the samples.
struct EncoderFrontEnd {
  int sample_rate = 16000;  // Hz; only to turn milliseconds into samples when parsing
  int frame_length = 400;   // samples (the STFT's n_fft for kCenter: the count ignores it)
  int frame_shift = 160;    // samples
  FrameConvention convention = FrameConvention::kSnipEdges;
  // The last frame is not counted: Whisper's stft[..., :-1] and NeMo's get_seq_len (n / hop
  // valid frames of a centred STFT's 1 + n / hop).
  bool drop_last_frame = false;
};

struct EncoderStage {
  enum class Kind {
    kConv,   // torch.nn.Conv1d/Conv2d along time: ConvOutLength (base/conv_length.h); 0 frames
             // in give 0 out whatever the padding
    kStack,  // `kernel` frames every `stride` stacked into one (frame stacking, LFR, downsampling)
  };
  Kind kind = Kind::kConv;
  int kernel = 3;    // frames the stage reads per output frame
  int stride = 1;    // frames between output frames
  int padding = 0;   // kConv: frames of zeros on each side
  int dilation = 1;  // kConv
  // kStack: one output per stride start inside the input, ceil(n / stride), the missing frames
  // padded (NeMo's StackingSubsampling, Zipformer's output downsampling, Paraformer's LFR);
  // false: only whole windows, n < kernel ? 0 : (n - kernel) / stride + 1.
  bool pad_end = true;
};

struct EncoderFramesSpec {
  std::string name;  // the preset's or the file's, for messages
  EncoderFrontEnd front_end;
  std::vector<EncoderStage> stages;  // applied in order
  // > 0: a chunked encoder. The front end's frames are cut into chunks of this many (the last
  // one shorter) and the stages run on each chunk alone; the count is the sum over chunks.
  int64_t chunk_frames = 0;
};

// An InvalidArgument naming the spec and the field if a value is out of range.
Status ValidateEncoderFramesSpec(const EncoderFramesSpec& spec);

// The longest input counted: 2^40 samples (two years at 16 kHz); a longer one is counted as
// this long, which keeps every stage's arithmetic inside int64_t.
inline constexpr int64_t kMaxEncoderSamples = int64_t{1} << 40;

// Encoder frames for 0 <= `samples` <= kMaxEncoderSamples samples (a negative count is taken as
// 0) of a valid spec (ValidateEncoderFramesSpec: stage values up to 2^20, up to 1024 stages).
int64_t EncoderFrames(const EncoderFramesSpec& spec, int64_t samples);
// The front end's frames alone, and the stages' output (chunking included) for `frames` input
// frames: EncoderFrames(s, n) == StageFrames(s, FrontEndFrames(s, n)).
int64_t FrontEndFrames(const EncoderFramesSpec& spec, int64_t samples);
int64_t StageFrames(const EncoderFramesSpec& spec, int64_t frames);

// Presets (their sources are in docs/features.md): "whisper", "fastconformer" (also "canary"),
// "conformer", "zipformer", "sluice" (sluice-train's model over the default filterbank).
const std::vector<std::string>& EncoderFramesPresetNames();
// NotFound naming the known presets for another name.
Status EncoderFramesPreset(std::string_view name, EncoderFramesSpec* spec);

// A spec from JSON text (docs/features.md gives the keys); `name` (the file) is in every error,
// unknown keys are refused.
Status ParseEncoderFramesSpec(std::string_view json, const std::string& name,
                              EncoderFramesSpec* spec);
// The spec as canonical JSON (sorted keys, samples, every value spelt out, no name): equal for
// specs that count alike however they were given (a preset, a file), for run records.
std::string CanonicalEncoderFramesSpec(const EncoderFramesSpec& spec);
// A preset name, else a path to a JSON file read through base/sysio.
Status ResolveEncoderFramesSpec(const std::string& preset_or_path, EncoderFramesSpec* spec);

// The option that names the spec; the loader resolves it once (ResolveEncoderFramesSpec).
struct EncoderFramesOptions {
  std::string encoder_frames;  // preset name or JSON file; empty: none
};

template <OptionsOf<EncoderFramesOptions> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"encoder_frames", "--encoder-frames",
              "encoder frames per audio clip: a preset (whisper, fastconformer, canary, "
              "conformer, zipformer, sluice) or a JSON spec file (docs/features.md)"},
    o.encoder_frames);
}

}  // namespace sluice::features
