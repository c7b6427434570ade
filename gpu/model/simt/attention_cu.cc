#include "gpu/model/attention.cu"  // host C++ for the SIMT build (meson.build here)
