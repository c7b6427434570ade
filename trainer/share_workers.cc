#include "trainer/share_workers.h"

#include <algorithm>

namespace sluice::train {

ShareWorkers::ShareWorkers(int workers) {
  for (int i = 1; i <= workers; ++i) threads_.emplace_back([this, i] { Loop(i); });
}

ShareWorkers::~ShareWorkers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ShareWorkers::Loop(int share) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    start_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    if (share >= count_) continue;  // no rows for this share this time
    lock.unlock();
    (*fn_)(share);
    lock.lock();
    if (--pending_ == 0) done_.notify_one();
  }
}

void ShareWorkers::Run(int count, const std::function<void(int)>& fn) {
  count = std::min(count, static_cast<int>(threads_.size()) + 1);
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    count_ = count;
    pending_ = std::max(0, count - 1);
    ++generation_;
  }
  start_.notify_all();
  if (count > 0) fn(0);
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return pending_ == 0; });
  fn_ = nullptr;
}

}  // namespace sluice::train
