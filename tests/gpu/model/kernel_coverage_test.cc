// Every kernel of gpu/model/ runs in this suite, checked on the SIMT build only: the
// SIMT runtime counts launches by kernel name (sluice::simt::LaunchCounts), and the kernels are
// the `__global__ void Name` definitions of gpu/model's sources, read at run time, so a kernel
// added without a test fails here. After the last test a global environment compares the two
// sets in both directions (a launched name the scan missed fails too) and prints kernel -> tests,
// the table of docs/gpu.md. It checks only when every test of the binary ran (no filter, no
// shard): a partial run proves nothing about coverage.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/simt/runtime.h"

#ifndef SLUICE_GPU_MODEL_SOURCE_DIR
#error "tests/gpu/model/meson.build defines SLUICE_GPU_MODEL_SOURCE_DIR (gpu/model's sources)"
#endif

namespace {

// "ColumnPartialKernel<F>" and "internal::Foo" are launches of ColumnPartialKernel and Foo.
std::string KernelName(const std::string& launched) {
  std::string name = launched.substr(0, launched.find('<'));
  const size_t colon = name.rfind("::");
  if (colon != std::string::npos) name = name.substr(colon + 2);
  while (!name.empty() && name.back() == ' ') name.pop_back();
  return name;
}

// The name after each `__global__ [__launch_bounds__(...)] void` in `text` (a plain scan:
// std::regex draws GCC 12 -Wmaybe-uninitialized false positives in the sanitizer build).
std::vector<std::string> KernelDefinitions(const std::string& text) {
  std::vector<std::string> names;
  auto skip_space = [&](size_t p) {
    while (p < text.size() && std::isspace(static_cast<unsigned char>(text[p]))) ++p;
    return p;
  };
  auto word_at = [&](size_t p, const std::string& w) { return text.compare(p, w.size(), w) == 0; };
  for (size_t at = text.find("__global__"); at != std::string::npos;
       at = text.find("__global__", at + 1)) {
    size_t p = skip_space(at + 10);
    if (word_at(p, "__launch_bounds__")) {
      p = text.find(')', p);
      if (p == std::string::npos) break;
      p = skip_space(p + 1);
    }
    if (!word_at(p, "void") || p + 4 >= text.size() ||
        !std::isspace(static_cast<unsigned char>(text[p + 4]))) {
      continue;
    }
    p = skip_space(p + 4);
    size_t e = p;
    while (e < text.size() && (std::isalnum(static_cast<unsigned char>(text[e])) || text[e] == '_'))
      ++e;
    if (e > p) names.push_back(text.substr(p, e - p));
  }
  return names;
}

// kernel name -> the file that defines it.
std::map<std::string, std::string> KernelsInSources(const std::filesystem::path& dir) {
  std::map<std::string, std::string> kernels;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cu" && ext != ".cuh") continue;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const std::string& name : KernelDefinitions(text)) {
      kernels[name] = entry.path().filename().string();
    }
  }
  return kernels;
}

// Kernel -> the tests during which it was launched.
std::map<std::string, std::set<std::string>>& KernelTests() {
  static std::map<std::string, std::set<std::string>> tests;
  return tests;
}

class LaunchRecorder : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override { before_ = sluice::simt::LaunchCounts(); }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    const std::string test = std::string(info.test_suite_name()) + "." + info.name();
    for (const auto& [name, count] : sluice::simt::LaunchCounts()) {
      const auto prev = before_.find(name);
      if (prev == before_.end() || prev->second < count)
        KernelTests()[KernelName(name)].insert(test);
    }
  }
  std::map<std::string, uint64_t> before_;
};

class CoverageCheck : public ::testing::Environment {
  void TearDown() override {
    const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
    if (unit.test_to_run_count() != unit.total_test_count()) {
      std::printf("kernel coverage: not checked, %d of %d tests ran\n", unit.test_to_run_count(),
                  unit.total_test_count());
      return;
    }
    const std::map<std::string, std::string> kernels =
        KernelsInSources(SLUICE_GPU_MODEL_SOURCE_DIR);
    ASSERT_GT(kernels.size(), 0u) << "no __global__ kernel found in " SLUICE_GPU_MODEL_SOURCE_DIR;
    std::ostringstream table;
    for (const auto& [name, file] : kernels) {
      const auto it = KernelTests().find(name);
      if (it == KernelTests().end()) {
        ADD_FAILURE() << "kernel " << name << " (gpu/model/" << file
                      << ") is never launched by any test of this suite";
        continue;
      }
      table << "| " << name << " | " << file << " |";
      for (const std::string& test : it->second) table << " " << test;
      table << " |\n";
    }
    for (const auto& [name, tests] : KernelTests()) {
      EXPECT_TRUE(kernels.count(name))
          << "kernel " << name << " was launched (by " << *tests.begin()
          << ") but the scan of gpu/model's sources does not find its definition";
    }
    std::printf("kernel coverage: %zu kernels of gpu/model, each launched by:\n%s", kernels.size(),
                table.str().c_str());
  }
};

// Registered before main runs the tests (gtest_main calls InitGoogleTest first, which keeps both).
const bool kRegistered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new LaunchRecorder);
  ::testing::AddGlobalTestEnvironment(new CoverageCheck);
  return true;
}();

}  // namespace
