// Counter-based randomness: every random choice is a pure function of (seed, epoch, record id,
// position), so the sampler's orders, features and augmentations replay bit-identically whatever
// the thread count or the order in which records are processed.
#pragma once

#include <cstdint>

namespace sluice {

// SplitMix64's finaliser: a bijective 64-bit mix with full avalanche.
constexpr uint64_t Mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The key of one record's random stream in one epoch; distinct inputs give unrelated keys.
constexpr uint64_t StreamKey(uint64_t seed, uint64_t epoch, uint64_t record_id) {
  return Mix64(Mix64(Mix64(seed) ^ epoch) ^ record_id);
}

// A stream of 64-bit values: value i is Mix64(key + i * golden ratio), i.e. SplitMix64.
class Rng {
 public:
  explicit constexpr Rng(uint64_t key) : state_(key) {}
  constexpr uint64_t Next() {
    state_ += 0x9e3779b97f4a7c15ull;
    return Mix64(state_);
  }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [lo, hi] (inclusive); lo when hi < lo. Multiply-shift, bias < 2^-32.
  int64_t UniformInt(int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int64_t>(
                    static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * span) >> 64));
  }

 private:
  uint64_t state_;
};

}  // namespace sluice
