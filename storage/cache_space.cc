#include "storage/cache_space.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <system_error>

#include "storage/cache_entry.h"

namespace sluice::storage {
namespace fs = std::filesystem;

void CacheSpace::Sweep(const std::set<std::string>& keep) {
  std::lock_guard<std::mutex> lock(mu_);
  keep_ = keep;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    if (!keep_.count(it->path().filename().string())) fs::remove_all(it->path(), ec);
  }
  RescanLocked();
  full_ = false;
}

void CacheSpace::RescanLocked() {
  // Another process's writes are seen here only: between scans each process counts its own. A
  // rescan after every budget/32 bytes this process wrote bounds the overshoot of P processes
  // filling one dataset's directory at once to about P * budget / 32 (docs/remote.md).
  uint64_t used = 0;
  const auto now = fs::file_time_type::clock::now();
  std::error_code ec;
  for (const std::string& sub : keep_) {
    for (fs::directory_iterator it(dir_ + "/" + sub, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      uint64_t offset = 0, n = 0;
      if (IsCacheTempName(name)) {
        std::error_code tec;
        const auto mtime = fs::last_write_time(it->path(), tec);
        if (!tec && now - mtime > std::chrono::seconds(kStaleTempSeconds))
          fs::remove(it->path(), tec);
      } else if (ParseCacheEntryName(name, &offset, &n)) {
        used += n + kCacheEntryOverhead;
      }
    }
    ec.clear();
  }
  used_ = used;
  since_scan_ = 0;
}

bool CacheSpace::Reserve(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (budget_ == 0) {
    used_ += bytes;
    return true;
  }
  if (full_) return false;  // kept full: no rescans once the budget is reached
  if (since_scan_ >= budget_ / 32) RescanLocked();
  if (used_ + bytes > budget_) {
    full_ = true;
    return false;
  }
  used_ += bytes;
  since_scan_ += bytes;
  return true;
}

bool CacheSpace::ScanDue() const {
  std::lock_guard<std::mutex> lock(mu_);
  return budget_ > 0 && !full_ && since_scan_ >= budget_ / 32;
}

void CacheSpace::Release(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  used_ -= std::min(used_, bytes);
  full_ = false;
}

uint64_t CacheSpace::used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

}  // namespace sluice::storage
