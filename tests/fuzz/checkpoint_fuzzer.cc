// libFuzzer target for sluice-train checkpoint files (trainer/checkpoint.h DecodeCheckpoint).
// A random change almost never keeps the XXH3 in the footer right, so each input is decoded
// twice: as it is (the header and footer checks), and with its length field and checksum set to
// match (so the fuzzer reaches the sections behind them, as zstd's fuzzers do). Any bytes give a
// Status, never a crash; a checkpoint that decodes re-encodes to bytes that decode to the same.
// Seeds: corpus/checkpoint (tests/fuzz/make_seeds.cc, written with EncodeCheckpoint).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "shards/checksum.h"
#include "trainer/checkpoint.h"
#include "trainer/checkpoint_format.h"

namespace {

void DecodeAndRoundTrip(const std::string& bytes) {
  using namespace sluice::train;
  Checkpoint c;
  if (!DecodeCheckpoint(bytes, "fuzz.ckpt", &c).ok()) return;
  std::string again;
  if (!EncodeCheckpoint(c, &again).ok()) std::abort();  // a decoded checkpoint is consistent
  Checkpoint c2;
  std::string third;
  if (!DecodeCheckpoint(again, "fuzz-again.ckpt", &c2).ok() || !EncodeCheckpoint(c2, &third).ok() ||
      third != again) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace ckpt = sluice::train::ckpt;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  DecodeAndRoundTrip(bytes);
  if (bytes.size() < ckpt::kHeaderBytes + ckpt::kFooterBytes) return 0;
  const uint64_t file_bytes = bytes.size();
  std::memcpy(bytes.data() + 16, &file_bytes, 8);
  const uint64_t footer = bytes.size() - ckpt::kFooterBytes;
  const uint64_t sum = sluice::shards::Checksum(bytes.data(), footer);
  std::memcpy(bytes.data() + footer, &sum, 8);
  std::memcpy(bytes.data() + footer + 8, ckpt::kEndMagic, 8);
  DecodeAndRoundTrip(bytes);
  return 0;
}
