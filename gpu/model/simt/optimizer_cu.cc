#include "gpu/model/optimizer.cu"  // host C++ for the SIMT build (meson.build here)
