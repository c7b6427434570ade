#include "comm/thread_lane.h"

#include <utility>

namespace sluice::comm {

ThreadLane::ThreadLane(std::unique_ptr<Communicator> comm)
    : comm_(std::move(comm)), thread_([this] { Run(); }) {}

ThreadLane::~ThreadLane() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Status ThreadLane::Submit(float* data, size_t count) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_.ok()) return error_;
    queue_.push_back({data, count});
    ++submitted_;
  }
  cv_.notify_all();
  return Status::OK();
}

Status ThreadLane::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return completed_ == submitted_ || !error_.ok(); });
  return error_;
}

uint64_t ThreadLane::completed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return completed_;
}

void ThreadLane::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    // Finish what was submitted even when stopping: the peers' lanes expect the same collectives.
    if (queue_.empty()) return;
    const Item item = queue_.front();
    queue_.pop_front();
    lock.unlock();
    const Status st = comm_->AllReduceAverage(item.data, item.count);
    lock.lock();
    if (!st.ok() && error_.ok()) error_ = st;
    ++completed_;
    cv_.notify_all();
  }
}

}  // namespace sluice::comm
