// Encoder frame counts: the sluice preset against the trainer's own length function, the JSON
// form's errors, and the arithmetic at sizes where a float would round. The counts of every
// preset against independent formulae and PyTorch are encoder_frames_check.py's.
#include "features/encoder_frames.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include "assert_ok.h"
#include "base/file.h"
#include "features/fbank.h"
#include "reference/conv2d.h"

namespace sluice::features {
namespace {

// The budget of the sluice preset must be what sluice-train computes: the default filterbank's
// frames through the model's SubsampledLength.
TEST(EncoderFramesTest, SluicePresetIsTheTrainersSubsampledLengthOfTheDefaultFbank) {
  EncoderFramesSpec spec;
  ASSERT_OK(EncoderFramesPreset("sluice", &spec));
  const FbankComputer fbank(FbankOptions{});
  for (int64_t n = 0; n <= 40000; ++n) {
    const int expected = reference::SubsampledLength(static_cast<int>(fbank.NumFrames(n)));
    ASSERT_EQ(EncoderFrames(spec, n), expected) << n << " samples";
  }
}

TEST(EncoderFramesTest, DayLongClipsCountExactly) {
  EncoderFramesSpec spec;
  ASSERT_OK(EncoderFramesPreset("fastconformer", &spec));
  // 2^40 samples: 6871947673 frames of 10 ms, then three ceil-halvings (a float loses the +1s).
  const int64_t n = int64_t{1} << 40;
  int64_t t = n / 160;
  for (int i = 0; i < 3; ++i) t = (t - 1) / 2 + 1;
  EXPECT_EQ(EncoderFrames(spec, n), t);
  EXPECT_EQ(EncoderFrames(spec, -5), 0);
  // Longer than kMaxEncoderSamples counts as that long, never as an overflowed product.
  EXPECT_EQ(EncoderFrames(spec, INT64_MAX), t);
}

TEST(EncoderFramesTest, PaddingMakesNoFramesFromNothingAndHugeValuesAreRefused) {
  EncoderFramesSpec spec;
  spec.name = "padded";
  spec.stages = {{EncoderStage::Kind::kConv, 1, 1, 4, 1, false}};  // 1 frame in, 9 out
  spec.chunk_frames = 1;
  ASSERT_OK(ValidateEncoderFramesSpec(spec));
  EXPECT_EQ(StageFrames(spec, 0), 0);
  EXPECT_EQ(StageFrames(spec, 3), 27);
  spec.stages[0].padding = (1 << 20) + 1;
  const Status s = ValidateEncoderFramesSpec(spec);
  EXPECT_NE(s.message().find("encoder frames spec padded: stages[0].padding must be >= 0 and "
                             "<= 1048576"),
            std::string::npos)
      << s.ToString();
}

TEST(EncoderFramesTest, ChunksAreCountedOneByOne) {
  EncoderFramesSpec spec;
  spec.name = "chunked";
  spec.front_end.convention = FrameConvention::kSnipEdges;
  spec.stages = {{EncoderStage::Kind::kConv, 3, 2, 0, 1, false}};
  spec.chunk_frames = 10;  // 10 frames -> 4; 25 frames = 10 + 10 + 5 -> 4 + 4 + 2
  ASSERT_OK(ValidateEncoderFramesSpec(spec));
  EXPECT_EQ(StageFrames(spec, 25), 10);
  spec.chunk_frames = 0;
  EXPECT_EQ(StageFrames(spec, 25), 12);
}

TEST(EncoderFramesTest, JsonGivesMillisecondsAndEveryStageField) {
  EncoderFramesSpec spec;
  ASSERT_OK(ParseEncoderFramesSpec(
      R"({"sample_rate": 8000, "frame_length_ms": 25, "frame_shift": 80, "framing": "center",
          "drop_last_frame": true, "chunk_frames": 7,
          "stages": [{"type": "conv", "kernel": 5, "stride": 2, "padding": 1, "dilation": 2},
                     {"type": "stack", "frames": 4, "stride": 3, "pad_end": false}]})",
      "spec.json", &spec));
  EXPECT_EQ(spec.front_end.frame_length, 200);
  EXPECT_EQ(spec.front_end.frame_shift, 80);
  EXPECT_EQ(spec.front_end.convention, FrameConvention::kCenter);
  EXPECT_TRUE(spec.front_end.drop_last_frame);
  EXPECT_EQ(spec.chunk_frames, 7);
  ASSERT_EQ(spec.stages.size(), 2u);
  EXPECT_EQ(spec.stages[0].dilation, 2);
  EXPECT_EQ(spec.stages[1].kind, EncoderStage::Kind::kStack);
  EXPECT_EQ(spec.stages[1].kernel, 4);
  EXPECT_EQ(spec.stages[1].stride, 3);
  EXPECT_FALSE(spec.stages[1].pad_end);
}

// Each bad spec is refused with the file, the place and the reason; a misspelt key would
// otherwise leave a default in place and shift every budget silently.
TEST(EncoderFramesTest, BadJsonIsRefusedNamingFileAndField) {
  const struct {
    const char* json;
    const char* says;
  } cases[] = {
      {R"({"stages": [], "frame_shif": 160})", "spec.json: spec: unknown key \"frame_shif\""},
      {R"({"stages": [{"type": "conv", "kernel": 3, "strides": 2}]})",
       "stages[0]: unknown key \"strides\""},
      {R"({"stages": [{"type": "pool", "kernel": 3}]})", "stages[0].type: \"pool\" is not"},
      {R"({"stages": [{"type": "conv", "kernel": 3}]})", "needs \"kernel\" and \"stride\""},
      {R"({"stages": [{"type": "conv", "kernel": 0, "stride": 1}]})", "stages[0].kernel must"},
      {R"({"sample_rate": 22050, "frame_length_ms": 25, "stages": []})",
       "frame_length_ms: is 551.25"},
      {R"({"frame_shift": 160, "frame_shift_ms": 10, "stages": []})", "not both"},
      {R"({"framing": "snip", "stages": []})", "framing: expected center"},
      {R"({"frame_length": 400})", "stages: expected a list"},
      {R"({"stages": [], )", "not valid JSON"},
  };
  for (const auto& c : cases) {
    EncoderFramesSpec spec;
    const Status s = ParseEncoderFramesSpec(c.json, "spec.json", &spec);
    EXPECT_FALSE(s.ok()) << c.json;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("spec.json"), std::string::npos) << s.ToString();
  }
}

TEST(EncoderFramesTest, ResolveTakesPresetsAndFiles) {
  EncoderFramesSpec spec;
  ASSERT_OK(ResolveEncoderFramesSpec("whisper", &spec));
  EXPECT_EQ(EncoderFrames(spec, 30 * 16000), 1500);  // Whisper's 30 s window
  const std::string path =
      ::testing::TempDir() + "encoder_frames_" + std::to_string(::getpid()) + ".json";
  ASSERT_OK(WriteFileAtomic(path, R"({"stages": [{"type": "stack", "frames": 4}]})"));
  ASSERT_OK(ResolveEncoderFramesSpec(path, &spec));
  std::remove(path.c_str());
  EXPECT_EQ(spec.name, path);
  EXPECT_EQ(EncoderFrames(spec, 16000), 25);  // 98 snip-edge frames, stacked by 4: ceil 24.5
  const Status unknown = ResolveEncoderFramesSpec("whisperx", &spec);
  EXPECT_TRUE(unknown.IsNotFound()) << unknown.ToString();
  EXPECT_NE(unknown.message().find("presets: whisper"), std::string::npos);
  EXPECT_FALSE(ResolveEncoderFramesSpec(path, &spec).ok());
}

}  // namespace
}  // namespace sluice::features
