// RunPipe: a command's stdout, or a reason with its stderr; bounded by the time limit.
#include "importers/pipe.h"

#include <gtest/gtest.h>

#include <chrono>

#include "assert_ok.h"

namespace sluice::importers {
namespace {

TEST(RunPipe, ReturnsStdout) {
  std::string out;
  ASSERT_OK(RunPipe("u1", "printf 'RIFF'; printf ignored >&2", 10, &out));
  EXPECT_EQ(out, "RIFF");
}

TEST(RunPipe, FailureGivesExitStatusAndStderr) {
  std::string out;
  Status st = RunPipe("u1", "echo partial; echo 'sox FAIL: no such file' >&2; exit 3", 10, &out);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_EQ(st.message(),
            "u1: command \"echo partial; echo 'sox FAIL: no such file' >&2; exit 3\" exited with "
            "status 3; stderr: sox FAIL: no such file");
  EXPECT_EQ(out, "");
}

TEST(RunPipe, EmptyOutputIsAFailure) {
  std::string out;
  Status st = RunPipe("u1", "true", 10, &out);
  EXPECT_NE(st.message().find("wrote no audio to stdout; no stderr"), std::string::npos)
      << st.ToString();
}

TEST(RunPipe, TimeoutKillsTheWholeGroup) {
  std::string out;
  const auto t0 = std::chrono::steady_clock::now();
  // The subshell holds stdout open: killing only sh would leave the read waiting.
  Status st = RunPipe("u1", "(sleep 30; echo late) | cat", 0.3, &out);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 10);
  EXPECT_NE(st.message().find("ran past the --pipe-timeout"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace sluice::importers
