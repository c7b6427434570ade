// What the end-to-end tests of sluice-train share: the environment meson sets (SLUICE_TRAIN,
// SHARDIFY, MAKE_SAMPLE_CORPUS), running a command line, and reading its --json lines.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace sluice::train_test {

inline std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

using Result = testing::ShellResult;
// `cmd` through the shell, stderr folded into stdout; code -1 when it did not exit normally.
inline Result Shell(const std::string& cmd) { return testing::RunShell(cmd); }

// Every line of `out` that starts with '{', parsed.
inline std::vector<nlohmann::json> JsonLines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(start, end - start);
    if (!line.empty() && line[0] == '{') lines.push_back(nlohmann::json::parse(line));
    start = end + 1;
  }
  return lines;
}

// The loss of step `step` from the text step lines ("step     1/3  epoch 0  loss 152.1234 ..."),
// NaN when absent.
inline double StepLoss(const std::string& out, int step) {
  const std::regex re("step +" + std::to_string(step) +
                      "/[0-9]+ +epoch [0-9]+ +loss ([-0-9.einf]+)");
  std::smatch m;
  if (!std::regex_search(out, m, re)) return NAN;
  return std::stod(m[1]);
}

// Checkpoints move both ways between the CPU engine and `device` (the device suites'
// shared case): `train(device, args)` runs sluice-train on the suite's dataset and `dir` holds the
// checkpoints. --steps is part of the run, so the checkpoint moved is step 2's of a 3-step run.
inline void ExpectCheckpointsMoveBetweenCpuAnd(
    const std::string& device,
    const std::function<Result(const std::string&, const std::string&)>& train,
    const std::string& dir) {
  const std::string every = "--steps 3 --checkpoint-every 2 --checkpoint ";
  for (const auto& [from, to] : {std::pair{device, std::string("cpu")}, {"cpu", device}}) {
    ASSERT_EQ(train(from, every + dir + "/" + from + "-{step}.ckpt").code, 0) << from;
    const Result r = train(to, "--steps 3 --resume " + dir + "/" + from + "-2.ckpt");
    EXPECT_EQ(r.code, 0) << from << " -> " << to << "\n" << r.out;
    EXPECT_NE(r.out.find("resumed at step 2"), std::string::npos) << r.out;
  }
}

// `count` espeak-ng clips made by tools/make-sample-corpus into `corpus`, shardified into `out`
// with a character tokenizer. False (and the failing command's output in *log) on failure.
// SLUICE_TEST_CORPUS names a corpus made beforehand instead (`count` clips, from
// tools/gpu-bundle), for machines without espeak-ng such as a borrowed GPU machine.
inline bool MakeCharDataset(const std::string& corpus, const std::string& out, int count,
                            std::string* log) {
  const std::string made = Env("SLUICE_TEST_CORPUS");
  Result r;
  r.code = 0;
  if (made.empty())
    r = Shell(Env("MAKE_SAMPLE_CORPUS") + " --out " + corpus + " --count " + std::to_string(count) +
              " --jobs 2");
  const std::string manifest = (made.empty() ? corpus : made) + "/manifest.jsonl";
  if (!made.empty()) {  // another count would silently change what the test trains on
    r = Shell("test \"$(wc -l < " + manifest + ")\" -eq " + std::to_string(count));
    if (r.code != 0)
      r.out = "SLUICE_TEST_CORPUS " + made + ": the test needs " + std::to_string(count) + " clips";
  }
  if (r.code == 0)
    r = Shell(Env("SHARDIFY") + " audio -m " + manifest + " -o " + out + " --tokenizer char");
  *log = r.out;
  return r.code == 0;
}

// `in` (a JSONL manifest) copied to `out` plus one line, id "too-long", that reuses the first
// clip's audio with its transcript ten times over (300+ characters): the tiny model's ~75
// output frames after subsampling cannot align it.
inline void WriteWithTooLong(const std::string& in_path, const std::string& out_path) {
  std::ifstream in(in_path);
  std::ofstream out(out_path);
  std::string line, first;
  while (std::getline(in, line)) {
    if (first.empty()) first = line;
    out << line << "\n";
  }
  nlohmann::json j = nlohmann::json::parse(first);
  std::string text;
  for (int i = 0; i < 10; ++i) text += (i ? " " : "") + j["text"].get<std::string>();
  j["text"] = text;
  j["id"] = "too-long";
  out << j.dump() << "\n";
}

}  // namespace sluice::train_test
