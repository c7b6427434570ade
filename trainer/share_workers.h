// ShareWorkers: persistent threads for the replicas' shares of each step. Starting threads per
// step costs tens of microseconds each, a visible share of a tiny model's step; these threads live
// as long as the Replicas and sleep on a condition variable between steps.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sluice::train {

class ShareWorkers {
 public:
  // Threads for shares 1..workers (share 0 runs on the caller's thread).
  explicit ShareWorkers(int workers);
  ~ShareWorkers();  // stops and joins the threads
  ShareWorkers(const ShareWorkers&) = delete;
  ShareWorkers& operator=(const ShareWorkers&) = delete;

  // Runs fn(i) for every i in [0, count), i = 0 on this thread and i >= 1 on worker i; returns
  // once all have returned. count <= workers + 1. Not reentrant: one Run at a time.
  void Run(int count, const std::function<void(int)>& fn);

 private:
  void Loop(int share);

  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(int)>* fn_ = nullptr;  // the running job, valid during Run
  int count_ = 0;
  int pending_ = 0;          // workers still running the current job
  uint64_t generation_ = 0;  // bumped per Run: a worker runs each generation once
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace sluice::train
