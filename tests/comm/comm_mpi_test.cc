// The CPU communicator with 2-4 processes on this machine: each test starts mpi_comm_worker under
// mpirun and expects every rank to pass. Skips with a message where mpirun is not installed.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "";
  size_t start = 0;
  while (start <= p.size()) {
    const size_t end = p.find(':', start);
    const std::string dir =
        p.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const std::string full = (dir.empty() ? "." : dir) + "/" + name;
    if (access(full.c_str(), X_OK) == 0) return full;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

void RunRanks(int np) {
  const std::string mpirun = FindOnPath("mpirun");
  if (mpirun.empty())
    GTEST_SKIP() << "mpirun not found (apt-get install openmpi-bin libopenmpi-dev)";
  const char* worker = std::getenv("SLUICE_MPI_WORKER");
  ASSERT_NE(worker, nullptr) << "SLUICE_MPI_WORKER is set by tests/gpu/meson.build";
  // --timeout: a hang is a failure, never a stuck test run. --oversubscribe: more ranks than
  // this machine's cores. Root is allowed because CI containers run as root.
  const std::string cmd = mpirun + " --oversubscribe --allow-run-as-root --timeout 60 -np " +
                          std::to_string(np) + " " + worker + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) out.append(buf.data(), n);
  const int status = pclose(f);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << "\n" << out;
  for (int r = 0; r < np; ++r)
    EXPECT_NE(out.find("rank " + std::to_string(r) + " of " + std::to_string(np) + ": ok"),
              std::string::npos)
        << out;
}

TEST(MpiCommunicator, TwoRanks) { RunRanks(2); }
TEST(MpiCommunicator, ThreeRanks) { RunRanks(3); }
TEST(MpiCommunicator, FourRanks) { RunRanks(4); }

}  // namespace
