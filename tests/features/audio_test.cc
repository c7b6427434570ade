// Decode, resample, PCM conversion and FLAC: the features/ entry points shardify uses.
#include <sndfile.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numbers>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "../testing/test_util.h"  // tests/features has a test_util.h of its own
#include "assert_ok.h"
#include "base/sysio.h"
#include "features/audio.h"
#include "features/encode.h"
#include "features/flac.h"
#include "features/pcm.h"
#include "features/resample.h"
#include "fuzz_regression.h"

namespace sluice::features {
namespace {

namespace fs = std::filesystem;

class AudioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("sluice_audio_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes interleaved int16 frames with libsndfile in the given container/format.
  std::string Write(const std::string& name, const std::vector<int16_t>& interleaved, int channels,
                    int rate, int format) {
    const std::string path = (dir_ / name).string();
    SF_INFO info{};
    info.samplerate = rate;
    info.channels = channels;
    info.format = format;
    SNDFILE* sf = sf_open(path.c_str(), SFM_WRITE, &info);
    EXPECT_NE(sf, nullptr) << sf_strerror(nullptr);
    if (sf == nullptr) return path;
    const sf_count_t frames = static_cast<sf_count_t>(interleaved.size() / channels);
    EXPECT_EQ(sf_writef_short(sf, interleaved.data(), frames), frames);
    sf_close(sf);
    return path;
  }

  std::string WriteBytes(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  static std::vector<char> ReadAll(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(f), {});
  }

  fs::path dir_;
};

// Deterministic int16 test signal covering the whole range, both extremes included.
std::vector<int16_t> Ramp(size_t n) {
  std::vector<int16_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<int16_t>((i * 7919) % 65536 - 32768);
  v[0] = -32768;
  if (n > 1) v[1] = 32767;
  return v;
}

std::vector<float> Sine(double freq, int rate, size_t n, float amp = 0.5f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = amp * static_cast<float>(std::sin(2 * std::numbers::pi * freq * i / rate));
  }
  return v;
}

// Power of `x` at `freq` (Goertzel), to find a sine's frequency after resampling.
double PowerAt(const std::vector<float>& x, double freq, int rate) {
  const double w = 2 * std::numbers::pi * freq / rate;
  double s1 = 0, s2 = 0;
  for (float v : x) {
    const double s = v + 2 * std::cos(w) * s1 - s2;
    s2 = s1;
    s1 = s;
  }
  return s1 * s1 + s2 * s2 - 2 * std::cos(w) * s1 * s2;
}

TEST_F(AudioTest, Pcm16WavDecodesToExactNormalisedFloats) {
  const auto pcm = Ramp(5000);
  const auto path = Write("a.wav", pcm, 1, 16000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  DecodedAudio a;
  ASSERT_OK(DecodeFile(path, {}, &a));
  EXPECT_EQ(a.sample_rate, 16000);
  EXPECT_EQ(a.channels_in, 1);
  ASSERT_EQ(a.samples.size(), pcm.size());
  for (size_t i = 0; i < pcm.size(); ++i) ASSERT_EQ(a.samples[i], pcm[i] / 32768.0f) << i;
  std::vector<int16_t> back(pcm.size());
  FloatToPcm16(a.samples.data(), a.samples.size(), back.data());
  EXPECT_EQ(back, pcm);
}

TEST_F(AudioTest, FlacFileDecodesLosslessly) {
  const auto pcm = Ramp(12345);
  const auto path = Write("a.flac", pcm, 1, 22050, SF_FORMAT_FLAC | SF_FORMAT_PCM_16);
  DecodedAudio a;
  ASSERT_OK(DecodeFile(path, {}, &a));
  EXPECT_EQ(a.sample_rate, 22050);
  ASSERT_EQ(a.samples.size(), pcm.size());
  std::vector<int16_t> back(pcm.size());
  FloatToPcm16(a.samples.data(), a.samples.size(), back.data());
  EXPECT_EQ(back, pcm);
}

TEST_F(AudioTest, StereoIsDownmixedByAveraging) {
  std::vector<int16_t> st;
  for (int i = 0; i < 1000; ++i) {
    st.push_back(static_cast<int16_t>(i * 10));
    st.push_back(static_cast<int16_t>(-i * 4));
  }
  const auto path = Write("s.wav", st, 2, 8000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  DecodedAudio a;
  ASSERT_OK(DecodeFile(path, {}, &a));
  EXPECT_EQ(a.channels_in, 2);
  ASSERT_EQ(a.samples.size(), 1000u);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_FLOAT_EQ(a.samples[i], (i * 10 - i * 4) / 2 / 32768.0f) << i;
  }
}

TEST_F(AudioTest, OffsetAndDurationSelectTheSpan) {
  const auto pcm = Ramp(16000);
  const auto path = Write("o.wav", pcm, 1, 16000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  DecodedAudio a;
  ASSERT_OK(DecodeFile(path, {.offset_seconds = 0.25, .duration_seconds = 0.5}, &a));
  ASSERT_EQ(a.samples.size(), 8000u);
  EXPECT_EQ(a.samples.front(), pcm[4000] / 32768.0f);
  EXPECT_EQ(a.samples.back(), pcm[11999] / 32768.0f);
  // A duration ending within the tolerance (10 ms) past the end reads to the end.
  ASSERT_OK(DecodeFile(path, {.offset_seconds = 0.75, .duration_seconds = 0.255}, &a));
  EXPECT_EQ(a.samples.size(), 4000u);
  // Offset only.
  ASSERT_OK(DecodeFile(path, {.offset_seconds = 0.5}, &a));
  EXPECT_EQ(a.samples.size(), 8000u);
}

// A segment ending well past the end of its file means the manifest describes another file (or
// another version of it): storing it short without a word trained on a wrong transcript span.
TEST_F(AudioTest, SegmentEndingPastTheEndIsRejectedNamingOffsetDurationAndLength) {
  const auto path = Write("p.wav", Ramp(16000), 1, 16000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  DecodedAudio a;
  const Status s = DecodeFile(path, {.offset_seconds = 0.75, .duration_seconds = 10}, &a);
  ASSERT_TRUE(s.IsInvalidArgument()) << s.ToString() << " (" << a.samples.size() << " samples)";
  EXPECT_NE(s.message().find(path + ": segment offset 0.750 s + duration 10.000 s ends 9.750 s "
                                    "past the end of the audio (1.000 s)"),
            std::string::npos)
      << s.message();
  // The same for FLAC and for a buffer.
  const auto flac = Write("p.flac", Ramp(16000), 1, 16000, SF_FORMAT_FLAC | SF_FORMAT_PCM_16);
  EXPECT_TRUE(
      DecodeFile(flac, {.offset_seconds = 0.5, .duration_seconds = 0.6}, &a).IsInvalidArgument());
  const auto bytes = ReadAll(path);
  EXPECT_TRUE(DecodeMemory(bytes.data(), bytes.size(), "k", {.duration_seconds = 1.02}, &a)
                  .IsInvalidArgument());
  // Within the tolerance, or under allow_truncated, the segment keeps what the file holds.
  ASSERT_OK(DecodeFile(path, {.offset_seconds = 0.5, .duration_seconds = 0.509}, &a));
  EXPECT_EQ(a.samples.size(), 8000u);
  ASSERT_OK(DecodeFile(
      path, {.offset_seconds = 0.75, .duration_seconds = 10, .allow_truncated = true}, &a));
  EXPECT_EQ(a.samples.size(), 4000u);
}

// A mono PCM16 WAV of `seconds` at `rate` whose samples are a hole (zeros) in a sparse file:
// hours of audio at no disk cost.
std::string WriteSparseWav(const fs::path& path, int rate, uint32_t seconds) {
  const uint32_t data = seconds * static_cast<uint32_t>(rate) * 2;
  std::string h = "RIFF";
  auto u32 = [&h](uint32_t v) {
    for (int i = 0; i < 4; ++i) h += static_cast<char>(v >> (8 * i));
  };
  auto u16 = [&h](uint16_t v) {
    h += static_cast<char>(v);
    h += static_cast<char>(v >> 8);
  };
  u32(36 + data);
  h += "WAVEfmt ";
  u32(16);
  u16(1);  // PCM
  u16(1);  // mono
  u32(static_cast<uint32_t>(rate));
  u32(static_cast<uint32_t>(rate) * 2);
  u16(2);
  u16(16);
  h += "data";
  u32(data);
  std::ofstream(path, std::ios::binary) << h;
  fs::resize_file(path, h.size() + data);
  return path.string();
}

// Runs `body` in a child process whose address space may grow by only `headroom` bytes: a decode
// that reads or decodes a whole long file there dies (bad_alloc) instead of passing. True when
// the child exited 0.
bool RunWithMemoryHeadroom(size_t headroom, const std::function<bool()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    long pages = 0;
    if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    const rlim_t now = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE));
    struct rlimit lim = {now + headroom, now + headroom};
    if (pages == 0 || ::setrlimit(RLIMIT_AS, &lim) != 0) std::_Exit(3);
    bool ok = false;
    try {
      ok = body();
    } catch (...) {
      std::_Exit(4);
    }
    std::_Exit(ok ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A segment of a long recording reads the header and the segment, not the recording: 20
// segments of a 3 h file used to read the file 20 times over.
TEST_F(AudioTest, SegmentOfALongFileReadsOnlyTheSegment) {
  const std::vector<int16_t> pcm = Ramp(600 * 8000);  // 10 min at 8 kHz: 9.6 MB
  const auto path = Write("long.wav", pcm, 1, 8000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  DecodedAudio a;
  ASSERT_OK(DecodeFile(path, {.offset_seconds = 300, .duration_seconds = 2}, &a));
  ASSERT_EQ(a.samples.size(), 16000u);
  for (size_t i = 0; i < a.samples.size(); ++i)
    ASSERT_EQ(a.samples[i], pcm[300 * 8000 + i] / 32768.0f) << i;
  // The header's window (64 KiB), the WAV length check and 32 KB of samples.
  EXPECT_LT(a.bytes_read, 200'000u);
  ASSERT_OK(DecodeFile(path, {}, &a));
  EXPECT_EQ(a.samples.size(), pcm.size());
  EXPECT_GE(a.bytes_read, pcm.size() * 2);
}

// sluice.load's decode: every channel, interleaved, of a span read from its offset on (the
// same seek as the mono path: 5 s of a long file cost the 5 s).
TEST_F(AudioTest, KeepChannelsGivesEveryChannelOfTheSpanInterleaved) {
  std::vector<int16_t> stereo(2 * 300 * 8000);  // 5 min of stereo at 8 kHz: 9.6 MB
  const std::vector<int16_t> left = Ramp(stereo.size() / 2);
  for (size_t i = 0; i < left.size(); ++i) {
    stereo[2 * i] = left[i];
    stereo[2 * i + 1] = static_cast<int16_t>(-left[i] / 2);
  }
  const auto path = Write("stereo.wav", stereo, 2, 8000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  DecodedAudio a;
  ASSERT_OK(
      DecodeFile(path, {.offset_seconds = 120, .duration_seconds = 5, .keep_channels = true}, &a));
  EXPECT_EQ(a.channels_in, 2);
  ASSERT_EQ(a.samples.size(), 2u * 5 * 8000);
  for (size_t i = 0; i < a.samples.size(); ++i)
    ASSERT_EQ(a.samples[i], stereo[2 * 120 * 8000 + i] / 32768.0f) << i;
  EXPECT_LT(a.bytes_read, 300'000u);
  // Without keep_channels the same span is the channels' mean.
  DecodedAudio mono;
  ASSERT_OK(DecodeFile(path, {.offset_seconds = 120, .duration_seconds = 5}, &mono));
  ASSERT_EQ(mono.samples.size(), 5u * 8000);
  for (size_t i = 0; i < mono.samples.size(); ++i)
    ASSERT_EQ(mono.samples[i], (a.samples[2 * i] + a.samples[2 * i + 1]) * 0.5f) << i;
}

// What shardify export writes: WAV and FLAC files libsndfile reads back sample for sample, with
// their channels and rate.
TEST_F(AudioTest, EncodePcm16WritesWavAndFlacThatDecodeToTheSameSamples) {
  std::vector<int16_t> pcm = Ramp(3 * 22050);
  for (AudioContainer c : {AudioContainer::kWav, AudioContainer::kFlac}) {
    for (int channels : {1, 3}) {
      SCOPED_TRACE(std::string(AudioContainerExtension(c)) + " " + std::to_string(channels));
      std::vector<uint8_t> bytes;
      ASSERT_OK(EncodePcm16(pcm.data(), pcm.size() / channels, channels, 22050, c, &bytes));
      DecodedAudio a;
      ASSERT_OK(DecodeMemory(bytes.data(), bytes.size(), "encoded", {.keep_channels = true}, &a));
      EXPECT_EQ(a.sample_rate, 22050);
      EXPECT_EQ(a.channels_in, channels);
      ASSERT_EQ(a.samples.size(), pcm.size() / channels * channels);
      for (size_t i = 0; i < a.samples.size(); ++i) ASSERT_EQ(a.samples[i], pcm[i] / 32768.0f) << i;
    }
  }
  std::vector<uint8_t> bytes;
  Status st = EncodePcm16(pcm.data(), 0, 1, 16000, AudioContainer::kWav, &bytes);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  st = EncodePcm16(pcm.data(), 10, 1, 700000, AudioContainer::kFlac, &bytes);
  EXPECT_NE(st.message().find("outside FLAC's range"), std::string::npos) << st.ToString();
}

// Peak memory of a segment is the segment's: 1 s of a 1 GiB (18.6 h) file decodes with 64 MiB
// of headroom, which the whole file in memory would not fit.
TEST_F(AudioTest, SegmentOfAHugeFileDecodesInMemoryProportionalToTheSegment) {
  const auto path = WriteSparseWav(dir_ / "huge.wav", 8000, 67000);
  EXPECT_TRUE(RunWithMemoryHeadroom(64 << 20, [&] {
    DecodedAudio a;
    const Status s = DecodeFile(path, {.offset_seconds = 60000, .duration_seconds = 1}, &a);
    return s.ok() && a.samples.size() == 8000;
  }));
}

// --max-duration is checked against the header's length before decoding: a file claiming hours
// is refused at the cost of its header (a 2 GB WAV cost 6.3 GB of memory to be rejected).
TEST_F(AudioTest, FileLongerThanMaxSecondsIsRejectedFromItsHeader) {
  const auto path = WriteSparseWav(dir_ / "hours.wav", 8000, 67000);
  DecodeOptions opt;
  opt.max_seconds = 30;
  opt.max_seconds_name = "--max-duration";
  EXPECT_TRUE(RunWithMemoryHeadroom(64 << 20, [&] {
    DecodedAudio a;
    const Status s = DecodeFile(path, opt, &a);
    return s.IsInvalidArgument() &&
           s.message() == path + ": 67000.000 s of audio exceeds --max-duration 30";
  }));
  DecodedAudio a;
  const Status s = DecodeFile(path, opt, &a);
  ASSERT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_LT(a.bytes_read, 100'000u);
  // A segment is measured, not its file; a clip at the limit passes.
  opt.offset_seconds = 100;
  opt.duration_seconds = 30;
  ASSERT_OK(DecodeFile(path, opt, &a));
  EXPECT_EQ(a.samples.size(), 240000u);
  // A lossy stream (Ogg-Vorbis: its length an estimate from the last page) is refused too.
  const auto ogg = Write("l.ogg", Ramp(16000 * 3), 1, 16000, SF_FORMAT_OGG | SF_FORMAT_VORBIS);
  const Status o = DecodeFile(ogg, {.max_seconds = 2, .max_seconds_name = "--max-duration"}, &a);
  EXPECT_TRUE(o.IsInvalidArgument()) << o.ToString();
  EXPECT_NE(o.message().find("exceeds --max-duration 2"), std::string::npos) << o.ToString();
}

// open() of a FIFO blocks until a writer appears: an audio_filepath naming one hung shardify.
TEST_F(AudioTest, FifoIsRefusedNotWaitedOn) {
  const std::string path = (dir_ / "fifo.wav").string();
  sluice::testing::FifoWatchdog watchdog(path, 10);
  DecodedAudio a;
  const Status s = DecodeFile(path, {}, &a);
  EXPECT_FALSE(watchdog.fired()) << "DecodeFile blocked in open() on a FIFO";
  ASSERT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_EQ(s.message().rfind(path + ": not a regular file (FIFO)", 0), 0u) << s.message();
}

TEST_F(AudioTest, OffsetAndDurationWorkOnFlacToo) {
  const auto pcm = Ramp(16000);
  const auto path = Write("o.flac", pcm, 1, 16000, SF_FORMAT_FLAC | SF_FORMAT_PCM_16);
  DecodedAudio a;
  ASSERT_OK(DecodeFile(path, {.offset_seconds = 0.5, .duration_seconds = 0.125}, &a));
  ASSERT_EQ(a.samples.size(), 2000u);
  EXPECT_EQ(a.samples.front(), pcm[8000] / 32768.0f);
}

TEST_F(AudioTest, OffsetAtOrBeyondTheEndIsInvalidArgument) {
  const auto path = Write("e.wav", Ramp(8000), 1, 8000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  DecodedAudio a;
  Status s = DecodeFile(path, {.offset_seconds = 1.0}, &a);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("offset"), std::string::npos) << s.message();
  EXPECT_TRUE(DecodeFile(path, {.offset_seconds = 7}, &a).IsInvalidArgument());
  EXPECT_TRUE(DecodeFile(path, {.offset_seconds = -1}, &a).IsInvalidArgument());
  EXPECT_TRUE(DecodeFile(path, {.duration_seconds = 0}, &a).IsInvalidArgument());
}

TEST_F(AudioTest, MissingFileIsNotFoundAndNamesThePath) {
  DecodedAudio a;
  const std::string path = (dir_ / "nope.wav").string();
  Status s = DecodeFile(path, {}, &a);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_NE(s.message().find(path), std::string::npos);
}

// A directory is a bad input (rejected by shardify), not a machine fault (which stops it).
TEST_F(AudioTest, DirectoryIsInvalidArgument) {
  DecodedAudio a;
  const Status s = DecodeFile(dir_.string(), {}, &a);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find(": not a regular file (directory)"), std::string::npos)
      << s.ToString();
}

// A read error is an IOError naming file, offset and call: never a clip decoded from fewer bytes
// than the file holds (which the truncation check would reject as a bad input, or
// --allow-truncated-audio keep shortened).
TEST_F(AudioTest, ReadErrorIsIOErrorNotTruncation) {
  const auto path =
      Write("r.wav", std::vector<int16_t>(16000, 100), 1, 16000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  sysio::FaultSpec spec;
  std::string why;
  // Call 1 opens the file, call 2 reads it; "short" counts only reads and writes.
  for (const char* kind : {"2:eio:r.wav", "1:short:r.wav"}) {
    ASSERT_TRUE(sysio::ParseFaultSpec(kind, &spec, &why)) << why;
    sysio::ArmFaults(spec);
    DecodedAudio a;
    DecodeOptions opt;
    opt.allow_truncated = true;
    const Status s = DecodeFile(path, opt, &a);
    sysio::ArmFaults({});
    if (std::string(kind).find("short") != std::string::npos) {
      // A short read is retried: the whole clip.
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(a.samples.size(), 16000u);
      continue;
    }
    ASSERT_TRUE(s.IsIOError()) << s.ToString();
    EXPECT_NE(s.message().find(path + ": read of"), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("at offset 0"), std::string::npos) << s.ToString();
  }
}

TEST_F(AudioTest, GarbageIsCorruptionWithLibsndfileReason) {
  const auto path = WriteBytes("g.wav", std::string(1000, 'x'));
  DecodedAudio a;
  Status s = DecodeFile(path, {}, &a);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find(path), std::string::npos);
  EXPECT_GT(s.message().size(), path.size() + 10) << "reason missing: " << s.message();
}

// libsndfile keeps a failed open's error in one global: damaged inputs decoded on many threads
// at once must still each get their own reason, or shardify's rejects.jsonl changes with -j
// (ShardifyTest.OutputIsByteIdenticalForAnyThreadCount failed on it once in CI).
TEST_F(AudioTest, ConcurrentFailedOpensEachGiveTheirOwnReason) {
  std::string bad_fmt = "RIFF";
  bad_fmt += std::string("\x24\x00\x00\x00", 4) + "WAVEfmt " + std::string("\x02\x00\x00\x00", 4) +
             std::string(64, '\0');
  const std::vector<std::string> inputs = {std::string(1000, 'x'), bad_fmt};
  std::vector<std::string> expected;
  for (size_t i = 0; i < inputs.size(); ++i) {
    DecodedAudio a;
    const Status s = DecodeMemory(inputs[i].data(), inputs[i].size(), "in", {}, &a);
    ASSERT_TRUE(s.IsCorruption()) << s.ToString();
    expected.push_back(s.message());
  }
  ASSERT_NE(expected[0], expected[1]) << "the two inputs must fail for different reasons";
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 3000; ++k) {
        const size_t i = static_cast<size_t>((t + k) % 2);
        DecodedAudio a;
        const Status s = DecodeMemory(inputs[i].data(), inputs[i].size(), "in", {}, &a);
        wrong += s.message() != expected[i];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(AudioTest, EmptyAndZeroSampleFilesAreRejected) {
  DecodedAudio a;
  Status s = DecodeFile(WriteBytes("empty.wav", ""), {}, &a);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  const auto path = Write("zero.wav", {}, 1, 16000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  s = DecodeFile(path, {}, &a);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.IsInvalidArgument() || s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find(path), std::string::npos);
}

TEST_F(AudioTest, MemoryDecodeMatchesFileDecode) {
  const auto pcm = Ramp(7000);
  for (int format : {SF_FORMAT_WAV | SF_FORMAT_PCM_16, SF_FORMAT_FLAC | SF_FORMAT_PCM_16,
                     SF_FORMAT_OGG | SF_FORMAT_VORBIS}) {
    const auto path = Write(std::to_string(format) + ".audio", pcm, 1, 16000, format);
    DecodedAudio from_file, from_mem;
    ASSERT_OK(DecodeFile(path, {.offset_seconds = 0.1}, &from_file)) << format;
    const auto bytes = ReadAll(path);
    Status s =
        DecodeMemory(bytes.data(), bytes.size(), "rec-7", {.offset_seconds = 0.1}, &from_mem);
    ASSERT_OK(s);
    EXPECT_EQ(from_file.samples, from_mem.samples) << format;
    EXPECT_EQ(from_mem.sample_rate, 16000);
  }
}

TEST_F(AudioTest, LossyFormatsDecodeToTheRightLengthAndRate) {
  // Opus and MP3 through libsndfile >= 1.1 (built here with libopus and mpg123/lame); a format
  // this libsndfile cannot write is skipped, not failed.
  std::vector<int16_t> tone(16000);
  for (size_t i = 0; i < tone.size(); ++i) {
    tone[i] = static_cast<int16_t>(8000 * std::sin(2 * std::numbers::pi * 440 * i / 16000.0));
  }
  const struct {
    const char* name;
    int format;
  } formats[] = {{"a.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS},
                 {"a.opus", SF_FORMAT_OGG | SF_FORMAT_OPUS},
                 {"a.mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III}};
  for (const auto& f : formats) {
    SF_INFO probe{};
    probe.samplerate = 16000;
    probe.channels = 1;
    probe.format = f.format;
    if (!sf_format_check(&probe)) continue;
    const auto path = Write(f.name, tone, 1, 16000, f.format);
    DecodedAudio a;
    Status s = DecodeFile(path, {}, &a);
    ASSERT_OK(s) << f.name;
    EXPECT_EQ(a.sample_rate, 16000) << f.name;
    // Codec delay and padding may change the length by a frame or so.
    EXPECT_NEAR(static_cast<double>(a.samples.size()), 16000.0, 2000.0) << f.name;
    EXPECT_GT(PowerAt(a.samples, 440, 16000), 100 * PowerAt(a.samples, 1000, 16000)) << f.name;
  }
}

TEST_F(AudioTest, MemoryErrorsNameTheRecord) {
  DecodedAudio a;
  const std::string junk(64, '\x01');
  Status s = DecodeMemory(junk.data(), junk.size(), "record-42", {}, &a);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_EQ(s.message().rfind("record-42", 0), 0u) << s.message();
  EXPECT_TRUE(DecodeMemory(junk.data(), 0, "record-42", {}, &a).IsInvalidArgument());
}

// libsndfile shortens a WAV whose data chunk claims more than the file holds to what is there,
// without an error: a cut-off copy would train as a shorter clip. DecodeFile/DecodeMemory say so.
TEST_F(AudioTest, TruncatedWavIsCorruptionNamingBothLengthsUnlessAllowed) {
  const auto ramp = Ramp(4000);
  const auto path = Write("t.wav", ramp, 1, 16000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  auto bytes = ReadAll(path);
  const std::string whole(bytes.begin(), bytes.end());
  const size_t data = whole.find("data") + 8;  // first sample byte
  bytes.resize(bytes.size() / 2);
  const size_t held = (bytes.size() - data) / 2;
  const std::string cut = WriteBytes("cut.wav", std::string(bytes.begin(), bytes.end()));
  const std::string want = "header declares 4000 frames, file holds " + std::to_string(held);
  DecodedAudio a;
  Status s = DecodeMemory(bytes.data(), bytes.size(), "trunc", {}, &a);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_EQ(s.message().rfind("trunc: " + want, 0), 0u) << s.message();
  s = DecodeFile(cut, {}, &a);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_EQ(s.message().rfind(cut + ": " + want, 0), 0u) << s.message();

  DecodeOptions allow;
  allow.allow_truncated = true;
  ASSERT_OK(DecodeFile(cut, allow, &a));
  ASSERT_EQ(a.samples.size(), held);
  for (size_t i = 0; i < held; ++i) ASSERT_EQ(a.samples[i], ramp[i] / 32768.0f) << i;
  // The whole file is not affected.
  EXPECT_OK(DecodeFile(path, {}, &a));
  EXPECT_EQ(a.samples.size(), 4000u);
}

TEST_F(AudioTest, TruncatedFlacFileIsNeverSilentlyShorter) {
  const auto path = Write("t.flac", Ramp(40000), 1, 16000, SF_FORMAT_FLAC | SF_FORMAT_PCM_16);
  auto bytes = ReadAll(path);
  bytes.resize(bytes.size() * 2 / 3);
  DecodedAudio a;
  const Status s = DecodeMemory(bytes.data(), bytes.size(), "trunc", {}, &a);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString() << " (" << a.samples.size() << " samples)";
  EXPECT_EQ(s.message().rfind("trunc: ", 0), 0u) << s.message();
}

TEST(AllFiniteTest, DetectsNanAndInf) {
  std::vector<float> v(1001, 0.25f);
  EXPECT_TRUE(AllFinite(v.data(), v.size()));
  EXPECT_TRUE(AllFinite(v.data(), 0));
  v[777] = std::nanf("");
  EXPECT_FALSE(AllFinite(v.data(), v.size()));
  v[777] = -INFINITY;
  EXPECT_FALSE(AllFinite(v.data(), v.size()));
  v[777] = 3.4e38f;
  EXPECT_TRUE(AllFinite(v.data(), v.size()));
}

TEST(PcmTest, EveryInt16SurvivesTheRoundTrip) {
  std::vector<int16_t> all(65536);
  for (int i = 0; i < 65536; ++i) all[i] = static_cast<int16_t>(i - 32768);
  std::vector<float> f(all.size());
  Pcm16ToFloat(all.data(), all.size(), f.data(), 1.0f / 32768);
  std::vector<int16_t> back(all.size());
  FloatToPcm16(f.data(), f.size(), back.data());
  EXPECT_EQ(back, all);
}

TEST(PcmTest, RoundsToNearestAndClamps) {
  const std::vector<float> in = {0.4f / 32768, 0.6f / 32768, -0.6f / 32768, 1.0f,
                                 2.0f,         -1.0f,        -3.0f,         std::nanf("")};
  std::vector<int16_t> out(in.size());
  FloatToPcm16(in.data(), in.size(), out.data());
  EXPECT_EQ(out, (std::vector<int16_t>{0, 1, -1, 32767, 32767, -32768, -32768, 0}));
  const int16_t k[] = {-32768, 5, 32767};
  float kf[3];
  Pcm16ToFloat(k, 3, kf, 1.0f);
  EXPECT_EQ(kf[0], -32768.0f);
  EXPECT_EQ(kf[2], 32767.0f);
}

TEST(ResampleTest, LengthFollowsTheRateRatio) {
  std::vector<float> out;
  const auto in = Sine(440, 22050, 22050);
  ASSERT_OK(Resample(in.data(), in.size(), 22050, 16000, &out));
  EXPECT_EQ(out.size(), 16000u);
  ASSERT_OK(Resample(in.data(), 1001, 22050, 16000, &out));
  EXPECT_EQ(out.size(), ResampledLength(1001, 22050, 16000));
  EXPECT_EQ(out.size(), 726u);
  ASSERT_OK(Resample(in.data(), in.size(), 16000, 16000, &out));
  EXPECT_EQ(out, in);
  EXPECT_TRUE(Resample(in.data(), in.size(), 0, 16000, &out).IsInvalidArgument());
}

TEST(ResampleTest, SineKeepsItsFrequency) {
  const auto in = Sine(1000, 44100, 44100);
  std::vector<float> out;
  ASSERT_OK(Resample(in.data(), in.size(), 44100, 16000, &out));
  ASSERT_EQ(out.size(), 16000u);
  // All the power sits at 1 kHz, none at the neighbours, and the amplitude is kept.
  const double at = PowerAt(out, 1000, 16000);
  EXPECT_GT(at, 1000 * PowerAt(out, 1100, 16000));
  EXPECT_GT(at, 1000 * PowerAt(out, 900, 16000));
  float peak = 0;
  for (size_t i = 1000; i < 15000; ++i) peak = std::max(peak, std::fabs(out[i]));
  EXPECT_NEAR(peak, 0.5f, 0.005f);
  // Aligned in time: the middle of the output is the sine at the same instant.
  for (size_t i = 8000; i < 8010; ++i) {
    EXPECT_NEAR(out[i], 0.5 * std::sin(2 * std::numbers::pi * 1000 * i / 16000.0), 2e-3) << i;
  }
}

TEST(ResampleTest, ResamplerIsReusableAndMatchesOneShot) {
  const auto a = Sine(300, 16000, 9000);
  const auto b = Sine(700, 16000, 5000);
  Resampler r;
  std::vector<float> ra, rb, rb_speed, ref;
  ASSERT_OK(r.Process(a.data(), a.size(), 16000, 8000, &ra));
  ASSERT_OK(r.Process(b.data(), b.size(), 16000, 8000, &rb));
  ASSERT_OK(Resample(b.data(), b.size(), 16000, 8000, &ref));
  EXPECT_EQ(rb, ref);  // no state leaks from clip a into clip b
  // Speed perturbation 1.1: the clip is read as if sampled at 17600 Hz.
  ASSERT_OK(r.Process(b.data(), b.size(), 16000 * 1.1, 16000, &rb_speed));
  EXPECT_EQ(rb_speed.size(), ResampledLength(5000, 17600, 16000));
  ASSERT_OK(r.Process(a.data(), a.size(), 16000, 8000, &rb));
  EXPECT_EQ(rb, ra);
}

TEST(FlacTest, RoundTripIsLosslessAndDeterministic) {
  const auto pcm = Ramp(33333);
  std::vector<uint8_t> enc1, enc2;
  ASSERT_OK(EncodeFlac(pcm.data(), pcm.size(), 16000, &enc1));
  ASSERT_OK(EncodeFlac(pcm.data(), pcm.size(), 16000, &enc2));
  EXPECT_EQ(enc1, enc2);
  ASSERT_GT(enc1.size(), 4u);
  EXPECT_EQ(std::string(enc1.begin(), enc1.begin() + 4), "fLaC");
  std::vector<int16_t> dec;
  int rate = 0;
  Status s = DecodeFlac(enc1.data(), enc1.size(), "rec", &dec, &rate);
  ASSERT_OK(s);
  EXPECT_EQ(rate, 16000);
  EXPECT_EQ(dec, pcm);
}

TEST(FlacTest, SpeechLikeSignalCompresses) {
  std::vector<int16_t> pcm(16000);
  for (size_t i = 0; i < pcm.size(); ++i) {
    pcm[i] = static_cast<int16_t>(3000 * std::sin(i * 0.05) + 1000 * std::sin(i * 0.31));
  }
  std::vector<uint8_t> enc;
  ASSERT_OK(EncodeFlac(pcm.data(), pcm.size(), 16000, &enc));
  EXPECT_LT(enc.size(), pcm.size() * 2 / 2);
  std::vector<int16_t> dec;
  int rate = 0;
  ASSERT_OK(DecodeFlac(enc.data(), enc.size(), "rec", &dec, &rate));
  EXPECT_EQ(dec, pcm);
}

TEST(FlacTest, DamagedStreamsAreCorruption) {
  const auto pcm = Ramp(20000);
  std::vector<uint8_t> enc;
  ASSERT_OK(EncodeFlac(pcm.data(), pcm.size(), 8000, &enc));
  std::vector<int16_t> dec;
  int rate = 0;
  auto truncated = enc;
  truncated.resize(enc.size() / 2);
  Status s = DecodeFlac(truncated.data(), truncated.size(), "rec-9", &dec, &rate);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_EQ(s.message().rfind("rec-9", 0), 0u) << s.message();
  auto garbage = enc;
  garbage[0] = 'X';
  EXPECT_TRUE(DecodeFlac(garbage.data(), garbage.size(), "r", &dec, &rate).IsCorruption());
  EXPECT_TRUE(DecodeFlac(enc.data(), 0, "r", &dec, &rate).IsCorruption());
}

// Found by record_fuzzer: a 207-byte FLAC record whose STREAMINFO claims about 4e9 samples.
// DecodeFlac sized its buffer from that claim (8 GB) before decoding a single frame.
TEST(FlacTest, HeaderClaimingBillionsOfSamplesIsCorruptionNotAnAllocation) {
  const std::string bytes = sluice::testing::FuzzRegression("audio", "flac-claims-4g-samples.flac");
  ASSERT_EQ(bytes.size(), 207u);
  std::vector<int16_t> dec;
  int rate = 0;
  Status s = DecodeFlac(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "rec-7", &dec,
                        &rate);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_EQ(s.message().rfind("rec-7: FLAC record truncated or damaged", 0), 0u) << s.message();
  EXPECT_TRUE(dec.empty());
  EXPECT_LT(dec.capacity(), size_t{1} << 20);  // the claim was never allocated
}

// Found by audio_fuzzer and features_input_fuzzer: a FLAC stream (137 bytes) and an MP3 (1271
// bytes) whose headers claim about 5e10 and 4e11 samples. DecodeMemory reserved the
// claim up front and the allocation failed (ASan: out of memory). It now reserves at most 4 Mi
// samples and grows with what decodes: the FLAC holds no frame (refused as before for empty
// audio), the MP3 decodes to the few hundred samples it holds.
TEST(AudioFuzzRegression, HeaderClaimingHugeLengthCostsNoReservation) {
  DecodedAudio out;
  std::string bytes = sluice::testing::FuzzRegression("audio", "flac-claims-5e10-samples.flac");
  ASSERT_EQ(bytes.size(), 137u);
  Status s = DecodeMemory(bytes.data(), bytes.size(), "f.flac", {}, &out);
  // FLAC states its length exactly: a stream holding none of what it declares is cut short.
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("f.flac: header declares 49611046914 frames, file holds 0"),
            std::string::npos)
      << s.message();
  EXPECT_LE(out.samples.capacity(), size_t{1} << 22);

  bytes = sluice::testing::FuzzRegression("features_input", "mp3-claims-4e11-samples.mp3");
  ASSERT_EQ(bytes.size(), 1271u);
  DecodedAudio mp3;
  ASSERT_OK(DecodeMemory(bytes.data(), bytes.size(), "m.mp3", {}, &mp3));
  EXPECT_GT(mp3.samples.size(), 0u);
  EXPECT_LT(mp3.samples.size(), 10000u);
  EXPECT_LE(mp3.samples.capacity(), size_t{1} << 22);
}

TEST(FlacTest, RejectsBadInput) {
  std::vector<uint8_t> enc;
  const int16_t one = 1;
  EXPECT_TRUE(EncodeFlac(&one, 0, 16000, &enc).IsInvalidArgument());
  EXPECT_TRUE(EncodeFlac(&one, 1, 0, &enc).IsInvalidArgument());
}

}  // namespace
}  // namespace sluice::features
