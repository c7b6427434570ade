#include "gpu/model/positions.cu"  // host C++ for the SIMT build (meson.build here)
