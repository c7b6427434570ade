// ThreadLane: a ReduceLane for host-memory communicators. One background thread takes submitted
// buckets in order and averages each with a blocking AllReduceAverage on its own communicator
// (a duplicate, so its collectives never interleave with the caller's on the original).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/communicator.h"

namespace sluice::comm {

class ThreadLane : public ReduceLane {
 public:
  // `comm`: host memory, used only by the lane's thread from now on.
  explicit ThreadLane(std::unique_ptr<Communicator> comm);
  ~ThreadLane() override;

  Status Submit(float* data, size_t count) override;
  Status Wait() override;

  // Submissions completed so far (all time), for tests: they ran in submission order.
  uint64_t completed() const;

 private:
  struct Item {
    float* data;
    size_t count;
  };
  void Run();

  std::unique_ptr<Communicator> comm_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  uint64_t submitted_ = 0;
  uint64_t completed_ = 0;
  Status error_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace sluice::comm
