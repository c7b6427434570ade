// Helpers shared by the test suites.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::testing {

// A fresh directory under $TMPDIR, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& contents);

// What a command printed (stdout and stderr) and its exit code (-1: it did not exit normally).
struct ShellResult {
  int code = -1;
  std::string out;
};
// `cmd` through /bin/sh, stderr folded into stdout.
ShellResult RunShell(const std::string& cmd);

// A FIFO made at `path` for a test that gives it as an input, and a watchdog that keeps the
// test bounded in time when the code under test blocks in open() on it: after `seconds`, the
// watchdog opens the FIFO for writing, which releases such an open (the reader then sees an empty
// stream), and fired() turns true. A test asserts !fired(): the FIFO was refused, not waited on.
class FifoWatchdog {
 public:
  FifoWatchdog(const std::string& path, double seconds);
  ~FifoWatchdog();
  FifoWatchdog(const FifoWatchdog&) = delete;
  FifoWatchdog& operator=(const FifoWatchdog&) = delete;
  bool fired() const;

 private:
  struct State;
  State* state_;
};

// Deterministic pseudo-random bytes (splitmix64), so failures reproduce.
std::string RandomBytes(uint64_t seed, size_t n);

}  // namespace sluice::testing
