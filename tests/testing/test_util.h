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

// Deterministic pseudo-random bytes (splitmix64), so failures reproduce.
std::string RandomBytes(uint64_t seed, size_t n);

}  // namespace sluice::testing
