// SKIP_WITHOUT_GPU(): the first statement of every test of suite 'gpu'. cudaGetDeviceCount's
// error (e.g. "CUDA driver version is insufficient ... = 35") becomes the skip message, so a
// machine without a GPU passes and says why.
#pragma once

#include <gtest/gtest.h>

#include "gpu/device.h"

#define SKIP_WITHOUT_GPU()                                            \
  do {                                                                \
    int _sluice_devices = 0;                                          \
    const ::sluice::Status _sluice_st = ::sluice::gpu::ProbeDevices(&_sluice_devices); \
    if (!_sluice_st.ok()) GTEST_SKIP() << _sluice_st.message();       \
  } while (0)
