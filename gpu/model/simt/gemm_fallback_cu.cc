#include "gpu/model/gemm_fallback.cu"  // host C++ for the SIMT build (meson.build here)
