// A one-line progress meter on stderr: items/s, MB/s, ETA. Silent when stderr
// is not a terminal (logs and CI stay clean) or when disabled.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace sluice::shardify {

class Progress {
 public:
  // total = 0 when unknown (no ETA then).
  Progress(std::string what, uint64_t total, bool enabled);
  ~Progress();
  // Redraws at most a few times a second; cheap to call per item.
  void Update(uint64_t done, uint64_t bytes);
  void Finish();  // clears the line

 private:
  std::string what_;
  uint64_t total_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

std::string FormatDuration(double seconds);  // "1h02m", "3m07s", "12.3s"

}  // namespace sluice::shardify
