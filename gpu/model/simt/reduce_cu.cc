#include "gpu/model/reduce.cu"  // host C++ for the SIMT build (meson.build here)
