// ShareWorkers: every share runs exactly once per Run, on its own thread, across many Runs and
// with fewer shares than workers.
#include "trainer/share_workers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

namespace sluice::train {
namespace {

TEST(ShareWorkers, EveryShareRunsOncePerRunOnItsOwnThread) {
  ShareWorkers workers(3);
  for (int run = 0; run < 200; ++run) {
    const int count = run % 5;  // 0 to 4 shares for 3 workers + the caller
    std::vector<std::atomic<int>> calls(4);
    std::vector<std::thread::id> ids(4);
    workers.Run(count, [&](int i) {
      calls[i].fetch_add(1);
      ids[i] = std::this_thread::get_id();
    });
    for (int i = 0; i < 4; ++i)
      ASSERT_EQ(calls[i].load(), i < count ? 1 : 0) << "run " << run << " share " << i;
    if (count > 0) {
      EXPECT_EQ(ids[0], std::this_thread::get_id());
    }
    std::set<std::thread::id> distinct(ids.begin(), ids.begin() + count);
    EXPECT_EQ(static_cast<int>(distinct.size()), count);
  }
}

TEST(ShareWorkers, WithoutWorkersTheCallerRunsShareZero) {
  ShareWorkers none(0);
  int calls = 0;
  none.Run(1, [&](int i) { calls += i == 0; });
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace sluice::train
