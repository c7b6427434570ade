// <nccl.h> for the SIMT build only: gpu/nccl_communicator.cc includes NCCL's header, and under
// the host compiler this include directory (gpu/simt/host_include, given to gpu_simt_dep and
// never to nvcc) makes that resolve to the SIMT layer's in-process NCCL.
#pragma once

#include "gpu/simt/nccl_host.h"
