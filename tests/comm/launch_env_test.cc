// Rank, world and rendezvous from the launchers' environments.
#include "comm/launch_env.h"
#include "assert_ok.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace sluice::comm {
namespace {

Status Parse(const std::map<std::string, std::string>& env, LaunchEnv* out) {
  return ParseLaunchEnv(
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      out);
}

TEST(LaunchEnv, NoLauncherIsRankZeroOfOne) {
  LaunchEnv e;
  ASSERT_OK(Parse({}, &e));
  EXPECT_EQ(e.rank, 0);
  EXPECT_EQ(e.world, 1);
  EXPECT_EQ(e.launcher, "none");
}

TEST(LaunchEnv, TorchrunStyle) {
  LaunchEnv e;
  ASSERT_OK(Parse({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"},
                   {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}}, &e));
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.world, 8);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.master_addr, "10.0.0.1");
  EXPECT_EQ(e.master_port, 29500);
  EXPECT_EQ(e.launcher, "torchrun");
}

TEST(LaunchEnv, OpenMpiMpichAndSlurm) {
  LaunchEnv e;
  ASSERT_OK(Parse({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                   {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}}, &e));
  EXPECT_EQ(e.launcher, "mpirun");
  EXPECT_EQ(e.rank, 2);
  EXPECT_EQ(e.local_rank, 2);
  ASSERT_OK(Parse({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}}, &e));
  EXPECT_EQ(e.launcher, "mpich");
  ASSERT_OK(Parse({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "3"}}, &e));
  EXPECT_EQ(e.launcher, "srun");
  EXPECT_EQ(e.world, 16);
}

TEST(LaunchEnv, TorchrunVariablesWinOverTheMpiOnes) {
  LaunchEnv e;
  ASSERT_OK(Parse({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "0"},
                   {"OMPI_COMM_WORLD_SIZE", "2"}}, &e));
  EXPECT_EQ(e.launcher, "torchrun");
  EXPECT_EQ(e.rank, 1);
}

TEST(LaunchEnv, BadValuesNameTheVariable) {
  LaunchEnv e;
  Status st = Parse({{"RANK", "x"}, {"WORLD_SIZE", "2"}}, &e);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("RANK='x'"), std::string::npos) << st.message();
  st = Parse({{"RANK", "2"}, {"WORLD_SIZE", "2"}}, &e);
  EXPECT_NE(st.message().find("outside"), std::string::npos) << st.message();
  st = Parse({{"RANK", "0"}}, &e);
  EXPECT_NE(st.message().find("WORLD_SIZE is unset"), std::string::npos) << st.message();
  st = Parse({{"RANK", "0"}, {"WORLD_SIZE", "0"}}, &e);
  EXPECT_TRUE(st.IsInvalidArgument());
  st = Parse({{"MASTER_PORT", "70000"}}, &e);
  EXPECT_NE(st.message().find("MASTER_PORT"), std::string::npos);
}

}  // namespace
}  // namespace sluice::comm
