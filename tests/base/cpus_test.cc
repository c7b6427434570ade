// UsableCores() and its parsers: cgroup files are faked in a temporary tree,
// so the limits are tested without a real cgroup.
#include "base/cpus.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <filesystem>
#include <thread>

#include "test_util.h"

namespace sluice {
namespace {
namespace fs = std::filesystem;

TEST(CpusTest, CpuMaxGivesQuotaOverPeriod) {
  EXPECT_DOUBLE_EQ(ParseCpuMax("200000 100000\n"), 2.0);
  EXPECT_DOUBLE_EQ(ParseCpuMax("150000 100000"), 1.5);
  EXPECT_DOUBLE_EQ(ParseCpuMax("50000"), 0.5);  // the default period
  EXPECT_EQ(ParseCpuMax("max 100000\n"), 0);
  EXPECT_EQ(ParseCpuMax(""), 0);
  EXPECT_EQ(ParseCpuMax("garbage 100000"), 0);
  EXPECT_EQ(ParseCpuMax("-5 100000"), 0);
}

TEST(CpusTest, CfsQuotaMinusOneIsNoLimit) {
  EXPECT_DOUBLE_EQ(ParseCfsQuota("300000\n", "100000\n"), 3.0);
  EXPECT_EQ(ParseCfsQuota("-1\n", "100000\n"), 0);
  EXPECT_EQ(ParseCfsQuota("", ""), 0);
}

TEST(CpusTest, LimitsCombineToTheTightestRoundedUp) {
  EXPECT_EQ(CombineCoreLimits(8, 0), 8);
  EXPECT_EQ(CombineCoreLimits(8, 2.0), 2);
  EXPECT_EQ(CombineCoreLimits(8, 1.5), 2);
  EXPECT_EQ(CombineCoreLimits(8, 0.2), 1);
  EXPECT_EQ(CombineCoreLimits(2, 16), 2);
  EXPECT_EQ(CombineCoreLimits(0, 0), 1);
}

TEST(CpusTest, CgroupV2LimitOfAnAncestorBinds) {
  testing::TempDir root;
  fs::create_directories(root.Join("job/step/task"));
  testing::WriteFile(root.Join("cpu.max"), "max 100000\n");
  testing::WriteFile(root.Join("job/cpu.max"), "300000 100000\n");
  testing::WriteFile(root.Join("job/step/cpu.max"), "max 100000\n");
  EXPECT_DOUBLE_EQ(CgroupCpuLimit("0::/job/step/task\n", root.path()), 3.0);
  testing::WriteFile(root.Join("job/step/task/cpu.max"), "100000 100000\n");
  EXPECT_DOUBLE_EQ(CgroupCpuLimit("0::/job/step/task\n", root.path()), 1.0);
  EXPECT_EQ(CgroupCpuLimit("0::/elsewhere\n", root.path()), 0);
}

TEST(CpusTest, CgroupV1QuotaIsFoundUnderTheCpuController) {
  testing::TempDir root;
  fs::create_directories(root.Join("cpu,cpuacct/slurm/uid_0/job_7"));
  testing::WriteFile(root.Join("cpu,cpuacct/slurm/uid_0/job_7/cpu.cfs_quota_us"), "200000\n");
  testing::WriteFile(root.Join("cpu,cpuacct/slurm/uid_0/job_7/cpu.cfs_period_us"), "100000\n");
  const std::string proc = "12:memory:/slurm/uid_0/job_7\n4:cpu,cpuacct:/slurm/uid_0/job_7\n";
  EXPECT_DOUBLE_EQ(CgroupCpuLimit(proc, root.path()), 2.0);
  // A controller list without "cpu" is not a CPU limit.
  EXPECT_EQ(CgroupCpuLimit("12:memory:/slurm/uid_0/job_7\n", root.path()), 0);
}

TEST(CpusTest, UsableCoresIsWithinTheHostsCores) {
  const int n = UsableCores();
  EXPECT_GE(n, 1);
  EXPECT_LE(n, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

TEST(CpusTest, UsableCoresFollowsTheAffinityMask) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const int n = UsableCores();
  ASSERT_EQ(sched_setaffinity(0, sizeof saved, &saved), 0);
  EXPECT_EQ(n, 1);
}

}  // namespace
}  // namespace sluice
