#include "trainer/device_backend.h"

namespace sluice::train {

// The builds of cuda_engine.cc that are absent from this sluice-train (trainer/meson.build).
#ifndef SLUICE_HAVE_GPU_MODEL
const DeviceBackend* CudaBackend() { return nullptr; }
#endif
#ifndef SLUICE_HAVE_SIMT_MODEL
const DeviceBackend* SimtBackend() { return nullptr; }
#endif

const DeviceBackend* FindDeviceBackend(const std::string& device) {
  if (device == "cuda") return CudaBackend();
  if (device == "simt") return SimtBackend();
  return nullptr;
}

}  // namespace sluice::train
