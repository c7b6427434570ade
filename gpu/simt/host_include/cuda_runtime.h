// <cuda_runtime.h> for the SIMT build only: gpu/ sources include the CUDA runtime header, and
// under the host compiler this include directory (gpu/simt/host_include, given to gpu_simt_dep
// and never to nvcc) makes that resolve to the CPU device backend.
#pragma once

#include "gpu/simt/cuda_runtime_host.h"
