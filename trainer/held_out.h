// --eval-fraction: which records are held out of training for the per-epoch evaluation. A pure
// function of the record's key, so the split is the same in every epoch, on every rank, after a
// resume, and whatever the batching.
#pragma once

#include <cstdint>
#include <string_view>

namespace sluice::train {

// FNV-1a 64 of the key mapped to [0, 1); held out when below `fraction`.
inline bool IsHeldOut(std::string_view key, double fraction) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : key) h = (h ^ c) * 0x100000001b3ull;
  // FNV's low bits mix poorly; one splitmix64 finaliser round spreads them.
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  h ^= h >> 31;
  return static_cast<double>(h >> 11) * 0x1.0p-53 < fraction;
}

}  // namespace sluice::train
