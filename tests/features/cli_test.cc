// sluice-features end to end: the .npy it writes holds what the library computes.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "features/fbank.h"
#include "test_util.h"

namespace sluice::features {
namespace {

struct Npy {
  std::string header;
  std::vector<float> data;
};

Npy ReadNpy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), {});
  Npy npy;
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return npy;
  const size_t len =
      static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  npy.header = bytes.substr(10, len);
  EXPECT_EQ((10 + len) % 64, 0u);
  npy.data.resize((bytes.size() - 10 - len) / 4);
  std::memcpy(npy.data.data(), bytes.data() + 10 + len, npy.data.size() * 4);
  return npy;
}

std::string RunCli(const std::string& args, int* rc) {
  const std::string err = ::testing::TempDir() + "cli_err_" + std::to_string(::getpid());
  *rc = std::system((std::string(SLUICE_FEATURES_BIN) + " " + args + " 2>" + err).c_str());
  std::ifstream f(err);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

TEST(CliTest, WritesTheLibraryFbankAsNpy) {
  const std::string wav = testing::DataPath("speech_16k.wav");
  const std::string out = ::testing::TempDir() + "cli_fbank_" + std::to_string(::getpid()) + ".npy";
  int rc = 0;
  RunCli(wav + " --features fbank --num-mel-bins 40 --snip-edges=false -o " + out, &rc);
  ASSERT_EQ(rc, 0);
  const Npy npy = ReadNpy(out);
  std::remove(out.c_str());
  EXPECT_NE(npy.header.find("'descr': '<f4'"), std::string::npos) << npy.header;
  EXPECT_NE(npy.header.find("'shape': (150, 40)"), std::string::npos) << npy.header;
  FbankOptions o;
  o.num_mel_bins = 40;
  o.snip_edges = false;
  const auto x = testing::Scaled(testing::LoadClip("speech_16k.wav", 16000), 32768.0f);
  Workspace ws;
  std::vector<float> expected;
  FbankComputer(o).Compute(x.data(), x.size(), &ws, &expected);
  EXPECT_EQ(npy.data, expected);
}

// The flags are the ones every tool shares (tools/common/feature_options.h): left out,
// --snip-edges means whole frames for fbank and centred frames for the spectrogram; given, it
// applies to both. At 8 kHz, 20/10 ms: 1 + n / 80 centred frames, 1 + (n - 160) / 80 snipped.
TEST(CliTest, SpectrogramFramesAreCentredUnlessSnipEdgesIsGiven) {
  const std::string wav = testing::DataPath("speech_16k.wav");
  const std::string out = ::testing::TempDir() + "cli_spec_" + std::to_string(::getpid()) + ".npy";
  auto frames = [&](const std::string& flags) {
    int rc = 0;
    const std::string err = RunCli(wav + " --features spectrogram " + flags + " -o " + out, &rc);
    EXPECT_EQ(rc, 0) << err;
    const Npy npy = ReadNpy(out);
    std::remove(out.c_str());
    const size_t at = npy.header.find("'shape': (");
    return at == std::string::npos ? -1 : std::stoi(npy.header.substr(at + 10));
  };
  const int centred = frames("");
  EXPECT_EQ(frames("--snip-edges=false"), centred);
  EXPECT_EQ(frames("--snip-edges=true"), centred - 2);  // 1 + (n - L) / H against 1 + n / H
  // Kaldi's rarer fbank flags are accepted here as in every tool.
  int rc = 0;
  const std::string err = RunCli(wav + " --features fbank --htk-compat=true --use-energy=true "
                                 "--energy-floor 1 --raw-energy=false -o " + out, &rc);
  EXPECT_EQ(rc, 0) << err;
  std::remove(out.c_str());
}

TEST(CliTest, BadInputsExitNonZeroWithAReason) {
  const std::string out = ::testing::TempDir() + "cli_bad_" + std::to_string(::getpid()) + ".npy";
  int rc = 0;
  std::string err = RunCli("/no/such/file.wav -o " + out, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(err.find("/no/such/file.wav"), std::string::npos) << err;
  err = RunCli(testing::DataPath("speech_16k.wav") + " --window-type kaiser -o " + out, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(err.find("kaiser"), std::string::npos) << err;
  err = RunCli(testing::DataPath("speech_16k.wav") + " --high-freq 9000 -o " + out, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(err.find("high-freq"), std::string::npos) << err;
  std::ifstream none(out);
  EXPECT_FALSE(none.good()) << "no output on failure";
}

}  // namespace
}  // namespace sluice::features
