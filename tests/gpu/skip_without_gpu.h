// SKIP_WITHOUT_GPU(): the first statement of every test of suite 'gpu'. cudaGetDeviceCount's
// error (e.g. "CUDA driver version is insufficient ... = 35") becomes the skip message, so a
// machine without a GPU passes and says why; with SLUICE_REQUIRE_GPU=1 it is a failure instead
// (tests/testing/require_gpu.h). On the SIMT build (SLUICE_SIMT_DEVICE, from
// gpu_simt_dep) the CPU device backend is the device: the tests run, and a failed probe there is a
// failure, never a skip.
#pragma once

#include <gtest/gtest.h>

#include "gpu/device.h"
#include "require_gpu.h"

#if defined(SLUICE_SIMT_DEVICE)
#define SLUICE_NO_GPU_ACTION(reason) FAIL() << "the SIMT device backend has no device: " << (reason)
#else
#define SLUICE_NO_GPU_ACTION(reason) SLUICE_GPU_UNAVAILABLE(reason)
#endif

#define SKIP_WITHOUT_GPU()                                                             \
  do {                                                                                 \
    int _sluice_devices = 0;                                                           \
    const ::sluice::Status _sluice_st = ::sluice::gpu::ProbeDevices(&_sluice_devices); \
    if (!_sluice_st.ok()) SLUICE_NO_GPU_ACTION(_sluice_st.message());                  \
  } while (0)
