// SLUICE_GPU_UNAVAILABLE(reason): what a GPU test does where it finds no usable device. A skip by
// default, so a machine without a GPU passes and says why; a failure naming the reason when
// SLUICE_REQUIRE_GPU=1 is set, so that on a GPU machine a driver mismatch or a runtime that sees
// no device (cudaGetDeviceCount's error) turns the run red instead of quietly green
// (tools/gpu-session sets it; docs/gpu.md). Only in a function returning void (a test body,
// SetUp), as FAIL() and GTEST_SKIP() return.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace sluice::testing {

// SLUICE_REQUIRE_GPU is "1" (any other value, or none, leaves skips as skips).
inline bool GpuRequired() {
  const char* v = std::getenv("SLUICE_REQUIRE_GPU");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace sluice::testing

#define SLUICE_GPU_UNAVAILABLE(reason)                                                    \
  do {                                                                                    \
    const std::string _sluice_reason = (reason);                                          \
    if (::sluice::testing::GpuRequired())                                                 \
      FAIL() << "SLUICE_REQUIRE_GPU=1 and no usable GPU: " << _sluice_reason              \
             << " (HINT: check nvidia-smi and that the CUDA runtime matches the driver)"; \
    else GTEST_SKIP() << _sluice_reason;                                                  \
  } while (0)
