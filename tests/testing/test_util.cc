#include "test_util.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

namespace sluice::testing {

struct FifoWatchdog::State {
  std::string path;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::atomic<bool> fired{false};
  std::thread thread;
};

FifoWatchdog::FifoWatchdog(const std::string& path, double seconds) : state_(new State) {
  state_->path = path;
  if (::mkfifo(path.c_str(), 0600) != 0) ADD_FAILURE() << "mkfifo " << path << " failed";
  state_->thread = std::thread([s = state_, seconds] {
    std::unique_lock<std::mutex> lock(s->mu);
    if (s->cv.wait_for(lock, std::chrono::duration<double>(seconds), [s] { return s->done; }))
      return;
    // Still running: release an open() blocked on the FIFO, over and over until the test ends
    // (the code under test may open it more than once).
    s->fired = true;
    while (!s->done) {
      const int fd = ::open(s->path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) ::close(fd);
      s->cv.wait_for(lock, std::chrono::milliseconds(50), [s] { return s->done; });
    }
  });
}

FifoWatchdog::~FifoWatchdog() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->done = true;
  }
  state_->cv.notify_all();
  state_->thread.join();
  delete state_;
}

bool FifoWatchdog::fired() const { return state_->fired.load(); }

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/sluice-test-XXXXXX";
  char* p = mkdtemp(tmpl.data());
  if (p == nullptr) ADD_FAILURE() << "mkdtemp failed for " << tmpl;
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
}

std::string RandomBytes(uint64_t seed, size_t n) {
  std::string s(n, '\0');
  uint64_t x = seed;
  for (size_t i = 0; i < n; ++i) {
    x += 0x9e3779b97f4a7c15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    s[i] = static_cast<char>((z ^ (z >> 31)) & 0xff);
  }
  return s;
}

ShellResult RunShell(const std::string& cmd) {
  ShellResult r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace sluice::testing
