// Codec degradation: each codec Debian's libsndfile encodes round-trips a clip to the same length,
// close to the original by what the codec is known to keep, and the same bytes every time.
#include "features/codec_degrade.h"

#include <sndfile.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>
#include <latch>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "assert_ok.h"
#include "features/sndfile_io.h"
#include "test_util.h"

namespace sluice::features {
namespace {

// 10 log10(E_x / E_(y - x)).
double Snr(const std::vector<float>& x, const std::vector<float>& y) {
  double s = 0, e = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    s += static_cast<double>(x[i]) * x[i];
    e += (static_cast<double>(y[i]) - x[i]) * (static_cast<double>(y[i]) - x[i]);
  }
  return 10 * std::log10(s / e);
}

TEST(CodecDegradeTest, UlawKeepsEverySampleWithinOneStep) {
  const auto x = testing::LoadClip("speech_16k.wav", 16000);
  ASSERT_FALSE(x.empty());
  auto y = x;
  std::vector<uint8_t> bytes;
  ASSERT_OK(CodecRoundTrip(y.data(), y.size(), 16000, Codec::kUlaw, 0.0, &bytes));
  ASSERT_EQ(y.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    // G.711 µ-law: 16 levels per segment, the spacing doubling per segment from 2/8192 of full
    // scale; next to x the gap between levels is under max(4/8192, |x|/8) (4/8192 where the
    // first segments meet), and the decoded sample is one of the two levels around x.
    ASSERT_NEAR(y[i], x[i], std::max(4.0 / 8192, std::fabs(static_cast<double>(x[i])) / 8)) << i;
  }
  EXPECT_GT(Snr(x, y), 25.0);
}

TEST(CodecDegradeTest, EveryCodecRoundTripsToTheSameLengthRepeatably) {
  const auto x = testing::LoadClip("speech_16k.wav", 16000);
  ASSERT_FALSE(x.empty());
  std::vector<uint8_t> bytes, again;
  for (Codec c :
       {Codec::kUlaw, Codec::kAlaw, Codec::kGsm, Codec::kVorbis, Codec::kOpus, Codec::kMp3}) {
    for (double level : {0.0, 0.9}) {
      auto y = x, z = x;
      // Debian's libsndfile 1.2 encodes all six: a missing one is a failure, not a skip.
      ASSERT_OK(CodecRoundTrip(y.data(), y.size(), 16000, c, level, &bytes)) << CodecName(c);
      ASSERT_OK(CodecRoundTrip(z.data(), z.size(), 16000, c, level, &again));
      // Ogg streams (Vorbis, Opus) carry a random stream serial number from libsndfile, so
      // only their decoded samples repeat; the other containers repeat byte for byte.
      if (c != Codec::kVorbis && c != Codec::kOpus) {
        EXPECT_EQ(bytes, again) << CodecName(c) << " encodes the same clip differently";
      }
      EXPECT_EQ(y, z) << CodecName(c) << " decodes to other samples on a second run";
      EXPECT_NE(y, x) << CodecName(c) << " changed nothing";
      // Aligned (no codec delay left in the result) and degraded by what each codec keeps.
      EXPECT_GT(Snr(x, y), 8.0) << CodecName(c);
      EXPECT_LT(Snr(x, y), 45.0) << CodecName(c);
      std::printf("%s compression %.1f: %zu bytes, SNR %.1f dB\n", CodecName(c), level,
                  bytes.size(), Snr(x, y));
    }
  }
}

// The chain's gain and noise may push samples past full scale before the codec: every encoder
// gets them clipped, never raw (LAME and libvorbis are not made for values of 1000).
TEST(CodecDegradeTest, SamplesBeyondFullScaleAreClipped) {
  std::vector<float> loud(16000);
  for (size_t i = 0; i < loud.size(); ++i) {
    loud[i] =
        1000.0f * static_cast<float>(std::sin(2 * M_PI * 440 * static_cast<double>(i) / 16000));
  }
  std::vector<uint8_t> bytes;
  for (Codec c :
       {Codec::kUlaw, Codec::kAlaw, Codec::kGsm, Codec::kVorbis, Codec::kOpus, Codec::kMp3}) {
    auto y = loud;
    ASSERT_OK(CodecRoundTrip(y.data(), y.size(), 16000, c, 0.5, &bytes)) << CodecName(c);
    float peak = 0;
    for (float v : y) peak = std::max(peak, std::fabs(v));
    EXPECT_LT(peak, 1.5f) << CodecName(c);
  }
}

TEST(CodecDegradeTest, UnknownCodecNamesTheKnownOnes) {
  Codec c;
  const Status s = ParseCodec("aac", &c);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("'aac'"), std::string::npos) << s.ToString();
  EXPECT_NE(s.ToString().find("opus"), std::string::npos) << s.ToString();
  ASSERT_OK(ParseCodec("gsm", &c));
  EXPECT_EQ(c, Codec::kGsm);
}

TEST(CodecDegradeTest, OpusAtARateItLacksIsUnsupported) {
  std::vector<float> x(4410, 0.1f);
  std::vector<uint8_t> bytes;
  const Status s = CodecRoundTrip(x.data(), x.size(), 44100, Codec::kOpus, 0.5, &bytes);
  EXPECT_EQ(s.code(), Status::Code::kUnsupported) << s.ToString();
}

// The round trip opens outside the open lock, so an open that fails there would write
// libsndfile's one global error while a thread holding the lock may be reading its own: a rate
// Opus lacks (the one open known to fail) is refused before libsndfile is asked.
TEST(CodecDegradeTest, ARefusedOpusRateLeavesLibsndfilesGlobalErrorAlone) {
  SF_INFO info{};
  ASSERT_EQ(sf_open("/nonexistent/sluice-codec-test.wav", SFM_READ, &info), nullptr);
  const std::string before = sf_strerror(nullptr);
  std::vector<float> x(4410, 0.1f);
  std::vector<uint8_t> bytes;
  for (int rate : {44100, 22050, 32000}) {
    const Status s = CodecRoundTrip(x.data(), x.size(), rate, Codec::kOpus, 0.5, &bytes);
    EXPECT_EQ(s.code(), Status::Code::kUnsupported) << s.ToString();
    EXPECT_NE(s.ToString().find("8, 12, 16, 24 or 48 kHz"), std::string::npos) << s.ToString();
    EXPECT_EQ(sf_strerror(nullptr), before) << "at " << rate << " Hz";
  }
}

// Loader threads decode shards' audio under libsndfile's process-wide open lock (sndfile_io.h);
// a round trip opens a decoder of its own (Vorbis' takes about 0.65 ms to set up its codebooks),
// and holding that lock exclusively would make every thread of the chain wait on every other's.
// The six round trips, as a task another thread runs.
std::future<Status> RoundTripsAsync(const std::vector<float>& x) {
  return std::async(std::launch::async, [&x] {
    std::vector<uint8_t> bytes;
    Status s;
    for (Codec c :
         {Codec::kUlaw, Codec::kAlaw, Codec::kGsm, Codec::kVorbis, Codec::kOpus, Codec::kMp3}) {
      auto y = x;
      if (s.ok()) s = CodecRoundTrip(y.data(), y.size(), 16000, c, 0.5, &bytes);
    }
    return s;
  });
}

std::vector<float> Tone() {
  std::vector<float> x(16000);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = 0.3f * static_cast<float>(std::sin(2 * M_PI * 300 * static_cast<double>(i) / 16000));
  }
  return x;
}

// Round trips open with the open lock held shared: they run while another thread's round trip
// opens (the lock held shared)...
TEST(CodecDegradeTest, RoundTripsOpenTogether) {
  const std::vector<float> x = Tone();
  std::shared_lock<std::shared_mutex> held(internal::OpenLock());
  auto done = RoundTripsAsync(x);
  const bool finished = done.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  held.unlock();  // lets a blocked round trip finish, so the test ends either way
  EXPECT_TRUE(finished) << "the round trips waited for another thread's shared hold";
  ASSERT_OK(done.get());
}

// ...but never during an exclusive open, whose failure reason (libsndfile's one global error,
// which every open writes) they would overwrite.
TEST(CodecDegradeTest, RoundTripsWaitForAnExclusiveOpen) {
  const std::vector<float> x = Tone();
  std::unique_lock<std::shared_mutex> held(internal::OpenLock());
  auto done = RoundTripsAsync(x);
  const bool finished = done.wait_for(std::chrono::milliseconds(300)) == std::future_status::ready;
  held.unlock();
  EXPECT_FALSE(finished) << "a round trip opened during another thread's exclusive open";
  ASSERT_OK(done.get());
}

// libsndfile keeps one process-wide error, which every sf_open* writes, a successful one too
// (it is reset to "No Error." as an open starts); a thread whose open failed reads its reason from
// it under the open lock (sndfile_io.h). A round trip on another thread must not reset it there:
// here the lock is held right after a failed open, as OpenSndfileLocked holds it (exclusively),
// while another thread runs a round trip; the failure's reason must still be there afterwards. (The
// round trip then waits for the lock: it is given 300 ms to show whether it does.)
TEST(CodecDegradeTest, ARoundTripLeavesAnotherThreadsOpenFailureAlone) {
  std::vector<float> x(4000);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = 0.3f * static_cast<float>(std::sin(2 * M_PI * 300 * static_cast<double>(i) / 16000));
  }
  std::unique_lock<std::shared_mutex> held(internal::OpenLock());
  SF_INFO info{};
  ASSERT_EQ(sf_open("/nonexistent/sluice-codec-test.wav", SFM_READ, &info), nullptr);
  const int code = sf_error(nullptr);
  const std::string reason = sf_strerror(nullptr);
  ASSERT_NE(code, 0);
  auto done = std::async(std::launch::async, [&x] {
    std::vector<uint8_t> bytes;
    auto y = x;
    return CodecRoundTrip(y.data(), y.size(), 16000, Codec::kUlaw, 0.5, &bytes);
  });
  done.wait_for(std::chrono::milliseconds(300));
  const int code_after = sf_error(nullptr);
  const std::string reason_after = sf_strerror(nullptr);
  held.unlock();
  ASSERT_OK(done.get());
  EXPECT_EQ(code_after, code) << "the open lock's holder now reads '" << reason_after
                              << "' instead of its own failure '" << reason << "'";
}

// Loader threads run LAME, libvorbis, libopus, mpg123 and libsndfile's GSM side by side: 4
// threads, each starting at another codec, 20 rounds of all six at once must decode what one
// thread alone decodes. The codec libraries are Debian's, built without ThreadSanitizer, so TSan
// sees no race inside them; `valgrind --tool=helgrind` on this test does (LAME's global tables,
// which its lock in codec_degrade.cc is for; docs/augment.md).
TEST(CodecDegradeTest, ConcurrentRoundTripsEqualTheSingleThreadOnes) {
  constexpr Codec kAll[] = {Codec::kUlaw,   Codec::kAlaw, Codec::kGsm,
                            Codec::kVorbis, Codec::kOpus, Codec::kMp3};
  constexpr size_t kCodecCount = std::size(kAll);
  constexpr int kThreads = 4, kRounds = 20;
  std::vector<float> x(4000);  // a quarter of a second: seconds under helgrind's slowdown too
  for (size_t i = 0; i < x.size(); ++i) {
    const double t = static_cast<double>(i) / 16000;
    x[i] = static_cast<float>(0.3 * std::sin(2 * M_PI * 300 * t) +
                              0.1 * std::sin(2 * M_PI * 2100 * t));
  }
  std::vector<std::vector<float>> expected(kCodecCount);
  std::vector<uint8_t> bytes;
  for (size_t c = 0; c < kCodecCount; ++c) {
    expected[c] = x;
    ASSERT_OK(CodecRoundTrip(expected[c].data(), x.size(), 16000, kAll[c], 0.5, &bytes))
        << CodecName(kAll[c]);
  }
  // Per thread: the first failure seen (empty when none), so the assertions stay on this thread.
  std::vector<std::string> failure(kThreads);
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint8_t> scratch;
      start.arrive_and_wait();
      for (int round = 0; round < kRounds && failure[t].empty(); ++round) {
        for (size_t k = 0; k < kCodecCount && failure[t].empty(); ++k) {
          const size_t c = (k + static_cast<size_t>(t)) % kCodecCount;
          auto y = x;
          const Status s = CodecRoundTrip(y.data(), y.size(), 16000, kAll[c], 0.5, &scratch);
          if (!s.ok()) {
            failure[t] = s.ToString();
          } else if (y != expected[c]) {
            failure[t] = std::string(CodecName(kAll[c])) + " decoded other samples in round " +
                         std::to_string(round);
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failure[t], "") << "thread " << t;
}

}  // namespace
}  // namespace sluice::features
