#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace sluice::shardify {

std::string FormatDuration(double s) {
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.1fs", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%dm%02ds", int(s) / 60, int(s) % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%dh%02dm", int(s) / 3600, (int(s) % 3600) / 60);
  }
  return buf;
}

Progress::Progress(std::string what, uint64_t total, bool enabled)
    : what_(std::move(what)), total_(total), enabled_(enabled && ::isatty(STDERR_FILENO)) {
  start_ = last_ = std::chrono::steady_clock::now();
}

Progress::~Progress() { Finish(); }

void Progress::Update(uint64_t done, uint64_t bytes) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(250) && done != total_) return;
  last_ = now;
  const double t = std::chrono::duration<double>(now - start_).count();
  const double rate = t > 0 ? done / t : 0;
  const double mbs = t > 0 ? bytes / t / 1e6 : 0;
  std::string eta = "?";
  if (total_ > 0 && rate > 0) eta = FormatDuration((total_ - std::min(done, total_)) / rate);
  if (total_ > 0) {
    std::fprintf(stderr, "\r%s %llu/%llu  %.1f/s  %.1f MB/s  ETA %s   ", what_.c_str(),
                 (unsigned long long)done, (unsigned long long)total_, rate, mbs, eta.c_str());
  } else {
    std::fprintf(stderr, "\r%s %llu  %.1f/s  %.1f MB/s   ", what_.c_str(), (unsigned long long)done,
                 rate, mbs);
  }
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::Finish() {
  if (drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
  }
}

}  // namespace sluice::shardify
